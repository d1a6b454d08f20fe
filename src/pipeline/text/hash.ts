import { hash } from "node:crypto";
import { detached } from "./detach";
import { RecentCache } from "./recent";

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

/** Texts up to this long have their normal form remembered (`normalizedKey`). */
const MAX_KEPT_TEXT = 8192;
/** Per generation: at most 4,096 texts, keys and normal forms adding up to 4 M code units. */
const NORMALIZED = new RecentCache<string>(4096, 1 << 22);

/**
 * `normalizeForHash(text)`, remembered for the recent texts (the dedup stage's key): the same memories come back
 * request after request, and the normal form is a pure function of the text.
 */
export function normalizedKey(text: string): string {
  if (text.length > MAX_KEPT_TEXT) return normalizeForHash(text);
  let key = NORMALIZED.get(text);
  if (key === undefined) {
    // A copy: the normal form may be the text itself, or a slice of a larger string.
    key = detached(normalizeForHash(text));
    NORMALIZED.set(text, key, key.length);
  }
  return key;
}

/** Seed 000's `normalizeAndHash`: first 16 hex characters of SHA-256 of the normalized text. */
export function normalizeAndHash(text: string): string {
  return hash("sha256", normalizeForHash(text)).slice(0, 16);
}
