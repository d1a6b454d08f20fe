/**
 * Unicode character classes for the text scanners (sentence boundaries, relevance terms), read per code point
 * from one table: each BMP code unit is classified once, on first sight, with Unicode property regexes (the
 * engine's own tables, so the same answer on every host), and then costs one array read. A property regex per
 * character would be slow and allocate. Code points above the BMP are classified each time (they are rare).
 */

/** Set once a code unit is classified (so 0 means "not yet"). */
const KNOWN = 1;
/** `\p{L}` or `\p{M}`: a letter or a combining mark. */
export const LETTER_OR_MARK = 2;
/** `\p{N}`: any number character (digits, numerals, fractions). */
export const NUMBER = 4;
/** `\p{Lu}` or `\p{Lt}`. */
export const UPPER = 8;
/** `\p{Ll}`. */
export const LOWER = 16;
/** `\p{Nd}`: a decimal digit of any script. */
export const DIGIT = 32;
/** Han, Hiragana, Katakana or Hangul script, or the prolonged sound mark ー: written without spaces. */
export const CJK_SCRIPT = 64;
/** In the blocks of Han, kana and Hangul that `isCjk` names. */
export const CJK_BLOCK = 128;

/** Han, kana, Hangul by block: scripts written without spaces between words and sentences. */
export function isCjk(cp: number): boolean {
  return (
    (cp >= 0x3040 && cp <= 0x30ff) ||
    (cp >= 0x3400 && cp <= 0x4dbf) ||
    (cp >= 0x4e00 && cp <= 0x9fff) ||
    (cp >= 0xac00 && cp <= 0xd7af) ||
    (cp >= 0xf900 && cp <= 0xfaff) ||
    (cp >= 0x20000 && cp <= 0x3ffff)
  );
}

const TESTS: ReadonlyArray<[number, RegExp]> = [
  [LETTER_OR_MARK, /^[\p{L}\p{M}]$/u],
  [NUMBER, /^\p{N}$/u],
  [UPPER, /^[\p{Lu}\p{Lt}]$/u],
  [LOWER, /^\p{Ll}$/u],
  [DIGIT, /^\p{Nd}$/u],
  [CJK_SCRIPT, /^[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Hangul}\u30fc]$/u],
];

function classify(cp: number): number {
  const ch = String.fromCodePoint(cp);
  let bits = isCjk(cp) ? KNOWN | CJK_BLOCK : KNOWN;
  for (const [bit, test] of TESTS) if (test.test(ch)) bits |= bit;
  return bits;
}

const TABLE = new Uint8Array(0x10000);

/** The class bits of code point `cp` (a lone surrogate has none). */
export function classOf(cp: number): number {
  if (cp > 0xffff) return classify(cp);
  let bits = TABLE[cp] ?? 0;
  if (bits === 0) {
    bits = classify(cp);
    TABLE[cp] = bits;
  }
  return bits;
}
