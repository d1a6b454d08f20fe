import { performance } from "node:perf_hooks";
import { TOKENIZERS, type TokenizerName } from "../../policy/schema";
import type { Tokenizer } from "../types";
import { createApproxTokenizer } from "./approx";
import { createBpeTokenizer } from "./bpe";

/** One instance per encoding per process: loading BPE ranks is slow, counting with them is not. */
const instances = new Map<TokenizerName, Tokenizer>();

function create(name: TokenizerName): Tokenizer {
  switch (name) {
    case "approx":
      return createApproxTokenizer();
    case "cl100k_base":
    case "o200k_base":
      return createBpeTokenizer(name);
    default:
      throw new Error(
        `unknown tokenizer "${String(name satisfies never)}"; expected one of ${TOKENIZERS.join(", ")}`,
      );
  }
}

/** The shared tokenizer for `name`, created on first use and reused for the life of the process. */
export function getTokenizer(name: TokenizerName): Tokenizer {
  let tokenizer = instances.get(name);
  if (tokenizer === undefined) {
    tokenizer = create(name);
    instances.set(name, tokenizer);
  }
  return tokenizer;
}

export interface WarmupTiming {
  name: TokenizerName;
  /** Milliseconds spent loading the encoding and counting a first text (near 0 when it was already loaded). */
  ms: number;
}

/**
 * Loads the given encodings up front (at boot, for the tokenizers the loaded policies name) so the first
 * request does not pay for parsing the rank tables. Returns how long each took, for the boot log.
 */
export function warmTokenizers(names: readonly TokenizerName[] = TOKENIZERS): WarmupTiming[] {
  const timings: WarmupTiming[] = [];
  for (const name of new Set(names)) {
    const start = performance.now();
    getTokenizer(name).count("warm up: the quick brown fox");
    timings.push({ name, ms: Math.round((performance.now() - start) * 10) / 10 });
  }
  return timings;
}
