import { foldText } from "./fold";

/**
 * The text the injection detectors read (src/pipeline/screen/detectors.ts), and the facts about it that several
 * rules share, each computed at most once per memory and only when a rule asks for it.
 *
 * A text holding characters that hide words from a pattern but not from a model is read folded (./fold.ts):
 * invisible, bidi and control characters and ANSI escapes taken out, lookalike letters read as Latin; and, when
 * it holds tag characters or a right-to-left override, a second time as shown (`display`). Match positions are
 * mapped back to the original text, so `neutralize` replaces exactly the original characters.
 */

/** A half-open range `[start, end)` in UTF-16 code units. */
export type Span = readonly [start: number, end: number];

/** Code units to a string in one call (lone surrogates kept as they are: `ignoreBOM`, no replacement). */
const UTF16 = new TextDecoder("utf-16le", { ignoreBOM: true });

/** How a text is read: as it is, folded, or folded as shown (tag characters decoded, overrides reversed). */
export type Reading = "plain" | "folded" | "display";

export class ScanText {
  /** What the rules match against: the original, or its folded copy. */
  readonly text: string;
  /** Original range of each code unit of `text`, when `text` is a folded copy. */
  private readonly starts: Int32Array | undefined;
  private readonly ends: Int32Array | undefined;
  private readonly ordered: boolean;
  /** The text holds tag characters or a right-to-left override: a `display` reading differs from `folded`. */
  readonly layered: boolean;
  private codeSpans: Span[] | undefined;
  private closes: Map<string, number[]> | undefined;
  /**
   * Characters the span expansions (a JSON object around a match, a tag) may still read: a few times the
   * text, so that a text of thousands of unclosed `{` cannot make them quadratic. Spent, they keep the match.
   */
  private budget: number;

  constructor(
    readonly original: string,
    reading: Reading,
  ) {
    this.budget = 4 * original.length + 20_000;
    if (reading === "plain") {
      this.text = original;
      this.starts = undefined;
      this.ends = undefined;
      this.ordered = true;
      this.layered = false;
      return;
    }
    const folded = foldText(original, reading === "display");
    this.text = UTF16.decode(folded.codes);
    this.starts = folded.starts;
    this.ends = folded.ends;
    this.ordered = folded.ordered;
    this.layered = folded.layered;
  }

  /** Takes `chars` from the expansion budget; false (and nothing taken) when it does not hold that many. */
  spend(chars: number): boolean {
    if (chars > this.budget) return false;
    this.budget -= chars;
    return true;
  }

  /** The span of `text` `[start, end)` as a span of the original (the smallest covering every unit of it). */
  toOriginal(start: number, end: number): Span {
    const { starts, ends } = this;
    if (starts === undefined || ends === undefined) return [start, end];
    if (end <= start) {
      const at = starts[start] ?? this.original.length;
      return [at, at];
    }
    if (this.ordered) return [starts[start] ?? 0, ends[end - 1] ?? this.original.length];
    let lo = this.original.length;
    let hi = 0;
    for (let i = start; i < end; i++) {
      lo = Math.min(lo, starts[i] ?? lo);
      hi = Math.max(hi, ends[i] ?? hi);
    }
    return [lo, Math.max(lo, hi)];
  }

  /**
   * True when `pos` is inside a Markdown code span or fenced block (between two runs of the same number of
   * backticks): HTML there is shown, not run. Runs are paired left to right in one pass.
   */
  inCode(pos: number): boolean {
    if (this.codeSpans === undefined) this.codeSpans = findCodeSpans(this.text);
    const spans = this.codeSpans;
    // The last span starting at or before `pos` (spans are ascending and disjoint).
    let lo = 0;
    let hi = spans.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if ((spans[mid]?.[0] ?? 0) <= pos) lo = mid + 1;
      else hi = mid;
    }
    const span = spans[lo - 1];
    return span !== undefined && pos < span[1];
  }

  /**
   * Start offsets, ascending, of every match of `re` (global, case-insensitive) in `text`, computed once per
   * key: e.g. where `</script` occurs, so each `<script` finds its end with a binary search, not a rescan.
   */
  positions(key: string, re: RegExp): number[] {
    if (this.closes === undefined) this.closes = new Map();
    let list = this.closes.get(key);
    if (list === undefined) {
      list = [];
      re.lastIndex = 0;
      for (let m = re.exec(this.text); m !== null; m = re.exec(this.text)) {
        list.push(m.index);
        if (m[0].length === 0) re.lastIndex++;
      }
      re.lastIndex = 0;
      this.closes.set(key, list);
    }
    return list;
  }
}

/** The first element of the ascending `list` that is ≥ `min`, or undefined. */
export function firstAtLeast(list: readonly number[], min: number): number | undefined {
  let lo = 0;
  let hi = list.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if ((list[mid] ?? 0) < min) lo = mid + 1;
    else hi = mid;
  }
  return list[lo];
}

/** Backtick-delimited ranges (inline code and fences), each including its delimiters. Linear. */
function findCodeSpans(text: string): Span[] {
  if (!text.includes("`")) return [];
  const runs: Array<{ at: number; len: number }> = [];
  for (let i = 0; i < text.length; ) {
    if (text.charCodeAt(i) !== 0x60) {
      i++;
      continue;
    }
    const start = i;
    while (text.charCodeAt(i) === 0x60) i++;
    runs.push({ at: start, len: i - start });
  }
  // For each run, the index of the next run of the same length (one backward pass).
  const next = new Int32Array(runs.length).fill(-1);
  const lastOfLength = new Map<number, number>();
  for (let r = runs.length - 1; r >= 0; r--) {
    const run = runs[r];
    if (run === undefined) continue;
    next[r] = lastOfLength.get(run.len) ?? -1;
    lastOfLength.set(run.len, r);
  }
  const spans: Span[] = [];
  for (let r = 0; r < runs.length; ) {
    const open = runs[r];
    const close = next[r] ?? -1;
    if (open === undefined || close === -1) {
      r++;
      continue;
    }
    const end = runs[close];
    if (end === undefined) break;
    spans.push([open.at, end.at + end.len]);
    r = close + 1;
  }
  return spans;
}
