import { terms } from "./tokenize";

/**
 * Query terms for the local backend: the chat message tokenized like the memories (see tokenize.ts),
 * de-duplicated (first occurrence wins), with English function words removed.
 *
 * Queries are chat turns ("what do I usually order?"), not keyword lists. Words such as "what", "do" and
 * "I" carry no topic, yet a word that no memory contains has the highest possible IDF, so without this step
 * they would dominate the reference score in score.ts and push every real match below `minScore`.
 * Memories are indexed unchanged; only the query drops these words. A query made only of them
 * ("who am I?") is searched as is.
 *
 * At most MAX_QUERY_TERMS terms (the first ones) are searched: a pasted 4,000-character text would otherwise
 * cost hundreds of fuzzy lookups on the request path, and 64 content words say what a chat turn is about.
 */
export const MAX_QUERY_TERMS = 64;

const STOPWORDS: ReadonlySet<string> = new Set(
  (
    "a about above after again all am an and any are as at be been before being below between both but by " +
    "can could did do does doing down during each few for from further had has have having he her here hers " +
    "him his how i if in into is it its just me more most my no nor not now of off on once " +
    "only or other our ours out over own please same she should so some such than that the their theirs them " +
    "then there these they this those through to too under until up very was we were what when where which " +
    "while who whom why will with would you your yours " +
    // Fragments left by splitting contractions at the apostrophe: don't → don + t, I'd → i + d.
    "d don ll m re s t ve"
  ).split(" "),
);

export function queryTerms(query: string): string[] {
  const unique = [...new Set(terms(query))];
  const content = unique.filter((t) => !STOPWORDS.has(t));
  return (content.length > 0 ? content : unique).slice(0, MAX_QUERY_TERMS);
}
