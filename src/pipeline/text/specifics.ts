import { classOf, DIGIT, LETTER_OR_MARK, LOWER, NUMBER, UPPER } from "./classes";

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

/** `Speaker: ` (or any "Word: ") at a sentence's start: who speaks, not what is said (sticky: read in place). */
const SPEAKER = /[^:\n]{1,40}:\s+/y;
/** A letter, mark or number: part of a word. */
const WORD = LETTER_OR_MARK | NUMBER;
/** A title in double quotes or guillemets (never apostrophes: "she's … Zain's" is no title). */
const QUOTED = /["“„«»]\s?(\p{L}[^"“”„«»]{1,60}?)\s?["”“»«]/u;
const QUERY_WORDS = /[\p{L}\p{M}\p{N}]+/gu;
/** A word's key for "is it in the question": its first four code units, lower-cased. */
const keyOf = (word: string): string => word.slice(0, 4).toLowerCase();
/** `keyOf(text.slice(start, end))`, without cutting out the whole word first. */
const keyAt = (text: string, start: number, end: number): string =>
  text.slice(start, Math.min(end, start + 4)).toLowerCase();

/** The question's word keys (`keyOf` of each word), for `holdsNewSpecific`. */
export function questionKeys(query: string): Set<string> {
  return new Set((query.normalize("NFKC").match(QUERY_WORDS) ?? []).map(keyOf));
}

/**
 * 1 when the sentence `text.slice(start, end)` holds a number, quoted title or name not among `keys` (the
 * question's), else 0. Read in place (the clip stage passes a memory and a sentence's span) with one pass over its
 * code points and the character table of the text scanners (`classes.ts`): only a word that can be a specific
 * (capitalized, or holding a digit) is cut out, to be looked up.
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
    const c = text.charCodeAt(i);
    if (c === 0x22 || c === 0x201c || c === 0x201e || c === 0xab || c === 0xbb) {
      const quoted = QUOTED.exec(text.slice(from, end));
      if (quoted !== null && !keys.has(keyOf(quoted[1] ?? ""))) return 1;
      break;
    }
  }
  let first = true;
  let i = from;
  while (i < end) {
    const cp = text.codePointAt(i) ?? 0;
    const k = classOf(cp);
    i += cp > 0xffff ? 2 : 1;
    if ((k & WORD) === 0) continue;
    // A word: its first code point read, then the rest, noting a digit and whether it starts "Xy".
    const at = i - (cp > 0xffff ? 2 : 1);
    let digit = (k & DIGIT) !== 0;
    let capitalized = false;
    for (let n = 1; i < end; n++) {
      const next = text.codePointAt(i) ?? 0;
      const kn = classOf(next);
      if ((kn & WORD) === 0) break;
      if (n === 1) capitalized = (k & UPPER) !== 0 && (kn & LOWER) !== 0;
      digit ||= (kn & DIGIT) !== 0;
      i += next > 0xffff ? 2 : 1;
    }
    if ((digit || (capitalized && !first)) && !keys.has(keyAt(text, at, i))) return 1;
    first = false;
  }
  return 0;
}
