/**
 * Zep scores → memgate's one score scale
 * =====================================
 *
 * What Zep's `score` means depends on the reranker (the SDK's `EntityEdge.score`: "sigmoid-distributed logits
 * [0,1] when using cross_encoder reranker, or RRF ordinal rank when using rrf"; Zep's engine, graphiti, fuses its
 * retrievers with RRF at rank constant 1). memgate keeps that number as it came (`backendScore`, surfaced as
 * `provenance.backendScore`) and gives every candidate a calibrated `score` on the scale every backend shares
 * (the local backend's `c / (c + 0.5)` of query coverage, OpenMemory's normal CDF of its z-score): higher is
 * more evidence that the memory answers the query, 0.5 is "the best one retriever found" / "the cross-encoder
 * is undecided" / "half the query", and only a strong signal comes near 1. So `minScore` means the same thing
 * on every backend and reranker, and a weak answer does not come back with strong scores.
 *
 * | reranker           | Zep's `score` (kept as `backendScore`)               | memgate `score`                   |
 * |--------------------|------------------------------------------------------|-----------------------------------|
 * | `cross_encoder`    | the cross-encoder's sigmoid: a relevance in [0,1]     | that relevance, clamped to [0,1]  |
 * | `rrf` (Zep default)| RRF: Σ over retrievers of 1 / (1 + rank in it)        | raw / (raw + 1)                   |
 * | `mmr`              | λ·similarity − (1 − λ)·redundancy (can be < 0)        | by rank: 1 / (rank + 2)           |
 * | `episode_mentions` | how often the episodes mention a fact                 | by rank: 1 / (rank + 2)           |
 * | `node_distance`    | hops to a centre node (doors only)                    | by rank: 1 / (rank + 2)           |
 *
 * (rank = 0-based position in one scope's answer; `relevance` stands in for a missing `score`.)
 * RRF at rank constant 1 sums, over Zep's retrievers (BM25, vector similarity, graph BFS), 1 for a first place,
 * 1/2 for a second, …: raw 1 = "first of one retriever" → 0.5, 2 = first of two → 0.667, 3 → 0.75; 0.5 (second
 * of one) → 0.333; a fact found 8th by one retriever only (0.12) → 0.107. It rewards retrievers agreeing, and
 * never reaches 1: the best of an answer no retriever agrees on stays at 0.5.

 * Rank scores 1 / (rank + 2) are what the `rrf` map gives a list ranked by a single retriever: 0.5, 0.333, 0.25,
 * 0.2, 0.167, 0.143, … A rank says nothing about whether the best of an answer is relevant, so a rank-scored
 * answer starts at the undecided middle of the scale, never near 1; `minScore: t` keeps ranks ≤ 1/t − 2 of each
 * scope, the best ⌊1/t⌋ − 1 (0.3 → 2, 0.15 → 5, 0.1 → 9, 0.05 → 19, 0 → all). For an absolute threshold use
 * `cross_encoder`. Docs: docs/policy.md#fetch (the table of every backend's scale).
 *
 * Rules that keep the scale honest and the map monotone in Zep's ranking (the contract), deterministic, and a
 * function of one scope's answer alone (never of the fetch size L, other scopes or other queries):
 * - A scope in which any item has neither a finite `score` nor `relevance` is scored by rank whole, so two
 *   scales never mix in one list.
 * - `rrf` values are read as RRF only when the answer looks like Zep's RRF: non-increasing down the list and
 *   the first at least 1 (the best of a rank-constant-1 fusion is first in at least one retriever). Any other
 *   answer (ascending ordinals, a fusion at another constant, negative values) is scored by rank.
 * - Down one scope's list a score never exceeds the one above it (a running minimum): a `cross_encoder` answer
 *   that is not sorted by its scores keeps Zep's order.
 * - `scope: auto` (doors only) ignores the requested reranker on Zep's side ("auto search always uses RRF
 *   retrieval and applies its own internal rerank"), so it is read as `rrf`.
 */

/** Every reranker Zep's `graph.search` accepts (the SDK's `Reranker`); a policy offers four of them. */
export const ZEP_ALL_RERANKERS = [
  "rrf",
  "mmr",
  "node_distance",
  "episode_mentions",
  "cross_encoder",
] as const;
export type ZepAnyReranker = (typeof ZEP_ALL_RERANKERS)[number];

/** How one scope's answer is scored (see the table above). */
export type ZepScale = "relevance" | "rrf" | "rank";

/** Zep's own number for an item: `score`, else `relevance`, when it is a finite number. */
export function rawScoreOf(item: Record<string, unknown>): number | undefined {
  for (const v of [item.score, item.relevance]) if (typeof v === "number" && Number.isFinite(v)) return v;
  return undefined;
}

/** The reranker a door's caller asked for (`reranker`, Zep's default `rrf`); `scope: auto` is read as `rrf`. */
export function requestedReranker(body: Record<string, unknown>): ZepAnyReranker {
  if (body.scope === "auto") return "rrf";
  return ZEP_ALL_RERANKERS.find((r) => r === body.reranker) ?? "rrf";
}

/** A rank's score: what one retriever's ranking is worth, 1 / (rank + 2) (0.5 for the first). */
export function rankScore(rank: number): number {
  return 1 / (rank + 2);
}

/** An RRF value (rank constant 1) on the scale: raw / (raw + 1), 0.5 for the first of one retriever. */
export function rrfScore(raw: number): number {
  return raw > 0 ? raw / (raw + 1) : 0;
}

function looksLikeRrf(raws: readonly number[]): boolean {
  const first = raws[0];
  if (first === undefined || !(first >= 1)) return false;
  for (let i = 1; i < raws.length; i++) if (!((raws[i] ?? 0) <= (raws[i - 1] ?? 0))) return false;
  return true;
}

/** How one scope's answer (Zep's raw numbers, in Zep's order) is scored under `reranker`. */
export function scaleOf(raws: ReadonlyArray<number | undefined>, reranker: ZepAnyReranker): ZepScale {
  const known: number[] = [];
  for (const raw of raws) {
    if (raw === undefined) return "rank";
    known.push(raw);
  }
  if (reranker === "cross_encoder") return "relevance";
  if (reranker === "rrf" && looksLikeRrf(known)) return "rrf";
  return "rank";
}

/** Calibrated scores of one scope's items, in Zep's order (see the top of this file); never increasing. */
export function calibrateScores(raws: ReadonlyArray<number | undefined>, reranker: ZepAnyReranker): number[] {
  const scale = scaleOf(raws, reranker);
  let ceiling = 1;
  return raws.map((raw, rank) => {
    const score =
      scale === "rank" || raw === undefined
        ? rankScore(rank)
        : scale === "rrf"
          ? rrfScore(raw)
          : Math.min(1, Math.max(0, raw));
    ceiling = Math.min(ceiling, score);
    return ceiling;
  });
}
