import type { countTokens as CountTokens } from "gpt-tokenizer/cjs/encoding/o200k_base";
import type { TokenizerName } from "../../policy/schema";
import type { Tokenizer } from "../types";

export type BpeName = Exclude<TokenizerName, "approx">;

type CountFn = typeof CountTokens;

/**
 * Memory contents are untrusted text: a literal "<|endoftext|>" in a memory must be counted as the plain text
 * it is (several tokens), not rejected. gpt-tokenizer throws on special tokens unless they are allowed, so no
 * special token is disallowed and none is allowed: they are all encoded as ordinary text.
 */
const PLAIN_TEXT = Object.freeze({ disallowedSpecial: new Set<string>() });

/**
 * Loads the encoding's rank table (tens of milliseconds to parse, ~150 ms for o200k_base), so it is required
 * lazily, only for the encodings a policy actually uses. The literal paths keep bundlers able to see them.
 * `gpt-tokenizer/cjs/...` is used because this project resolves modules the classic Node way (no `exports`).
 */
function loadCounter(name: BpeName): CountFn {
  switch (name) {
    case "cl100k_base": {
      const mod: typeof import("gpt-tokenizer/cjs/encoding/cl100k_base") = require("gpt-tokenizer/cjs/encoding/cl100k_base");
      return mod.countTokens;
    }
    case "o200k_base": {
      const mod: typeof import("gpt-tokenizer/cjs/encoding/o200k_base") = require("gpt-tokenizer/cjs/encoding/o200k_base");
      return mod.countTokens;
    }
  }
}

/**
 * BPE merges within one pre-token cost time quadratic in its length: 50,000 "a"s take over a second (measured:
 * o200k_base 1.2 s, cl100k_base 1.2 s), which would block the event loop on one hostile memory. So runs of
 * non-whitespace longer than this are counted in chunks of this many characters (cut between code points).
 * Text without such runs — every ordinary text — is counted exactly as tiktoken does; a chunked run can only
 * count more tokens than whole (no merge crosses a cut), never fewer, and every count of a text goes through
 * this one function, so a budget measured with it stays strict.
 */
export const MAX_RUN = 256;
const LONG_RUN = new RegExp(`\\S{${MAX_RUN + 1},}`, "g");

function chunkedCount(text: string, countTokens: CountFn): number {
  // Too short to hold a long run: skip the scan (most texts counted are sentences and lines).
  if (text.length <= MAX_RUN) return countTokens(text, PLAIN_TEXT);
  LONG_RUN.lastIndex = 0;
  let match = LONG_RUN.exec(text);
  if (match === null) return countTokens(text, PLAIN_TEXT);
  let total = 0;
  let from = 0;
  while (match !== null) {
    if (match.index > from) total += countTokens(text.slice(from, match.index), PLAIN_TEXT);
    const end = match.index + match[0].length;
    let at = match.index;
    while (at < end) {
      let cut = Math.min(at + MAX_RUN, end);
      const last = text.charCodeAt(cut - 1);
      if (cut < end && last >= 0xd800 && last <= 0xdbff) cut -= 1; // never split a surrogate pair
      total += countTokens(text.slice(at, cut), PLAIN_TEXT);
      at = cut;
    }
    from = end;
    match = LONG_RUN.exec(text);
  }
  if (from < text.length) total += countTokens(text.slice(from), PLAIN_TEXT);
  return total;
}

/** A real byte-pair encoding (tiktoken-compatible counts) through gpt-tokenizer. */
export function createBpeTokenizer(name: BpeName): Tokenizer {
  const countTokens = loadCounter(name);
  return Object.freeze({
    name,
    count(text: string): number {
      return text.length === 0 ? 0 : chunkedCount(text, countTokens);
    },
  });
}
