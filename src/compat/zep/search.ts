/**
 * `POST /api/v2/graph/search` answered in Zep's own shape with the tenant's policy applied (CONTRACT §7).
 *
 * ## Request
 * The caller's body goes to the tenant's Zep unchanged except for `limit`. Zep's `limit` (default 10, max 50)
 * becomes the policy's `topK` for this request (see ../policy.ts `withTopK`), and Zep is asked for
 * min(limit × `retrieval.overfetch`, 50) results, so what threshold and dedup remove is refilled, as on
 * /v1/retrieve. A `limit` that is not an integer from 1 to 50 is sent as it is, for Zep to refuse (its 400
 * comes back to the SDK unchanged).
 *
 * ## Shaping
 * Every result list of the answer is shaped: `edges` (text `fact`), `episodes` (`content`), `nodes`,
 * `thread_summaries` and `observations` (`summary`). Each item becomes a candidate whose id is its `uuid` and
 * whose score is normalized as the Zep adapter does (src/backends/zep/map.ts): with `reranker: cross_encoder`
 * Zep's sigmoid score clamped to [0,1]; with any other reranker (default `rrf`) 1 − rank/L by position in
 * its list. The policy then runs as on /v1/retrieve: redaction, threshold on the normalized score, dedup
 * (over all lists together), the request's `limit` as topK, interleaving, clipping, the token budget.
 *
 * ## Mapping back
 * The original items are kept by `uuid`. An item the policy dropped disappears from its list; a kept item is
 * the original object (every Zep field: `uuid`, `name`, `created_at`, `source_node_uuid`, …) with its text
 * field replaced by the shaped text and `score` by the normalized score; its free-text side fields (`name`,
 * `source/target_node_name`, `attributes`, `metadata`) are redacted too when the policy redacts. Within a
 * list, items follow the policy's order. A `context` string in the answer gets redaction and the budget
 * (./text.ts); every other top-level field (`response`, …) is kept.
 *
 * Items without a `uuid` or with a blank text cannot be shaped and are left out. An item without a valid
 * timestamp is shaped as of 1970-01-01 (it only loses recency in interleaving). A 200 answer that is not an
 * object, or has a result list that is not a list of objects, is treated as Zep being unavailable.
 */
import { normalizeScores, toIsoTimestamp } from "../../backends/zep/map";
import type { PipelineResult } from "../../pipeline";
import { type Candidate, type MemoryType, ROLES, type Role } from "../../pipeline/types";
import type { CompiledPolicy } from "../../policy/compile";
import { shape } from "../policy";
import { isRecord } from "../upstream";
import { redactSideFields, shapeContext } from "./text";

export const ZEP_MAX_LIMIT = 50;
export const ZEP_DEFAULT_LIMIT = 10;

interface ListSpec {
  text: string;
  type: MemoryType;
  times: readonly string[];
}

const LISTS = {
  edges: { text: "fact", type: "fact", times: ["valid_at", "created_at"] },
  episodes: { text: "content", type: "message", times: ["created_at"] },
  nodes: { text: "summary", type: "summary", times: ["created_at"] },
  thread_summaries: {
    text: "summary",
    type: "summary",
    times: ["last_summarized_episode_valid_at", "last_summarized_at", "created_at"],
  },
  observations: { text: "summary", type: "summary", times: ["latest_evidence_at", "created_at"] },
} as const satisfies Record<string, ListSpec>;
export type ZepList = keyof typeof LISTS;
const LIST_NAMES = Object.keys(LISTS) as ZepList[];

export interface SearchPlan {
  /** The body sent to Zep. */
  upstreamBody: Record<string, unknown>;
  topK: number;
  /** The `limit` sent (L of the rank normalization). */
  fetchLimit: number;
  crossEncoder: boolean;
  /** For the pipeline's collection name: `user_id`, else `graph_id`. */
  userId: string;
  query: string;
  /** The list Zep fills for the request's `scope` (the one an empty fallback answer carries). */
  list: ZepList;
}

export function planSearch(body: Record<string, unknown>, compiled: CompiledPolicy): SearchPlan {
  const { limit } = body;
  const scope = typeof body.scope === "string" ? body.scope : "edges";
  const list = LIST_NAMES.find((l) => l === scope) ?? "edges";
  const owner = typeof body.user_id === "string" ? body.user_id : body.graph_id;
  const common = {
    crossEncoder: body.reranker === "cross_encoder",
    userId: typeof owner === "string" && owner !== "" ? owner : "unknown",
    query: typeof body.query === "string" ? body.query : "",
    list,
  };
  const asked = limit === undefined ? ZEP_DEFAULT_LIMIT : limit;
  if (typeof asked !== "number" || !Number.isInteger(asked) || asked < 1 || asked > ZEP_MAX_LIMIT) {
    return { ...common, upstreamBody: body, topK: ZEP_DEFAULT_LIMIT, fetchLimit: ZEP_DEFAULT_LIMIT };
  }
  const fetchLimit = Math.min(asked * compiled.policy.retrieval.overfetch, ZEP_MAX_LIMIT);
  return { ...common, upstreamBody: { ...body, limit: fetchLimit }, topK: asked, fetchLimit };
}

/** The answer to send when a fallback applies: the requested scope's list, empty. */
export function emptySearchAnswer(plan: SearchPlan): Record<string, unknown> {
  return { [plan.list]: [] };
}

const num = (v: unknown): number | undefined => (typeof v === "number" && Number.isFinite(v) ? v : undefined);

function roleOf(item: Record<string, unknown>): Role | undefined {
  for (const v of [item.role_type, item.role]) {
    const role = ROLES.find((r) => r === v);
    if (role !== undefined) return role;
  }
  return undefined;
}

interface Original {
  list: ZepList;
  item: Record<string, unknown>;
}

function listItems(json: Record<string, unknown>, list: ZepList): Array<Record<string, unknown>> | undefined {
  const value = json[list];
  if (value == null) return [];
  return Array.isArray(value) && value.every(isRecord) ? value : undefined;
}

/** Shapes a Zep search answer; undefined when it is malformed (see the top of this file). */
export function shapeSearch(
  json: unknown,
  plan: SearchPlan,
  compiled: CompiledPolicy,
): { body: Record<string, unknown>; result: PipelineResult } | undefined {
  if (!isRecord(json)) return undefined;
  const originals = new Map<string, Original>();
  const candidates: Candidate[] = [];
  for (const list of LIST_NAMES) {
    const items = listItems(json, list);
    if (items === undefined) return undefined;
    const spec: ListSpec = LISTS[list];
    const usable = items.filter(
      (i) => typeof i.uuid === "string" && i.uuid !== "" && typeof i[spec.text] === "string",
    );
    const scores = normalizeScores(
      usable.map((i) => num(i.score) ?? num(i.relevance)),
      {
        userId: plan.userId,
        reranker: plan.crossEncoder ? "cross_encoder" : "rrf",
        limit: Math.max(plan.fetchLimit, usable.length),
      },
    );
    usable.forEach((item, rank) => {
      const id = String(item.uuid);
      const content = String(item[spec.text]);
      if (originals.has(id) || content.trim() === "") return;
      originals.set(id, { list, item });
      const timestamp =
        spec.times.map((t) => toIsoTimestamp(item[t])).find((t) => t !== undefined) ??
        "1970-01-01T00:00:00.000Z";
      const candidate: Candidate = {
        id,
        content,
        score: scores[rank] ?? 0,
        timestamp,
        sessionId: typeof item.thread_id === "string" ? item.thread_id : `user:${plan.userId}`,
        type: spec.type,
        backend: "zep",
        sourceId: id,
      };
      const role = list === "episodes" ? roleOf(item) : undefined;
      if (role !== undefined) candidate.role = role;
      candidates.push(candidate);
    });
  }

  const result = shape(candidates, compiled, {
    userId: plan.userId,
    query: plan.query,
    backend: "zep",
    topK: plan.topK,
  });
  const kept = new Map<ZepList, unknown[]>();
  for (const list of LIST_NAMES) if (Array.isArray(json[list])) kept.set(list, []);
  for (const memory of result.memories) {
    const original = originals.get(memory.id);
    if (original === undefined) continue;
    const shaped = redactSideFields(original.item, compiled.ctx.redactor);
    shaped[LISTS[original.list].text] = memory.content;
    shaped.score = memory.score;
    kept.get(original.list)?.push(shaped);
  }
  const body: Record<string, unknown> = { ...json, ...Object.fromEntries(kept) };
  if (typeof json.context === "string") body.context = shapeContext(json.context, compiled).text;
  return { body, result };
}
