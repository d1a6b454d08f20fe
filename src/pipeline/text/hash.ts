import { hash } from "node:crypto";

/**
 * Leading and trailing punctuation and whitespace. Seed 000 used `[^\w]`, which in JavaScript is ASCII-only:
 * it strips every Chinese, Korean, Arabic… character from both ends, so all CJK-only memories hash alike and
 * dedup collapses them into one. Unicode punctuation (\p{P}) is what "boundary punctuation" means. Symbols
 * (\p{S}: emoji, currency) are kept, so "👍" and "❤️" stay distinct.
 */
const LEADING_PUNCT = /^[\p{P}\s]+/u;
const PUNCT_OR_SPACE = /^[\p{P}\s]$/u;
/** Runs of 2+ whitespace, or one whitespace that is not a plain space: text with single spaces matches nothing. */
const WHITESPACE = /\s{2,}|[^\S ]/g;

function stripBoundaryPunct(s: string): string {
  const lead = LEADING_PUNCT.exec(s);
  const start = lead === null ? 0 : lead[0].length;
  let end = s.length;
  while (end > start) {
    const low = s.charCodeAt(end - 1);
    const width = low >= 0xdc00 && low <= 0xdfff && end - 2 >= start ? 2 : 1;
    if (!PUNCT_OR_SPACE.test(s.slice(end - width, end))) break;
    end -= width;
  }
  return start === 0 && end === s.length ? s : s.slice(start, end);
}

/** Seed 000's normalization: lowercase, NFKC, collapse whitespace, trim, strip boundary punctuation. */
export function normalizeForHash(text: string): string {
  return stripBoundaryPunct(text.toLowerCase().normalize("NFKC").replace(WHITESPACE, " ").trim());
}

/** Seed 000's `normalizeAndHash`: first 16 hex characters of SHA-256 of the normalized text. */
export function normalizeAndHash(text: string): string {
  return hash("sha256", normalizeForHash(text)).slice(0, 16);
}

/** Whether every code unit of `text` is ASCII (below 128). */
export function isAscii(text: string): boolean {
  for (let i = 0; i < text.length; i++) if (text.charCodeAt(i) >= 128) return false;
  return true;
}

/** ASCII code units by class: 1 whitespace (`\s`), 2 punctuation (`\p{P}`), 0 anything else. */
const ASCII_CLASS = new Uint8Array(128);
for (let c = 0; c < 128; c++) {
  const ch = String.fromCharCode(c);
  ASCII_CLASS[c] = /\s/.test(ch) ? 1 : /\p{P}/u.test(ch) ? 2 : 0;
}

/** FNV-1a over code units, 30 bits (a small integer in V8: never boxed as a Map key). */
const FNV_OFFSET = 0x811c9dc5 | 0;
const FNV_PRIME = 0x01000193;

/** The 30-bit FNV-1a hash of a string's code units: what `normalizedHashAscii` computes for its normal form. */
export function hashUnits(text: string): number {
  let h = FNV_OFFSET;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), FNV_PRIME);
  return h & 0x3fffffff;
}

/** The length of the normal form the last `normalizedHashAscii` call hashed. */
export let normalizedLengthAscii = 0;

/**
 * `hashUnits(normalizeForHash(text))` for an ASCII `text`, without building the normal form (its length is left
 * in `normalizedLengthAscii`). On ASCII, `normalizeForHash` is: A–Z lower-cased (NFKC changes nothing), each
 * run of whitespace one space, and everything before the first and after the last character that is neither
 * whitespace nor punctuation dropped (trim and the boundary strip) — which is what is read here.
 */
export function normalizedHashAscii(text: string): number {
  let first = 0;
  while (first < text.length && (ASCII_CLASS[text.charCodeAt(first)] ?? 0) !== 0) first++;
  let last = text.length - 1;
  while (last >= first && (ASCII_CLASS[text.charCodeAt(last)] ?? 0) !== 0) last--;
  let h = FNV_OFFSET;
  let length = 0;
  let space = false;
  for (let i = first; i <= last; i++) {
    const c = text.charCodeAt(i);
    if (ASCII_CLASS[c] === 1) {
      space = true;
      continue;
    }
    if (space) {
      h = Math.imul(h ^ 32, FNV_PRIME);
      length++;
      space = false;
    }
    h = Math.imul(h ^ (c >= 65 && c <= 90 ? c | 32 : c), FNV_PRIME);
    length++;
  }
  normalizedLengthAscii = length;
  return h & 0x3fffffff;
}
