import type { Tokenizer } from "../types";

/**
 * Seed 000's estimate: one token per four UTF-16 code units, rounded up. Fast and monotone, but it undercounts
 * CJK about 4–4.5× and emoji-heavy text about 2.6× against real encodings (docs/policy.md#budget).
 */
export function createApproxTokenizer(): Tokenizer {
  return Object.freeze({
    name: "approx" as const,
    count(text: string): number {
      return Math.ceil(text.length / 4);
    },
  });
}
