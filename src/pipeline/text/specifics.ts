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

/** `Speaker: ` at the start of a memory's first sentence (sticky: read where a sentence starts, nothing allocated). */
const SPEAKER = /[^:\n]{1,40}:\s+/y;
/** What comes before the first word (sticky: its `lastIndex` is where the first word starts). */
const NOT_WORD = /[^\p{L}\p{M}\p{N}]*/uy;
const QUOTE_MARKS = '"“„«»';
/**
 * The words that can be a specific, whole (no letter, mark or digit before them): a capitalized word (an upper-case
 * letter, then a lower-case one) or a word holding a digit. Every other word is read over by the regex engine.
 */
const CANDIDATE =
  /(?<![\p{L}\p{M}\p{N}])(?:\p{Lu}\p{Ll}[\p{L}\p{M}\p{N}]*|[\p{L}\p{M}\p{N}]*\p{Nd}[\p{L}\p{M}\p{N}]*)/gu;
const DIGIT = /\p{Nd}/u;
/** A title in double quotes or guillemets (never apostrophes: "she's … Zain's" is no title). */
const QUOTED = /["“„«»]\s?(\p{L}[^"“”„«»]{1,60}?)\s?["”“»«]/u;
/** A word's key for "is it in the question": its first four code units, lower-cased. */
const keyOf = (word: string): string => word.slice(0, 4).toLowerCase();

/** The question's word keys (`keyOf` of each word), for `holdsNewSpecific`. */
export function questionKeys(query: string): Set<string> {
  const keys = new Set<string>();
  for (const m of query.normalize("NFKC").matchAll(/[\p{L}\p{M}\p{N}]+/gu)) keys.add(keyOf(m[0]));
  return keys;
}

/**
 * 1 when the sentence `text.slice(start, end)` holds a number, quoted title or name not among `keys` (the
 * question's), else 0. Read in place (the clip stage passes a memory and a sentence's span): nothing is copied but
 * the few words that can be a specific.
 */
export function holdsNewSpecific(
  text: string,
  keys: ReadonlySet<string>,
  start = 0,
  end = text.length,
): number {
  SPEAKER.lastIndex = start;
  // A label running past the sentence is none (the sentence alone holds no "Name: ").
  const from = SPEAKER.test(text) && SPEAKER.lastIndex <= end ? SPEAKER.lastIndex : start;
  for (let i = from; i < end; i++) {
    if (QUOTE_MARKS.includes(text.charAt(i))) {
      const quoted = QUOTED.exec(text.slice(from, end));
      if (quoted !== null && !keys.has(keyOf(quoted[1] ?? ""))) return 1;
      break;
    }
  }
  NOT_WORD.lastIndex = from;
  NOT_WORD.test(text);
  const first = NOT_WORD.lastIndex;
  CANDIDATE.lastIndex = from;
  for (let m = CANDIDATE.exec(text); m !== null && m.index < end; m = CANDIDATE.exec(text)) {
    const w = m[0];
    // A word is matched whole, so a capitalized one at the first word's start is the first word.
    if ((m.index !== first || DIGIT.test(w)) && !keys.has(keyOf(w))) return 1;
  }
  return 0;
}
