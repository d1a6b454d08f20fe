/**
 * Grapheme-safe cutting of text (CONTRACT §4 stage 7).
 *
 * A cut never falls inside an extended grapheme cluster (UAX #29): not inside a surrogate pair, an emoji ZWJ
 * sequence (👨‍👩‍👧), a regional-indicator flag (🇫🇷), a base + combining mark ("e\u0301") or a Hangul syllable
 * spelled with conjoining jamo. Among those boundaries, cuts are made at word boundaries:
 *
 * - Scripts written with spaces use `Intl.Segmenter` word boundaries (UAX #29 word rules).
 * - Han, Hiragana and Katakana are written without spaces. ICU segments them with a dictionary
 *   ("北京|烤鸭", "食べる|の"), but that dictionary changes between ICU releases, i.e. between Node versions,
 *   and the pipeline must give byte-identical output on any host. Readers of Chinese and Japanese accept a cut
 *   after any character, so every grapheme boundary next to one of these characters counts as a word
 *   boundary: deterministic, and it uses the budget fully. (Thai, Lao, Khmer and Burmese still rely on ICU's
 *   dictionary; their word boundaries are grapheme boundaries all the same.)
 *
 * Segmenters use a fixed locale so the host locale never changes a result.
 */

const LOCALE = "en";
const graphemeSegmenter = new Intl.Segmenter(LOCALE, { granularity: "grapheme" });
const wordSegmenter = new Intl.Segmenter(LOCALE, { granularity: "word" });

/** Scripts where any character boundary is an acceptable place to cut. */
const NO_SPACE_SCRIPT = /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}]/u;
const ALL_WHITESPACE = /^\s+$/u;

/** Offsets (UTF-16) of every grapheme boundary, ascending, from 0 to `text.length` inclusive. */
export function graphemeBoundaries(text: string): number[] {
  const offsets: number[] = [];
  for (const { index } of graphemeSegmenter.segment(text)) offsets.push(index);
  offsets.push(text.length);
  return offsets;
}

/** The grapheme clusters of `text`, in order. */
export function graphemes(text: string): string[] {
  return Array.from(graphemeSegmenter.segment(text), (s) => s.segment);
}

/**
 * Offsets at which `text` may be cut, ascending and without repeats: each is a grapheme boundary and a word
 * boundary, and `text.slice(0, offset)` is non-empty and does not end with whitespace (trailing whitespace
 * graphemes are stepped over, so a prefix never ends in a space before a suffix such as "...").
 */
export function wordCutOffsets(text: string): number[] {
  return cutPoints(text).cuts;
}

interface CutPoints {
  /** Every grapheme boundary, ascending, 0 and `text.length` included. */
  bounds: number[];
  cuts: number[];
}

function cutPoints(text: string): CutPoints {
  const bounds = graphemeBoundaries(text);
  if (text.length === 0) return { bounds, cuts: [] };
  const isBoundary = new Set(bounds);
  const isCut = new Set<number>();
  for (const { index } of wordSegmenter.segment(text)) if (isBoundary.has(index)) isCut.add(index);
  isCut.add(text.length);
  // Han/kana: a boundary next to such a character is a word boundary (see above).
  for (let g = 1; g < bounds.length; g++) {
    const start = bounds[g - 1] ?? 0;
    const end = bounds[g] ?? 0;
    if (NO_SPACE_SCRIPT.test(text.slice(start, end))) {
      isCut.add(start);
      isCut.add(end);
    }
  }
  // Walk back over whitespace-only graphemes so each cut ends on visible text; keep the first occurrence.
  const cuts: number[] = [];
  let visibleEnd = 0; // end of the last grapheme seen so far that is not all whitespace
  for (let g = 1; g < bounds.length; g++) {
    const start = bounds[g - 1] ?? 0;
    const end = bounds[g] ?? 0;
    if (!ALL_WHITESPACE.test(text.slice(start, end))) visibleEnd = end;
    if (isCut.has(end) && visibleEnd > 0 && visibleEnd !== cuts[cuts.length - 1]) cuts.push(visibleEnd);
  }
  return { bounds, cuts };
}

/** Start offset of the grapheme that ends at `end` (a boundary other than 0). */
function graphemeStartBefore(bounds: number[], end: number): number {
  let lo = 0;
  let hi = bounds.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if ((bounds[mid] ?? 0) < end) lo = mid;
    else hi = mid - 1;
  }
  return bounds[lo] ?? 0;
}

/**
 * True when appending `suffix` to the grapheme `last` leaves `last` a grapheme of its own. It fails only for a
 * grapheme ending with a "Prepend" character (e.g. U+0600 ARABIC NUMBER SIGN), which would absorb the suffix.
 */
function joinsCleanly(last: string, suffix: string): boolean {
  const first = graphemeSegmenter
    .segment(last + suffix)
    [Symbol.iterator]()
    .next();
  return first.done === true || first.value.segment === last;
}

/**
 * The longest prefix of `text` cut at a grapheme-safe word boundary (see `wordCutOffsets`) such that
 * `fits(prefix + suffix)` holds, returned with the suffix; `undefined` if not even the first word fits.
 * Every grapheme of the prefix is a grapheme of `text`, and appending `suffix` merges into none of them.
 *
 * `fits` is expected to be monotone in the prefix length (a token count under a budget), but real BPE counts
 * are not perfectly monotone, so the search is a binary search that only ever accepts a candidate it has
 * actually tested: the result is guaranteed to satisfy `fits`, and is the longest one in the common case.
 * Costs O(log n) calls to `fits` for n cut offsets.
 */
export function truncateToFit(
  text: string,
  suffix: string,
  fits: (candidate: string) => boolean,
): string | undefined {
  const { bounds, cuts } = cutPoints(text);
  let lo = -1; // index of the best cut known to fit (-1: none yet)
  let hi = cuts.length; // index of a cut known not to fit (or one past the end)
  let best: string | undefined;
  while (hi - lo > 1) {
    const mid = lo + Math.floor((hi - lo) / 2);
    const cut = cuts[mid] ?? 0;
    if (!joinsCleanly(text.slice(graphemeStartBefore(bounds, cut), cut), suffix)) {
      cuts.splice(mid, 1); // never a valid cut: forget it and search the same range again
      hi -= 1;
      continue;
    }
    const candidate = text.slice(0, cut) + suffix;
    if (fits(candidate)) {
      lo = mid;
      best = candidate;
    } else {
      hi = mid;
    }
  }
  return best;
}
