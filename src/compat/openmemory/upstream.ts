/**
 * `POST /memory/query` against the tenant's OpenMemory server, with the tenant's key (`x-api-key`).
 *
 * The server is asked for min(k × `retrieval.overfetch`, 200) matches. Its matches carry no tags, metadata or
 * creation time, so when a query uses seed 003's extras the gateway looks each match up with
 * `GET /memory/{id}` (at most 8 at a time), and then asks for at most MAX_ENRICHED = 50 matches in the first
 * place: an extras query costs 1 + at most 50 upstream calls, all under the policy's backend timeout.
 * A match that is gone by then (404) has no tags and no known creation time; any other lookup failure makes
 * the whole query an `OPENMEMORY_UNAVAILABLE` fallback. (`GET /memory/all` was not used: it pages through
 * every memory, unbounded, to find a few.)
 */
import { parseQueryBody, toCandidate } from "../../backends/openmemory/map";
import type { BackendConfig } from "../../backends/types";
import type { FallbackCode } from "../../policy/schema";
import { callUpstream, isRecord, judge, type UpstreamAnswer } from "../upstream";
import { type ExtraFacts, factsOf, hasExtras, NO_FACTS } from "./extras";
import { OPENMEMORY_MAX_K, type OpenMemoryQuery } from "./request";
import type { Match } from "./shape";

export type OpenMemoryConfig = NonNullable<BackendConfig["openmemory"]>;

export const MAX_ENRICHED = 50;
const LOOKUP_CONCURRENCY = 8;

export type UpstreamQuery =
  | { kind: "pass"; answer: UpstreamAnswer }
  | { kind: "fallback"; code: FallbackCode; detail: string }
  | { kind: "ok"; echo: Record<string, unknown>; matches: Match[] };

export function credentialOf(om: OpenMemoryConfig): Record<string, string> {
  return om.apiKey === undefined || om.apiKey === "" ? {} : { "x-api-key": om.apiKey };
}

/** How many matches to ask for (see the top of this file). */
export function fetchSize(q: OpenMemoryQuery, overfetch: number): number {
  const cap = hasExtras(q.extras) ? MAX_ENRICHED : OPENMEMORY_MAX_K;
  return Math.min(q.k * overfetch, cap);
}

class LookupFailed extends Error {}

async function mapLimit<T, R>(items: readonly T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  let failed = false;
  const worker = async () => {
    while (!failed && next < items.length) {
      const i = next++;
      const item = items[i];
      if (item === undefined) continue;
      try {
        out[i] = await fn(item);
      } catch (err) {
        failed = true;
        throw err;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return out;
}

async function lookup(om: OpenMemoryConfig, id: string, signal: AbortSignal): Promise<ExtraFacts> {
  const answer = await callUpstream({
    url: `${om.baseUrl.replace(/\/+$/, "")}/memory/${encodeURIComponent(id)}`,
    method: "GET",
    headers: { accept: "application/json", ...credentialOf(om) },
    signal,
  });
  if (answer.kind === "response" && answer.status === 404) return NO_FACTS;
  const verdict = judge(answer, "openmemory");
  if (verdict.kind !== "ok" || !isRecord(verdict.json)) throw new LookupFailed();
  return factsOf(verdict.json);
}

export async function queryUpstream(
  om: OpenMemoryConfig,
  q: OpenMemoryQuery,
  k: number,
  signal: AbortSignal,
): Promise<UpstreamQuery> {
  const answer = await callUpstream({
    url: `${om.baseUrl.replace(/\/+$/, "")}/memory/query`,
    method: "POST",
    headers: { accept: "application/json", "content-type": "application/json", ...credentialOf(om) },
    body: JSON.stringify({ ...q.upstreamBody, k }),
    signal,
  });
  const verdict = judge(answer, "openmemory");
  if (verdict.kind === "pass") return { kind: "pass", answer };
  if (verdict.kind === "fallback") return verdict;
  const parsed = parseQueryBody(verdict.json);
  if (!Array.isArray(parsed) || !isRecord(verdict.json) || !Array.isArray(verdict.json.matches)) {
    return { kind: "fallback", code: "OPENMEMORY_UNAVAILABLE", detail: "malformed query answer" };
  }
  const raws: unknown[] = verdict.json.matches;
  const matches: Match[] = parsed.map((m, i) => {
    const raw = raws[i];
    return { candidate: toCandidate(m), facts: NO_FACTS, raw: isRecord(raw) ? raw : {} };
  });
  if (hasExtras(q.extras)) {
    try {
      const facts = await mapLimit(matches, LOOKUP_CONCURRENCY, (m) => lookup(om, m.candidate.id, signal));
      matches.forEach((m, i) => {
        m.facts = facts[i] ?? NO_FACTS;
      });
    } catch {
      return { kind: "fallback", code: "OPENMEMORY_UNAVAILABLE", detail: "memory lookups failed" };
    }
  }
  const { matches: _matches, ...echo } = verdict.json;
  return { kind: "ok", echo, matches };
}
