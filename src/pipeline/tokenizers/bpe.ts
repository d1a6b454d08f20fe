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

/** A real byte-pair encoding (tiktoken-compatible counts) through gpt-tokenizer. */
export function createBpeTokenizer(name: BpeName): Tokenizer {
  const countTokens = loadCounter(name);
  return Object.freeze({
    name,
    count(text: string): number {
      return text.length === 0 ? 0 : countTokens(text, PLAIN_TEXT);
    },
  });
}
