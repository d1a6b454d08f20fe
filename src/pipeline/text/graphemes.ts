/**
 * Grapheme-safe cutting of text (docs/policy.md#budget).
 *
 * A cut never falls inside an extended grapheme cluster (UAX #29): not inside a surrogate pair, an emoji ZWJ
 * sequence (👨‍👩‍👧), a regional-indicator flag (🇫🇷), a base + combining mark ("e\u0301") or a Hangul syllable
 * spelled with conjoining jamo. Among those boundaries, cuts are made at the end of a word segment (a word,
 * a punctuation mark, a symbol or an emoji; never whitespace, so no prefix ends in a space):
 *
 * - Scripts written with spaces use `Intl.Segmenter` word boundaries (UAX #29 word rules).
 * - Han, Hiragana and Katakana are written without spaces. ICU segments them with a dictionary
 *   ("北京|烤鸭", "食べる|の"), but that dictionary changes between ICU releases, i.e. between Node versions,
 *   and the pipeline must give byte-identical output on any host. Readers of Chinese and Japanese accept a cut
 *   after any character, so each such character is a word of its own here: deterministic, and it uses the
 *   budget fully. (Thai, Lao, Khmer and Burmese still rely on ICU's dictionary; their word boundaries are
 *   grapheme boundaries all the same.)
 *
 * Segmenters use a fixed locale so the host locale never changes a result.
 */

const LOCALE = "en";
const graphemeSegmenter = new Intl.Segmenter(LOCALE, { granularity: "grapheme" });
const wordSegmenter = new Intl.Segmenter(LOCALE, { granularity: "word" });

const NO_SPACE_SCRIPT = /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}]/gu;
const ENDS_WITH_WHITESPACE = /\s$/u;
/** Printable ASCII, tab and LF: every code unit is a grapheme of its own (UAX #29 GB4, GB5, GB999). */
const ONE_UNIT_GRAPHEMES = /^[\t\n -~]*$/;

/** The grapheme clusters of `text`, in order. */
export function graphemes(text: string): string[] {
  return Array.from(graphemeSegmenter.segment(text), (s) => s.segment);
}

/**
 * `text` with every Han, Hiragana and Katakana character replaced by "#" ("##" for a surrogate pair): offsets
 * are unchanged, and the word segmenter puts a boundary on both sides of each such character instead of
 * consulting ICU's dictionary (see the top of this file).
 */
function maskNoSpaceScripts(text: string): string {
  return text.replace(NO_SPACE_SCRIPT, (char) => (char.length === 2 ? "##" : "#"));
}

/**
 * Where `text` may be cut when `suffix` is appended. Segmentation is lazy (`containing`), so finding a cut
 * costs a few segmenter lookups, not a pass over the whole text (about 0.5 µs per grapheme). A lookup costs
 * more as the text grows (V8 spends ~1 ns per code unit of the text on each), hence the views below.
 */
class Cuts {
  private readonly words: Intl.Segments;
  private readonly graphemes: Intl.Segments | undefined;
  private readonly simpleSuffix: boolean;

  constructor(
    private readonly text: string,
    private readonly suffix: string,
  ) {
    this.words = wordSegmenter.segment(maskNoSpaceScripts(text));
    this.graphemes = ONE_UNIT_GRAPHEMES.test(text) ? undefined : graphemeSegmenter.segment(text);
    this.simpleSuffix = ONE_UNIT_GRAPHEMES.test(suffix);
  }

  /** `end` (a word-segment end) is a grapheme boundary, and appending the suffix merges into no grapheme. */
  private isSafe(end: number): boolean {
    if (this.graphemes === undefined) {
      // ASCII: every offset is a boundary, and an ASCII suffix ("...") cannot merge into an ASCII character.
      return this.simpleSuffix || joinsCleanly(this.text.slice(end - 1, end), this.suffix);
    }
    if (end < this.text.length && this.graphemes.containing(end)?.index !== end) return false;
    const last = this.graphemes.containing(end - 1)?.segment ?? "";
    return joinsCleanly(last, this.suffix);
  }

  /** The largest cut offset ≤ `offset`, or 0 if there is none. */
  atOrBefore(offset: number): number {
    let p = Math.min(offset, this.text.length);
    while (p > 0) {
      const word = this.words.containing(p - 1);
      if (word === undefined) return 0;
      const end = word.index + word.segment.length;
      if (end <= p && !ENDS_WITH_WHITESPACE.test(word.segment) && this.isSafe(end)) return end;
      p = word.index;
    }
    return 0;
  }

  /** Every cut offset, ascending. */
  all(): number[] {
    const offsets: number[] = [];
    for (const { segment, index } of this.words) {
      const end = index + segment.length;
      if (!ENDS_WITH_WHITESPACE.test(segment) && this.isSafe(end)) offsets.push(end);
    }
    return offsets;
  }
}

/**
 * True when appending `suffix` to the grapheme `last` leaves `last` a grapheme of its own. It fails only for a
 * grapheme ending with a "Prepend" character (e.g. U+0600 ARABIC NUMBER SIGN), which would absorb the suffix.
 */
function joinsCleanly(last: string, suffix: string): boolean {
  if (suffix.length === 0) return true;
  const first = graphemeSegmenter
    .segment(last + suffix)
    [Symbol.iterator]()
    .next();
  return first.done === true || first.value.segment === last;
}

/**
 * Offsets at which `text` may be cut before `suffix` is appended, ascending: each is a grapheme boundary and
 * the end of a word segment that is not whitespace, so `text.slice(0, offset)` is non-empty and never ends
 * in a space. (Enumerates the whole text; `truncateToFit` looks up only the offsets it needs.)
 */
export function wordCutOffsets(text: string, suffix = ""): number[] {
  return new Cuts(text, suffix).all();
}

/** How far the first probe reaches (code units); each further probe reaches 4× as far. */
const FIRST_PROBE = 64;
/**
 * A probe segments only `text.slice(0, probe + VIEW_MARGIN)`: grapheme boundaries before the end of a slice
 * are exact, and word boundaries look ahead only a couple of characters (plus any combining marks).
 */
const VIEW_MARGIN = 64;

/**
 * The longest prefix of `text` cut at a grapheme-safe word boundary (see `wordCutOffsets`) such that
 * `fits(prefix + suffix)` holds, returned with the suffix; `undefined` if not even the first word fits.
 * Every grapheme of the prefix is a grapheme of `text`, and appending `suffix` merges into none of them.
 *
 * `fits` is expected to be monotone in the prefix length (a token count under a budget), but real BPE counts
 * are not perfectly monotone, so the search only ever accepts a candidate it has actually tested: the result
 * is guaranteed to satisfy `fits`, and is the longest one in the common case. The search gallops (64, 256,
 * … code units) until a probe does not fit, then bisects, so `fits` sees O(log n) candidates, none much
 * longer than the answer, and a long text is segmented only about as far as the answer.
 */
export function truncateToFit(
  text: string,
  suffix: string,
  fits: (candidate: string) => boolean,
): string | undefined {
  const verdicts = new Map<number, boolean>();
  let best: string | undefined;
  let bestCut = 0;

  /** Whether the largest cut ≤ offset fits (true when there is no cut yet: keep looking further). */
  const fitsUpTo = (cuts: Cuts, offset: number): boolean => {
    const cut = cuts.atOrBefore(offset);
    if (cut === 0) return true;
    let verdict = verdicts.get(cut);
    if (verdict === undefined) {
      const candidate = text.slice(0, cut) + suffix;
      verdict = fits(candidate);
      verdicts.set(cut, verdict);
      if (verdict && cut > bestCut) {
        best = candidate;
        bestCut = cut;
      }
    }
    return verdict;
  };

  // Invariant: fitsUpTo(lo) held (or lo = 0); fitsUpTo(hi) failed (or hi is past the end).
  let lo = 0;
  let hi = text.length + 1;
  let cuts: Cuts;
  for (let probe = FIRST_PROBE; ; probe *= 4) {
    if (probe + VIEW_MARGIN >= text.length) {
      cuts = new Cuts(text, suffix);
      break;
    }
    cuts = new Cuts(text.slice(0, probe + VIEW_MARGIN), suffix);
    if (!fitsUpTo(cuts, probe)) {
      hi = probe;
      break;
    }
    lo = probe;
  }
  while (hi - lo > 1) {
    const mid = lo + Math.floor((hi - lo) / 2);
    if (fitsUpTo(cuts, mid)) lo = mid;
    else hi = mid;
  }
  return best;
}
