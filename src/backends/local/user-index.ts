import MiniSearch, { type SearchOptions } from "minisearch";
import { relevanceTerms } from "../../pipeline/text/relevance";
import { queryStopwords } from "../../pipeline/text/stopwords";
import { terms as rawTerms } from "../../pipeline/text/terms";
import type { SearchRequest } from "../types";
import type { MemoryRecord } from "./schema";
import { BM25, normalizeScore, referenceScore } from "./score";

/**
 * The MiniSearch index of ONE user's memories (fields `content` and `tags`).
 *
 * One index per user rather than one shared index with a `filter`: isolation is structural (a search cannot
 * see another user's memories, and another user's memories do not change this user's IDF and scores), and
 * searching costs what the user's memories cost. Measured with 200 users × 500 memories (MiniSearch 7.2,
 * Node 20, prefix + fuzzy): shared index + filter 210 ms per query, per-user index 0.66 ms, same results.
 *
 * Terms: each memory is indexed as the clip stage reads it (pipeline/text/relevance.ts `relevanceTerms`): NFKC,
 * lower case, stemmed for the language the memory seems to be in (its function words decide, as for a query:
 * Porter2 for English, Snowball for French, Spanish and German), every term cut to its first six characters,
 * Chinese, Japanese and Korean as character bigrams. The query is read the same way (query.ts), so "swimming"
 * meets "swim", "travelled" meets "travelling", "adoptamos" meets "adoptado". Measured on the long golden set
 * (`memgate eval`, default policy): the answer among the candidates 79.8 -> 82.5 %, kept 58.0 -> 59.6 %; basic
 * set 92.5 -> 93.0 %.
 *
 * Search modes (`searchType`), combined with OR:
 * - `keyword`: exact terms only.
 * - `hybrid`: also prefix matches (terms of 3+ characters: "coff" → "coffee") and fuzzy matches (terms of
 *   5+ characters, edit distance ≤ 20% of the term, at most 2: "alergic" → "allergic"). Shorter terms stay
 *   exact, so "i" or "tea" do not drag in every word that starts like them; CJK bigrams are always exact.
 * - `semantic`: there are no embeddings in the local store, so it is served exactly like `hybrid`.
 */

export type SearchType = SearchRequest["searchType"];

export interface RawHit {
  id: string;
  /** Normalized score in [0, 1) (see score.ts). */
  score: number;
  /** MiniSearch's own BM25+ score, before normalization (the candidate's `backendScore`). */
  raw: number;
}

const codePoints = (term: string) => Array.from(term).length;

const EXPANDED: SearchOptions = {
  prefix: (term) => codePoints(term) >= 3,
  fuzzy: (term) => (codePoints(term) >= 5 ? 0.2 : false),
  maxFuzzy: 2,
};

const MODES: Record<SearchType, SearchOptions> = {
  keyword: { prefix: false, fuzzy: false },
  hybrid: EXPANDED,
  semantic: EXPANDED,
};

/** Options for searches whose query is already a space-separated list of processed terms. */
const PRE_TOKENIZED: SearchOptions = {
  combineWith: "OR",
  tokenize: (text) => text.split(" "),
  processTerm: (term) => term,
  bm25: BM25,
};

/**
 * A memory's field as the index reads it: its terms (see the top of this file) joined by spaces. Tags are stemmed
 * in the language of the memory's content.
 */
function indexedText(doc: MemoryRecord, field: string): string {
  if (field === "id") return doc.id;
  if (field === "tags" && (doc.tags === undefined || doc.tags.length === 0)) return "";
  const language = queryStopwords(rawTerms(doc.content)).language;
  const text = field === "tags" ? (doc.tags ?? []).join(" ") : doc.content;
  return relevanceTerms(text, language).join(" ");
}

export class UserIndex {
  private readonly index = new MiniSearch<MemoryRecord>({
    fields: ["content", "tags"],
    extractField: indexedText,
    // The fields are already terms (indexedText); an empty field gives "", which MiniSearch skips.
    tokenize: (text) => text.split(" "),
    processTerm: (term) => term,
    // Records are removed with `remove` (exact, leaves no dirt), so there is nothing to vacuum.
    autoVacuum: false,
    logger: () => {},
  });

  get size(): number {
    return this.index.documentCount;
  }

  add(record: MemoryRecord): void {
    this.index.add(record);
  }

  /** `record` must be the exact object that was added (records are frozen, so it is). */
  remove(record: MemoryRecord): void {
    this.index.remove(record);
  }

  /** All matches for the processed query `terms`, scored; unordered. */
  search(terms: readonly string[], searchType: SearchType): RawHit[] {
    if (terms.length === 0 || this.size === 0) return [];
    const results = this.index.search(terms.join(" "), { ...PRE_TOKENIZED, ...MODES[searchType] });
    // n(t) for the reference score (score.ts): the memories a query term matched under this mode. One OR
    // search returns every memory any term matches, each listing the query terms it matched.
    const docFreq = new Map<string, number>();
    for (const r of results) for (const t of r.queryTerms) docFreq.set(t, (docFreq.get(t) ?? 0) + 1);
    const docFreqs = terms.map((t) => docFreq.get(t) ?? 0).filter((n) => n > 0);
    const reference = referenceScore(docFreqs, this.size);
    return results.map((r) => ({
      id: String(r.id),
      score: normalizeScore(r.score, reference),
      raw: r.score,
    }));
  }
}
