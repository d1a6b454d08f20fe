/**
 * OpenMemory query matches → the tenant's policy → OpenMemory's own answer `{ query, matches[] }`.
 *
 * Each match becomes a candidate as the OpenMemory adapter maps it (src/backends/openmemory/map.ts: the
 * within-answer z-score mapped to [0,1] by a logistic curve; or the local store's normalized score). After the
 * seed 003 extras (./extras.ts), the policy runs as on /v1/retrieve: redaction, threshold, dedup, the request's
 * `k` as topK, interleaving, clipping, the token budget. The answer keeps every field of each kept match as
 * it came (`id`, `sectors`, `primary_sector`, `path`, `salience`, `last_seen_at`, …) with `content` replaced by
 * the shaped text and `score` by the normalized score, in the policy's order; dropped matches disappear.
 */
import type { PipelineResult } from "../../pipeline";
import type { CompiledPolicy } from "../../policy/compile";
import { shape } from "../policy";
import { applyExtras, hasExtras, type WithFacts } from "./extras";
import type { OpenMemoryQuery } from "./request";

/** The user a query without `user_id` acts for on the local store (and names the pipeline's collection). */
export const DEFAULT_USER = "default";

export interface Match extends WithFacts {
  /** The match as the upstream (or the local store) sent it. */
  raw: Record<string, unknown>;
}

export interface ShapedQuery {
  body: { query: string; matches: Array<Record<string, unknown>> } & Record<string, unknown>;
  tagFallback: boolean;
  asOfFallback: boolean;
  result: PipelineResult;
}

export function shapeQuery(
  matches: readonly Match[],
  q: OpenMemoryQuery,
  compiled: CompiledPolicy,
  opts: { backend: string; topK: number; echo?: Record<string, unknown> },
): ShapedQuery {
  const unique = new Map<string, Match>();
  for (const m of matches) if (!unique.has(m.candidate.id)) unique.set(m.candidate.id, m);
  const outcome = hasExtras(q.extras)
    ? applyExtras([...unique.values()], q.extras)
    : { items: [...unique.values()], tagFallback: false, asOfFallback: false };
  const result = shape(
    outcome.items.map((m) => m.candidate),
    compiled,
    { userId: q.userId ?? DEFAULT_USER, query: q.query, backend: opts.backend, topK: opts.topK },
  );
  const shaped = result.memories.flatMap((memory) => {
    const m = unique.get(memory.id);
    return m === undefined ? [] : [{ ...m.raw, content: memory.content, score: memory.score }];
  });
  return {
    body: { ...opts.echo, query: q.query, matches: shaped },
    tagFallback: outcome.tagFallback,
    asOfFallback: outcome.asOfFallback,
    result,
  };
}
