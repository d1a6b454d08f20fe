import type { Policy } from "../policy/schema";
import type { Sufficiency } from "./sufficiency";
import { relevanceQuery, scanTerms, stemmerFor } from "./text/relevance";
import type { Candidate } from "./types";

/**
 * The expansion round (policy `sufficiency.expand`, seed 004), decided in one place for the retrieval core
 * (`RetrievalService.expand`) and `memgate eval`, which emulates it:
 *
 * - `expansionPlan`: what a first answer that is not `sufficient` searches for once more, by
 *   `sufficiency.expandWith`:
 *   - `more` (unset: the round as it always was): the same question for `expandFactor` × the candidates it asked
 *     for — unless the backend already returned fewer than asked (it has no more to give);
 *   - `missing`: the question's words the certificate lists as `missing` (names and terms no kept memory holds),
 *     as the query, for as many candidates as the first search asked; no round when nothing is missing;
 *   - `both`: the missing words for `expandFactor` × the candidates; with nothing missing, as `more`.
 * - `mergeExpanded`: the second search's candidates after the first ones, each id once;
 * - `keepExpanded`: the second answer replaces the first only when it is at least as complete.
 *
 * What only the core knows (the deadline left, a door's own upstream call) stays in the core. The second answer is
 * shaped for the user's own question: only the search differs.
 */
export interface ExpansionPlan {
  /** What the round searches with (`more`: the question again; `missing`: its missing words). */
  with: "more" | "missing";
  /** The query sent to the backend. */
  query: string;
  /** Candidates asked for. */
  limit: number;
}

export function expansionPlan(
  policy: Policy,
  first: Sufficiency | undefined,
  query: string,
  asked: number,
  found: number,
): ExpansionPlan | undefined {
  const { expand, expandWith = "more", expandFactor } = policy.sufficiency;
  if (!expand || first === undefined || first.verdict === "sufficient") return undefined;
  if (expandWith !== "more") {
    const words = missingWords(query, first.missing);
    if (words.length > 0) {
      const limit = expandWith === "both" ? asked * expandFactor : asked;
      return { with: "missing", query: words.join(" "), limit };
    }
    if (expandWith === "missing") return undefined;
  }
  if (found < asked) return undefined;
  return { with: "more", query, limit: asked * expandFactor };
}

/**
 * The words of `query`, as written and in its order, each once, that the certificate's `missing` names: a name as
 * written (case aside), or a word whose term (stemmed and cut as the certificate scores it) is a missing term.
 * Function words never are (they are not terms).
 */
export function missingWords(query: string, missing: readonly string[]): string[] {
  if (missing.length === 0) return [];
  const wanted = new Set(missing.map((m) => m.toLowerCase()));
  const stem = stemmerFor(relevanceQuery(query).language);
  const out: string[] = [];
  const seen = new Set<string>();
  for (const m of query.matchAll(WORD)) {
    const word = m[0];
    const lower = word.toLowerCase();
    const bare = lower.replace(POSSESSIVE, "");
    let hit = wanted.has(lower) || wanted.has(bare);
    if (!hit) {
      const start = m.index;
      scanTerms(
        query,
        start,
        start + word.length,
        (term) => {
          if (wanted.has(term)) hit = true;
        },
        stem,
      );
    }
    // "Maya's" and "Maya" are one name: searched once.
    if (hit && !seen.has(bare)) {
      seen.add(bare);
      out.push(word);
    }
  }
  return out;
}

/** A query's words (letters, marks, digits, inner apostrophes). */
const WORD = /[\p{L}\p{M}\p{N}]+(?:['’][\p{L}\p{M}\p{N}]+)*['’]?/gu;
const POSSESSIVE = /['’]s?$/u;

/** The first candidates, then the second search's ones not already among them (by id), in their order. */
export function mergeExpanded(first: readonly Candidate[], second: readonly Candidate[]): Candidate[] {
  const seen = new Set(first.map((c) => c.id));
  return [...first, ...second.filter((c) => !seen.has(c.id))];
}

/** Whether the expanded answer replaces the first: it must be at least as complete. */
export function keepExpanded(first: Sufficiency, second: Sufficiency | undefined): boolean {
  return second !== undefined && second.completeness >= first.completeness;
}

/** How many of the candidates a search returned the backend found itself (reply turns it added do not count). */
export function foundByBackend(candidates: readonly Candidate[]): number {
  let n = 0;
  for (const c of candidates) if (c.origin !== "reply") n++;
  return n;
}
