import { contentTerms } from "../../pipeline/text/terms";

/**
 * Query terms for the local backend: the chat message tokenized like the memories (see pipeline/text/terms.ts),
 * de-duplicated (first occurrence wins), without the function words of the language the query seems to be in
 * (pipeline/text/stopwords.ts: "what", "do", "I"; "la", "de", "du"; "die", "wann").
 *
 * Queries are chat turns ("what do I usually order?"), not keyword lists. Function words carry no topic, yet
 * a word that no memory contains has the highest possible IDF, so without this step they would dominate the
 * reference score in score.ts and push every real match below `minScore`.
 * Memories are indexed unchanged; only the query drops these words. A query made only of them
 * ("who am I?") is searched as is.
 *
 * At most MAX_QUERY_TERMS terms (the first ones) are searched: a pasted 4,000-character text would otherwise
 * cost hundreds of fuzzy lookups on the request path, and 64 content words say what a chat turn is about.
 */
export const MAX_QUERY_TERMS = 64;

export function queryTerms(query: string): string[] {
  return contentTerms(query).slice(0, MAX_QUERY_TERMS);
}
