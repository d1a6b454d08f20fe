import { createHash } from "node:crypto";

/**
 * Leading and trailing punctuation and whitespace. Seed 000 used `[^\w]`, which in JavaScript is ASCII-only:
 * it strips every Chinese, Korean, Arabic… character from both ends, so all CJK-only memories hash alike and
 * dedup collapses them into one. Unicode punctuation (\p{P}) is what "boundary punctuation" means. Symbols
 * (\p{S}: emoji, currency) are kept, so "👍" and "❤️" stay distinct.
 */
const BOUNDARY_PUNCT = /^[\p{P}\s]+|[\p{P}\s]+$/gu;
const WHITESPACE = /\s+/g;

/** Seed 000's normalization: lowercase, NFKC, collapse whitespace, trim, strip boundary punctuation. */
export function normalizeForHash(text: string): string {
  return text.toLowerCase().normalize("NFKC").replace(WHITESPACE, " ").trim().replace(BOUNDARY_PUNCT, "");
}

/** Seed 000's `normalizeAndHash`: first 16 hex characters of SHA-256 of the normalized text. */
export function normalizeAndHash(text: string): string {
  return createHash("sha256").update(normalizeForHash(text)).digest("hex").slice(0, 16);
}
