/**
 * The OpenMemory drop-in door's `POST /memory/query` (src/compat/openmemory), made by the OpenMemory backend —
 * or by the embedded local store for a tenant without an OpenMemory server (src/backends/local) — so that the
 * door can answer `openmemory-js` with OpenMemory's own match objects while the retrieval core does the rest.
 *
 * The server is asked for min(k × `retrieval.overfetch`, 200) matches with the caller's body (seed 003's extras
 * taken out: OpenMemory has none). Its matches carry no tags, metadata or creation time, so when a query uses the
 * extras the backend looks each match up with `GET /memory/{id}` (at most 8 at a time), and then asks for at most
 * MAX_ENRICHED = 50 matches in the first place: an extras query costs 1 + at most 50 upstream calls, all under the
 * policy's backend timeout. A match that is gone by then (404) has no tags and no known creation time; any other
 * lookup failure fails the search (unavailable). (`GET /memory/all` was not used: it pages through every memory,
 * unbounded, to find a few.)
 *
 * Each match becomes a candidate as the adapter maps it (./map.ts), the extras apply (./extras.ts), and the
 * original match is kept as the candidate's source; the answer's other top-level fields are kept beside.
 */
import { mapLimit } from "../../concurrency";
import { isRecord } from "../json";
import { BackendError, type NativeAnswer, type NativeSearch, type NativeSource } from "../types";
import {
  applyExtras,
  type ExtraFacts,
  type Extras,
  factsOf,
  hasExtras,
  NO_FACTS,
  type WithFacts,
} from "./extras";
import { parseQueryBody, toCandidate } from "./map";

/** The server's cap on `k`. */
export const OPENMEMORY_MAX_K = 200;
export const MAX_ENRICHED = 50;
const LOOKUP_CONCURRENCY = 8;

/** A match with what the extras know about it and its original wire object. */
export interface NativeMatch extends WithFacts {
  raw: Record<string, unknown>;
}

/** How many matches to ask for. */
export function fetchSize(limit: number, extras: Extras): number {
  return Math.max(1, Math.min(Math.floor(limit), hasExtras(extras) ? MAX_ENRICHED : OPENMEMORY_MAX_K));
}

/** Matches (first of each id) → the extras → candidates with their sources. */
export function answerOf(
  matches: readonly NativeMatch[],
  extras: Extras,
  echo: Record<string, unknown>,
): NativeAnswer {
  const unique = new Map<string, NativeMatch>();
  for (const m of matches) if (!unique.has(m.candidate.id)) unique.set(m.candidate.id, m);
  const outcome = hasExtras(extras)
    ? applyExtras([...unique.values()], extras)
    : { items: [...unique.values()], tagFallback: false, asOfFallback: false };
  const sources: Record<string, NativeSource> = {};
  for (const m of outcome.items) sources[m.candidate.id] = { list: "matches", item: m.raw };
  const notes: string[] = [];
  if (outcome.tagFallback) notes.push("tag-fallback");
  if (outcome.asOfFallback) notes.push("as-of-fallback");
  return {
    candidates: outcome.items.map((m) => m.candidate),
    sources,
    echo,
    ...(notes.length > 0 ? { notes } : {}),
  };
}

/** The adapter's one HTTP exchange: the parsed 2xx JSON, or a thrown BackendError. */
export type OpenMemoryCall = (
  op: string,
  init: { method: "GET" | "POST"; path: string; body?: unknown; signal: AbortSignal },
) => Promise<{ status: number; json: unknown }>;

/** The door's query against an OpenMemory server (see the top of this file). */
export async function openMemoryNativeQuery(
  call: OpenMemoryCall,
  native: NativeSearch,
  opts: { limit: number; signal: AbortSignal },
): Promise<NativeAnswer> {
  if (native.kind !== "openmemory.query") {
    throw new BackendError({
      kind: "invalid_query",
      backend: "openmemory",
      message: `OpenMemory cannot answer a ${native.kind} search`,
    });
  }
  const k = fetchSize(opts.limit, native.extras);
  const res = await call("query", {
    method: "POST",
    path: "/memory/query",
    body: { ...native.body, k },
    signal: opts.signal,
  });
  const parsed = parseQueryBody(res.json);
  if (!Array.isArray(parsed) || !isRecord(res.json) || !Array.isArray(res.json.matches)) {
    throw new BackendError({
      kind: "unavailable",
      backend: "openmemory",
      status: res.status,
      message: "OpenMemory query failed: malformed answer",
    });
  }
  const raws: unknown[] = res.json.matches;
  const matches: NativeMatch[] = parsed.map((m, i) => {
    const raw = raws[i];
    return { candidate: toCandidate(m), facts: NO_FACTS, raw: isRecord(raw) ? raw : {} };
  });
  if (hasExtras(native.extras)) {
    const lookup = async (id: string): Promise<ExtraFacts> => {
      try {
        const found = await call("memory.get", {
          method: "GET",
          path: `/memory/${encodeURIComponent(id)}`,
          signal: opts.signal,
        });
        if (!isRecord(found.json)) throw new Error("not an object");
        return factsOf(found.json);
      } catch (err) {
        if (err instanceof BackendError && err.status === 404) return NO_FACTS;
        throw new BackendError({
          kind: "unavailable",
          backend: "openmemory",
          message: "OpenMemory memory lookups failed",
          cause: err,
        });
      }
    };
    const facts = await mapLimit(matches, LOOKUP_CONCURRENCY, (m) => lookup(m.candidate.id));
    matches.forEach((m, i) => {
      m.facts = facts[i] ?? NO_FACTS;
    });
  }
  const { matches: _matches, ...echo } = res.json;
  return answerOf(matches, native.extras, echo);
}
