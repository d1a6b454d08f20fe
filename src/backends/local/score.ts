/**
 * Score normalization of the local backend
 * ========================================
 *
 * MiniSearch ranks a user's memories with BM25+ (k = 1.2, b = 0.7, d = 0.5). Its raw score for a memory is
 * the sum, over the query terms the memory matches, of `idf(term) · (d + tf-part)` — prefix and fuzzy matches
 * weighted down (0.375 and 0.45 at most) — times the number of distinct query terms matched. Raw scores
 * have no upper bound and grow with the length of the query and the size of the corpus, so a fixed
 * threshold such as `minScore: 0.3` would mean nothing on them. memgate maps them to [0, 1) per query:
 *
 *   1. Reference R(Q): the raw score of an *ideal memory* for this query — one that contains each query term
 *      exactly once and has the average length:
 *          R(Q) = m · (1 + d) · Σ idf(t)      over the m query terms T' that match at least one of the
 *                                               user's memories (with the same exact/prefix/fuzzy rules),
 *      with idf(t) = ln(1 + (N − n(t) + 0.5) / (n(t) + 0.5)), N = the user's memory count and n(t) = how many
 *      of them match t — MiniSearch's own IDF. Query terms that no memory of this user contains cannot be
 *      matched by any memory, so they are left out: the score says how much of what this user's memories
 *      *can* answer a memory covers. Function words ("what", "do", "I"; "la", "de") are dropped from the query
 *      beforehand (query.ts).
 *   2. Coverage c = √(raw / R(Q)). Because MiniSearch multiplies by the number of matched terms, raw / R
 *      behaves like (matched share)²; the square root makes c ≈ the IDF-weighted share of T' the memory
 *      matches: 1 for the ideal memory, ½ for one matching one of two equally rare terms, less for prefix or
 *      fuzzy matches. It exceeds 1 for a memory that repeats the terms, is shorter than average, or also
 *      matches in its tags.
 *   3. score = c / (c + K) with K = 0.5, rounded to 6 decimals:
 *
 *          c      0.1    0.2    0.25   0.5    1      2      4
 *          score  0.167  0.286  0.333  0.5    0.667  0.8    0.889
 *
 *      So `minScore: 0.3` keeps memories that cover at least ~21% of the query's weight (c ≥ 0.214), e.g.
 *      one of four equally rare query terms, and drops matches on a single common word of a long query.
 *      0.5 means "half the query"; the ideal memory scores 2/3, and the score approaches but never reaches 1.
 *
 * Properties: the map raw → score is increasing for a fixed query, so the order is MiniSearch's order (ties
 * from rounding, and equal raw scores, are broken by id ascending). A score depends only on the query, the
 * memory and the user's own memories (their count and document frequencies) — never on other users, other
 * queries, the other results or `limit`. Each user has their own index, so one user's memories cannot shift
 * another user's scores. `semantic` is served like `hybrid` (there are no embeddings here), so it scores the
 * same. MiniSearch's raw score is kept beside the normalized one as the candidate's `backendScore`
 * (`provenance.backendScore`), for audits; it is on no common scale and never compared with another backend's.
 */

/** MiniSearch's BM25+ parameters (its defaults), passed explicitly so the reference uses the same values. */
export const BM25 = { k: 1.2, b: 0.7, d: 0.5 } as const;

/** Saturation constant: coverage K maps to score 0.5. */
export const SATURATION_K = 0.5;

/** MiniSearch's inverse document frequency for a term found in `docFreq` of `docCount` memories. */
export function idf(docFreq: number, docCount: number): number {
  return Math.log(1 + (docCount - docFreq + 0.5) / (docFreq + 0.5));
}

/**
 * Raw score of the ideal memory: each term of T' once, average length (the tf part of BM25+ is then
 * exactly 1), times |T'| as MiniSearch's term-count multiplier.
 * @param docFreqs n(t) for each term of T' (terms with n(t) = 0 must already be left out)
 */
export function referenceScore(docFreqs: readonly number[], docCount: number): number {
  let sum = 0;
  for (const n of docFreqs) sum += idf(n, docCount) * (1 + BM25.d);
  return docFreqs.length * sum;
}

/** Maps a raw MiniSearch score to [0, 1) given the query's reference score (see the top of this file). */
export function normalizeScore(raw: number, reference: number): number {
  if (!(raw > 0) || !(reference > 0) || !Number.isFinite(raw)) return 0;
  const coverage = Math.sqrt(raw / reference);
  return Math.round((coverage / (coverage + SATURATION_K)) * 1e6) / 1e6;
}
