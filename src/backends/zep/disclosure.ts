/**
 * Progressive disclosure on Zep (docs/api.md#progressive-disclosure): layers 2 and 3 read the user's own graph —
 * `GET /graph/episodes/user/{userId}?lastn=N` (the user's latest episodes: messages with their `thread_id`) and
 * `POST /graph/edge/user/{userId}` `{limit: N}` (the user's facts) — and pick from it. Reading the user's own
 * lists, never an episode or edge by uuid, is what keeps another user's ids out: Zep's `GET /graph/episodes/{uuid}`
 * would answer any uuid of the project.
 *
 * - details: the memories among the asked ids, in the order asked, mapped as a search's (./map.ts), score 1;
 * - timeline: a message's thread (its episodes with the same `thread_id`, by time, then uuid) around it; a
 *   fact's: the user's episodes nearest its time (`valid_at` ?? `created_at`) on either side.
 * Bounded by N = `ZEP_DISCLOSURE_LASTN`: a memory older than the user's latest N episodes and N facts is not found.
 */

import { compareIds } from "../../pipeline/order";
import type { Candidate } from "../../pipeline/types";
import { isRecord } from "../json";
import { BackendError, type MemoryLookup, type NeighbourRequest, type Neighbours } from "../types";
import { toCandidates } from "./map";
import { type ZepWire, zepJson } from "./native";

/** How many of the user's latest episodes and facts the disclosure layers look through. */
export const ZEP_DISCLOSURE_LASTN = 200;

function malformed(op: string, detail: string): BackendError {
  return new BackendError({
    kind: "unavailable",
    backend: "zep",
    message: `Zep ${op} failed: malformed response (${detail})`,
  });
}

/** The user's latest episodes and facts as candidates (score 1). */
async function userMemories(wire: ZepWire, userId: string, signal: AbortSignal): Promise<Candidate[]> {
  const user = encodeURIComponent(userId);
  const [episodes, edges] = await Promise.all([
    zepJson(wire, "graph.episodes.user", {
      method: "GET",
      path: `/graph/episodes/user/${user}?lastn=${ZEP_DISCLOSURE_LASTN}`,
      signal,
    }),
    zepJson(wire, "graph.edges.user", {
      method: "POST",
      path: `/graph/edge/user/${user}`,
      body: { limit: ZEP_DISCLOSURE_LASTN },
      signal,
    }),
  ]);
  if (!isRecord(episodes)) throw malformed("graph.episodes.user", "not an object");
  if (!Array.isArray(edges)) throw malformed("graph.edges.user", "not a list");
  try {
    const candidates = toCandidates(
      [
        { scope: "episodes", results: { episodes: (episodes.episodes ?? []) as never } },
        { scope: "edges", results: { edges: edges as never } },
      ],
      { userId, reranker: "mmr", limit: 2 * ZEP_DISCLOSURE_LASTN },
    );
    return candidates.map(({ backendScore: _raw, ...c }) => ({ ...c, score: 1 }));
  } catch {
    throw malformed("graph.episodes.user", "an item without uuid or timestamp");
  }
}

const byTime = (a: Candidate, b: Candidate) =>
  Date.parse(a.timestamp) - Date.parse(b.timestamp) || compareIds(a.id, b.id);

export async function zepGetMemories(wire: ZepWire, req: MemoryLookup): Promise<Candidate[]> {
  const byId = new Map((await userMemories(wire, req.userId, req.signal)).map((c) => [c.id, c]));
  return req.ids.flatMap((id) => {
    const found = byId.get(id);
    return found === undefined ? [] : [found];
  });
}

export async function zepNeighbours(wire: ZepWire, req: NeighbourRequest): Promise<Neighbours | undefined> {
  const all = await userMemories(wire, req.userId, req.signal);
  const anchor = all.find((c) => c.id === req.id);
  if (anchor === undefined) return undefined;
  const line = all
    .filter((c) => c.type === "message" && (anchor.type !== "message" || c.sessionId === anchor.sessionId))
    .filter((c) => c.id !== anchor.id)
    .concat(anchor)
    .sort(byTime);
  const at = line.indexOf(anchor);
  return {
    anchor,
    before: line.slice(Math.max(0, at - req.before), at),
    after: line.slice(at + 1, at + 1 + req.after),
  };
}
