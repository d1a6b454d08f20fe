/**
 * Zep's wire answers rendered from the retrieval core's payload (src/backends/zep/native.ts made the call and
 * kept each result's original item).
 *
 * A kept item is the original object (every Zep field: `uuid`, `name`, `created_at`, `source_node_uuid`, …) with
 * its text field (`fact`, `content` or `summary`) replaced by the shaped text and `score` by the calibrated score
 * (src/backends/zep/score.ts: the scale `minScore` read; a cross-encoder's `relevance` stays as Zep sent it);
 * its free-text side fields are redacted when the policy redacts. A dropped item disappears from its list; within
 * a list, items follow the policy's order. The `context` block (redacted, fitted to the budget) and every other
 * top-level field of Zep's answer (`response`, …) are kept.
 */
import { ZEP_LIST_NAMES, ZEP_LISTS, type ZepList } from "../../backends/zep/native";
import type { RetrievalPayload } from "../../retrieval/payload";

/** A search answer from a payload (see the top of this file). */
export function searchAnswer(payload: RetrievalPayload): Record<string, unknown> {
  const native = payload.native;
  const body: Record<string, unknown> = { ...native?.echo };
  // Fresh lists: the payload (and its echo) may be the cache's own object, shared by every later hit.
  for (const list of ZEP_LIST_NAMES) if (Array.isArray(body[list])) body[list] = [];
  for (const memory of payload.memories) {
    const source = native?.sources[memory.id];
    const list = ZEP_LIST_NAMES.find((l) => l === source?.list);
    if (source === undefined || list === undefined) continue;
    const items = Array.isArray(body[list]) ? (body[list] as unknown[]) : [];
    items.push({ ...source.item, [ZEP_LISTS[list].text]: memory.content, score: memory.score });
    body[list] = items;
  }
  if (native?.context !== undefined) body.context = native.context;
  return body;
}

/** The answer when a fallback serves nothing: the requested scope's list, empty (every list for `auto`). */
export function emptySearchAnswer(scope: unknown): Record<string, unknown> {
  const list = ZEP_LIST_NAMES.find((l) => l === scope);
  if (scope === "auto") return Object.fromEntries(ZEP_LIST_NAMES.map((l: ZepList) => [l, []]));
  return { [list ?? "edges"]: [] };
}

/** A thread context answer from a payload: Zep's fields with `context` redacted and fitted to the budget. */
export function contextAnswer(payload: RetrievalPayload): Record<string, unknown> {
  const native = payload.native;
  return native?.context === undefined ? { ...native?.echo } : { ...native.echo, context: native.context };
}
