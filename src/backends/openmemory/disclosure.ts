/**
 * Progressive disclosure on OpenMemory (docs/api.md#progressive-disclosure): OpenMemory has no session order,
 * so layers 2 and 3 read the user's own list — `GET /users/{userId}/memories?l=1000&u=0` (`user_id` scoping), or
 * `GET /memory/all?l=1000&u=0` with the user's key (`api_key` scoping: the key is the user's memory space) — and
 * pick from it: details by id (in the order asked), a timeline by time (`created_at`, then id) around the memory.
 * Reading the user's list, never `GET /memory/{id}`, keeps another user's ids out. Each memory is a candidate as
 * a search match is (./map.ts: its `last_seen_at` as the timestamp, `openmemory:<sector>` as the session), score 1.
 * Bounded by `OPENMEMORY_DISCLOSURE_LIMIT`: a memory beyond the user's first 1,000 is not found.
 */
import type { Candidate } from "../../pipeline/types";
import { isRecord } from "../json";
import type { MemoryLookup, NeighbourRequest, Neighbours } from "../types";
import { toCandidate } from "./map";

export const OPENMEMORY_DISCLOSURE_LIMIT = 1000;

/** The adapter's one HTTP exchange (./index.ts `call`), with the user's key already chosen. */
export type ListCall = (path: string, signal: AbortSignal) => Promise<{ status: number; json: unknown }>;

interface Listed {
  candidate: Candidate;
  createdAt: number;
}

async function userList(
  list: ListCall,
  scoping: "user_id" | "api_key",
  userId: string,
  signal: AbortSignal,
  malformed: (reason: string, status: number) => Error,
): Promise<Listed[]> {
  const page = `l=${OPENMEMORY_DISCLOSURE_LIMIT}&u=0`;
  const path =
    scoping === "user_id" ? `/users/${encodeURIComponent(userId)}/memories?${page}` : `/memory/all?${page}`;
  const { status, json } = await list(path, signal);
  if (!isRecord(json) || !Array.isArray(json.items)) throw malformed("`items` is not an array", status);
  const out: Listed[] = [];
  for (const item of json.items) {
    if (!isRecord(item)) throw malformed("an item is not an object", status);
    const {
      id,
      content,
      last_seen_at: seen,
      created_at: created,
      primary_sector: sector,
      user_id: owner,
    } = item;
    if (typeof id !== "string" || id === "" || typeof content !== "string")
      throw malformed("an item without id or content", status);
    // `user_id` scoping trusts the server's filter, and checks it.
    if (scoping === "user_id" && typeof owner === "string" && owner !== userId) continue;
    const createdAt = typeof created === "number" && Number.isFinite(created) ? created : 0;
    const lastSeenAt = typeof seen === "number" && Number.isFinite(seen) ? seen : createdAt;
    const candidate = toCandidate({
      id,
      content,
      score: 0,
      lastSeenAt,
      ...(typeof sector === "string" ? { primarySector: sector } : {}),
    });
    const { backendScore: _raw, ...plain } = candidate;
    out.push({ candidate: { ...plain, score: 1 }, createdAt });
  }
  return out;
}

export async function openMemoryGetMemories(
  list: ListCall,
  scoping: "user_id" | "api_key",
  req: MemoryLookup,
  malformed: (reason: string, status: number) => Error,
): Promise<Candidate[]> {
  const byId = new Map(
    (await userList(list, scoping, req.userId, req.signal, malformed)).map((l) => [
      l.candidate.id,
      l.candidate,
    ]),
  );
  return req.ids.flatMap((id) => {
    const found = byId.get(id);
    return found === undefined ? [] : [found];
  });
}

export async function openMemoryNeighbours(
  list: ListCall,
  scoping: "user_id" | "api_key",
  req: NeighbourRequest,
  malformed: (reason: string, status: number) => Error,
): Promise<Neighbours | undefined> {
  const all = await userList(list, scoping, req.userId, req.signal, malformed);
  all.sort(
    (a, b) =>
      a.createdAt - b.createdAt ||
      (a.candidate.id < b.candidate.id ? -1 : a.candidate.id > b.candidate.id ? 1 : 0),
  );
  const at = all.findIndex((l) => l.candidate.id === req.id);
  const anchor = all[at];
  if (anchor === undefined) return undefined;
  return {
    anchor: anchor.candidate,
    before: all.slice(Math.max(0, at - req.before), at).map((l) => l.candidate),
    after: all.slice(at + 1, at + 1 + req.after).map((l) => l.candidate),
  };
}
