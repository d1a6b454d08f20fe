/**
 * Case-folded reading of plain ASCII without lower-casing a copy: the rank stage's name signal and the
 * sufficiency certificate's missing names look for a lower-case name in memories, most of them plain ASCII
 * or holding the name (or not) in ASCII.
 */

/** Whether every code unit of `text` is below 128. */
export function isAscii(text: string): boolean {
  for (let i = 0; i < text.length; i++) if (text.charCodeAt(i) >= 128) return false;
  return true;
}

/** The code unit at `i`, A–Z folded to a–z. */
export function lowerAt(text: string, i: number): number {
  const c = text.charCodeAt(i);
  return c >= 65 && c <= 90 ? c | 32 : c;
}

/** The characters outside ASCII whose lower case holds ASCII (U+0130 İ → "i̇", U+212A KELVIN SIGN → "k"). */
export const LOWER_CASE_TO_ASCII = ["\u0130", "\u212a"] as const;

/** Whether the lower-case ASCII `needle` stands in `haystack` with A–Z folded (an empty one always does). */
export function holdsFolded(haystack: string, needle: string): boolean {
  const m = needle.length;
  const last = haystack.length - m;
  outer: for (let i = 0; i <= last; i++) {
    for (let k = 0; k < m; k++) if (lowerAt(haystack, i + k) !== needle.charCodeAt(k)) continue outer;
    return true;
  }
  return false;
}

/**
 * Whether `haystack.toLowerCase()` can hold the non-empty lower-case ASCII `needle`: only when `needle` is in
 * `haystack` with A–Z folded, or `haystack` holds one of `LOWER_CASE_TO_ASCII` (every other character's lower
 * case is ASCII only if it is ASCII: test/pipeline/rank.test.ts checks the whole of Unicode). False spares
 * lower-casing a copy of a memory that cannot hold the needle.
 */
export function mayHoldAscii(haystack: string, needle: string): boolean {
  return holdsLowerCaseToAscii(haystack) || holdsFolded(haystack, needle);
}

/** Whether `text` holds one of `LOWER_CASE_TO_ASCII`. */
export function holdsLowerCaseToAscii(text: string): boolean {
  for (const c of LOWER_CASE_TO_ASCII) if (text.includes(c)) return true;
  return false;
}
