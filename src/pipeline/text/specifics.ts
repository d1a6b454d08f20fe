/**
 * Whether a sentence holds a specific the question does not say: a number, a quoted title or a capitalized word
 * (a name) that is not one of the question's words. The answer to "What did Zain and Sadia name their
 * daughter?" is a word the question does not contain ("… cuddling Noor."); a sentence made only of the question's
 * own words ("She has Zain's frown already.") repeats it. Used by the clip stage's `clip.answerNeighbour`.
 *
 * Lexical and locale-free: words are runs of letters, marks and digits; a word "is in the question" when its first
 * four letters, lower-cased, begin one of the question's words (so "Kenji's" and "Kenji", "Lisbon" and "Lisbonne"
 * count as the same). The sentence's first word (after a `Speaker: ` label) is capitalized anyway and does not
 * count as a name.
 */

const SPEAKER = /^[^:\n]{1,40}:\s+/;
const WORD = /[\p{L}\p{M}\p{N}]+/gu;
const CAPITALIZED = /^\p{Lu}\p{Ll}/u;
const DIGIT = /\p{Nd}/u;
/** A title in double quotes or guillemets (never apostrophes: "she's … Zain's" is no title). */
const QUOTED = /["“„«»]\s?(\p{L}[^"“”„«»]{1,60}?)\s?["”“»«]/u;
/** A word's key for "is it in the question": its first four code points, lower-cased. */
const keyOf = (word: string): string => word.toLowerCase().slice(0, 4);

/** The question's word keys (`keyOf` of each word), for `holdsNewSpecific`. */
export function questionKeys(query: string): Set<string> {
  const keys = new Set<string>();
  for (const m of query.normalize("NFKC").matchAll(WORD)) keys.add(keyOf(m[0]));
  return keys;
}

/** 1 when `sentence` holds a number, quoted title or name not among `keys` (the question's), else 0. */
export function holdsNewSpecific(sentence: string, keys: ReadonlySet<string>): number {
  const body = sentence.replace(SPEAKER, "");
  const quoted = QUOTED.exec(body);
  if (quoted !== null && !keys.has(keyOf(quoted[1] ?? ""))) return 1;
  const words = body.match(WORD) ?? [];
  for (let i = 0; i < words.length; i++) {
    const w = words[i] as string;
    if (keys.has(keyOf(w))) continue;
    if (DIGIT.test(w)) return 1;
    if (i > 0 && w !== "I" && CAPITALIZED.test(w)) return 1;
  }
  return 0;
}
