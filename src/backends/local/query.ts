import { relevanceQuery } from "../../pipeline/text/relevance";

/**
 * Query terms for the local backend: the chat message read like the memories in the index (user-index.ts,
 * pipeline/text/relevance.ts `relevanceQuery`, the clip stage's own reading): its distinct terms, first occurrence
 * first, without the function words of the language the query seems to be in (pipeline/text/stopwords.ts:
 * "what", "do", "I"; "la", "de", "du"; "die", "wann"), stemmed for that language and cut to six characters.
 *
 * Queries are chat turns ("what do I usually order?"), not keyword lists. Function words carry no topic, yet
 * a word that no memory contains has the highest possible IDF, so without this step they would dominate the
 * reference score in score.ts and push every real match below `minScore`.
 * Only the query drops these words; memories keep theirs. A query made only of them ("who am I?") is searched
 * as is.
 *
 * At most MAX_QUERY_TERMS (relevance.ts, 64) terms, the first ones, are searched: a pasted 4,000-character text would otherwise
 * cost hundreds of fuzzy lookups on the request path, and 64 content words say what a chat turn is about.
 */
export function queryTerms(query: string): string[] {
  return relevanceQuery(query).terms;
}
