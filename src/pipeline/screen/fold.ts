/**
 * What a memory reads as to a model, for the injection detectors: characters that hide words from a pattern but
 * not from a model are taken out, and letters that look like Latin ones are read as Latin.
 *
 * - Taken out: invisible format characters (zero-width space and joiners, word joiner, soft hyphen, BOM, the
 *   Arabic letter mark, variation selectors), bidi controls (marks, embeddings, overrides, isolates), C0 and C1
 *   control characters but tab, line feed and carriage return, ANSI escape sequences whole (CSI `ESC [ … m`,
 *   OSC `ESC ] … BEL`, the two-character ones), and Unicode tag characters (U+E0000–U+E007F).
 * - Read as Latin: full-width ASCII (`ｉｇｎｏｒｅ`), mathematical alphanumerics (`𝐢𝐠𝐧𝐨𝐫𝐞`), circled letters,
 *   and the Cyrillic, Greek and Armenian letters that look like Latin ones (`іgnоrе` with Cyrillic і, о, е).
 *
 * The `display` reading is the second look, taken only when a text holds tag characters or a right-to-left
 * override or an escape sequence a terminal would hide text with: tag characters decoded to the ASCII they
 * spell (each run as a line of its own: it is a channel of its own), the text under an override (U+202E, up to
 * its pop, isolate end or line end) reversed, as it is shown, and what an escape sequence hides from a terminal
 * but not from a model kept (an OSC title's text, the letter `ESC[1Ignore` ends in). The detectors run on both
 * readings; what either finds is neutralized in the original.
 *
 * Every output code unit keeps the original range it came from, so a match maps back to exactly the original
 * characters (`ScanText.toOriginal`).
 */

const TAG_FIRST = 0xe0000;
const TAG_LAST = 0xe007f;
const RLO = 0x202e;

/** Lookalikes read as Latin (Cyrillic, Greek, Armenian; by code point). */
const LOOKALIKES: ReadonlyMap<number, number> = (() => {
  const pairs =
    // Cyrillic lower and upper case
    "аaеeоoрpсcуyхxіiјjѕsԁdһhԛqԝwӏlүyѵvкk" +
    "АAВBЕEКKМMНHОOРPСCТTХXЅSІIЈJҮYԚQԜWӀIԀDҺHѴV" +
    // Greek
    "ΑAΒBΕEΖZΗHΙIΚKΜMΝNΟOΡPΤTΥYΧXοoιiνvαaκkρpυuϲcϳjΤT" +
    // Armenian
    "օoսuհhոnցgզqԼL";
  const map = new Map<number, number>();
  for (let i = 0; i + 1 < pairs.length; i += 2) {
    const from = pairs.codePointAt(i) ?? 0;
    map.set(from, pairs.codePointAt(i + 1) ?? 0);
  }
  return map;
})();

/** The ASCII letter or digit a mathematical alphanumeric (U+1D400–U+1D7FF) or circled letter stands for. */
const COMPAT_LETTERS: ReadonlyMap<number, number> = (() => {
  const map = new Map<number, number>();
  const add = (first: number, last: number) => {
    for (let cp = first; cp <= last; cp++) {
      const n = String.fromCodePoint(cp).normalize("NFKC");
      const c = n.length === 1 ? n.charCodeAt(0) : -1;
      if ((c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a)) map.set(cp, c);
    }
  };
  add(0x1d400, 0x1d7ff);
  add(0x24b6, 0x24e9);
  add(0x2100, 0x214f);
  return map;
})();

/** A format or control character a model does not see as text (bidi controls included). */
function isInvisible(c: number): boolean {
  if (c < 0x20) return c !== 0x09 && c !== 0x0a && c !== 0x0d && c !== 0x0b && c !== 0x0c;
  if (c < 0x7f) return false;
  if (c <= 0x9f) return true;
  return (
    c === 0xad ||
    c === 0x61c ||
    c === 0x180e ||
    (c >= 0x200b && c <= 0x200f) ||
    (c >= 0x202a && c <= 0x202e) ||
    (c >= 0x2060 && c <= 0x206f) ||
    (c >= 0xfe00 && c <= 0xfe0f) ||
    c === 0xfeff ||
    (c >= 0xe0100 && c <= 0xe01ef)
  );
}

/**
 * True for a UTF-16 code unit that may start something `foldText` changes: what the features pass
 * (features.ts) marks as "hiding". High surrogates of the planes folded (mathematical alphanumerics, tags and
 * variation selectors) count, so an astral character is looked at as a whole by `foldText`.
 */
export function isHidingUnit(c: number): boolean {
  if (c === 0x09 || c === 0x0a || c === 0x0d || c === 0x0b || c === 0x0c) return false;
  if (c < 0xa0) return c < 0x20 || c >= 0x7f;
  if (isInvisible(c) || LOOKALIKES.has(c) || COMPAT_LETTERS.has(c)) return true;
  if (c === 0xd835 || c === 0xdb40) return true;
  if (c < 0xff02 || c > 0xff5e) return false;
  // Full-width letters, digits and the full-width forms of `< > | [ ] { } # / " '`; full-width `：！？（），`
  // are ordinary CJK punctuation.
  return (
    (c >= 0xff10 && c <= 0xff19) ||
    (c >= 0xff21 && c <= 0xff3d) ||
    (c >= 0xff41 && c <= 0xff5d) ||
    c === 0xff02 ||
    c === 0xff03 ||
    c === 0xff07 ||
    c === 0xff0f ||
    c === 0xff1c ||
    c === 0xff1e
  );
}

/** A folded reading: its code units, and for each the original range `[starts[i], ends[i])` it came from. */
export interface Folded {
  codes: Uint16Array;
  starts: Int32Array;
  ends: Int32Array;
  /** The text holds tag characters, a right-to-left override or an ambiguous escape: `display` differs. */
  layered: boolean;
  /** Whether the output is in original order (false when a `display` reading reversed a run). */
  ordered: boolean;
}

/** Per BMP code unit: 0 kept as it is, REMOVE taken out, else the code it is read as. */
const REMOVE = 0xffff;
const BMP = (() => {
  const table = new Uint16Array(0x10000);
  for (let c = 0; c < 0x10000; c++) {
    if (c >= 0xd800 && c <= 0xdfff) continue;
    if (isInvisible(c)) table[c] = REMOVE;
    else if (c >= 0xff01 && c <= 0xff5e) table[c] = c - 0xfee0;
    else table[c] = LOOKALIKES.get(c) ?? COMPAT_LETTERS.get(c) ?? 0;
  }
  return table;
})();

/**
 * The ANSI escape sequence at `i` (an ESC, or a C1 CSI): its length (at least 1), and what of it a model reads
 * but a terminal does not show (`keep`: the letter `ESC[1Ignore` ends in, the text of an OSC title or hyperlink),
 * which the display reading keeps. A CSI is parameters (0x30–0x3F) and one final byte (0x40–0x7E); OSC, DCS,
 * APC and PM run to BEL or ESC \, looked for once per text (`terminators`), so the reading stays linear.
 */
function escapeAt(
  text: string,
  i: number,
  terminators: { bel: number; st: number },
): { length: number; keep?: readonly [number, number] } {
  const c = text.charCodeAt(i);
  let j = i + 1;
  if (c === 0x9b || (c === 0x1b && text.charCodeAt(j) === 0x5b)) {
    if (c === 0x1b) j++;
    const limit = Math.min(text.length, j + 64);
    while (j < limit) {
      const d = text.charCodeAt(j);
      if (d >= 0x30 && d <= 0x3f) j++;
      else break;
    }
    const f = text.charCodeAt(j);
    if (f < 0x40 || f > 0x7e) return { length: j - i };
    const letter = (x: number) => (x >= 0x41 && x <= 0x5a) || (x >= 0x61 && x <= 0x7a);
    return letter(f) && letter(text.charCodeAt(j + 1))
      ? { length: j + 1 - i, keep: [j, j + 1] }
      : { length: j + 1 - i };
  }
  if (c !== 0x1b) return { length: 1 };
  const next = text.charCodeAt(j);
  if (next === 0x5d || next === 0x50 || next === 0x5f || next === 0x5e) {
    if (terminators.bel !== -1 && terminators.bel <= j) terminators.bel = text.indexOf("\u0007", j);
    if (terminators.st !== -1 && terminators.st <= j) terminators.st = text.indexOf("\u001b\\", j + 1);
    const { bel, st } = terminators;
    const end = bel !== -1 && (st === -1 || bel < st) ? bel : st;
    if (end === -1 || end - i > 2048) return { length: 2 };
    return { length: end + (end === bel ? 1 : 2) - i, keep: [j + 1, end] };
  }
  return { length: next >= 0x20 && next <= 0x7e ? 2 : 1 };
}

/**
 * One reading of `text` (see the top of this file): `display` false takes tag characters out, true decodes them,
 * reverses the text under right-to-left overrides and keeps the letter an ambiguous escape ends in.
 */
export function foldText(text: string, display: boolean): Folded {
  // Tag runs and OSC texts add at most one separator per two units.
  const size = text.length + (text.length >> 1) + 4;
  const codes = new Uint16Array(size);
  const starts = new Int32Array(size);
  const ends = new Int32Array(size);
  let n = 0;
  let layered = false;
  let ordered = true;
  /** Output index where the current override run starts, or -1. */
  let rtl = -1;
  let inTags = false;
  const terminators = { bel: 0, st: 0 };
  const push = (code: number, start: number, end: number) => {
    codes[n] = code;
    starts[n] = start;
    ends[n] = end;
    n++;
  };
  const endRun = () => {
    if (rtl === -1) return;
    reverseRun(codes, starts, ends, rtl, n);
    ordered = false;
    rtl = -1;
  };
  for (let i = 0; i < text.length; ) {
    const c = text.charCodeAt(i);
    if (c < 0xd800 || c > 0xdbff) {
      // A BMP character (or a lone low surrogate, kept).
      if (display && inTags) {
        push(0x0a, i, i);
        inTags = false;
      }
      const f = BMP[c] ?? 0;
      if (f === 0) {
        if (display && (c === 0x0a || c === 0x0d)) endRun();
        // The common case, written out.
        codes[n] = c;
        starts[n] = i;
        ends[n] = i + 1;
        n++;
        i++;
        continue;
      }
      if (c === 0x1b || c === 0x9b) {
        const { length, keep } = escapeAt(text, i, terminators);
        if (keep !== undefined && keep[1] > keep[0]) {
          layered = true;
          // A letter stays in its word; an OSC's text is a line of its own.
          const line =
            keep[1] - keep[0] > 1 || (text.charCodeAt(i) === 0x1b && text.charCodeAt(i + 1) === 0x5d);
          if (display) {
            if (line) push(0x0a, i, i);
            for (let k = keep[0]; k < keep[1]; k++) push(text.charCodeAt(k), k, k + 1);
            if (line) push(0x0a, i + length, i + length);
          }
        }
        i += length;
        continue;
      }
      if (c === RLO) {
        layered = true;
        if (display) {
          endRun();
          rtl = n;
        }
      } else if (display && (c === 0x202c || c === 0x2069)) endRun();
      if (f !== REMOVE) push(f, i, i + 1);
      i++;
      continue;
    }
    const cp = text.codePointAt(i) ?? c;
    if (cp >= TAG_FIRST && cp <= TAG_LAST) {
      layered = true;
      if (display) {
        if (!inTags) push(0x0a, i, i);
        inTags = true;
        const ascii = cp - TAG_FIRST;
        if (ascii >= 0x20 && ascii <= 0x7e) push(ascii, i, i + 2);
      }
      i += 2;
      continue;
    }
    if (display && inTags) {
      push(0x0a, i, i);
      inTags = false;
    }
    if (cp > 0xffff && isInvisible(cp)) {
      i += 2;
      continue;
    }
    const letter = COMPAT_LETTERS.get(cp);
    if (letter !== undefined) push(letter, i, i + 2);
    else if (cp > 0xffff) {
      push(c, i, i + 2);
      push(text.charCodeAt(i + 1), i, i + 2);
    } else push(c, i, i + 1);
    i += cp > 0xffff ? 2 : 1;
  }
  if (display) endRun();
  return {
    codes: codes.subarray(0, n),
    starts: starts.subarray(0, n),
    ends: ends.subarray(0, n),
    layered,
    ordered,
  };
}

/** Reverses code units `[from, to)` by code point (a surrogate pair stays in order). */
function reverseRun(
  codes: Uint16Array,
  starts: Int32Array,
  ends: Int32Array,
  from: number,
  to: number,
): void {
  codes.subarray(from, to).reverse();
  starts.subarray(from, to).reverse();
  ends.subarray(from, to).reverse();
  // Pairs came out low-high: swap them back.
  for (let k = from; k + 1 < to; k++) {
    const c = codes[k] ?? 0;
    const d = codes[k + 1] ?? 0;
    if (c >= 0xdc00 && c <= 0xdfff && d >= 0xd800 && d <= 0xdbff) {
      codes[k] = d;
      codes[k + 1] = c;
      k++;
    }
  }
}
