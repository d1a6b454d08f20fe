import type { countTokens as CountTokens } from "gpt-tokenizer/cjs/encoding/o200k_base";
import type { TokenizerName } from "../../policy/schema";
import { detached } from "../text/detach";
import { RecentCache } from "../text/recent";
import type { Tokenizer } from "../types";

export type BpeName = Exclude<TokenizerName, "approx">;

type CountFn = typeof CountTokens;

/**
 * Memory contents are untrusted text: a literal "<|endoftext|>" in a memory must be counted as the plain text
 * it is (several tokens), not rejected. gpt-tokenizer throws on special tokens unless they are allowed, so no
 * special token is disallowed and none is allowed: they are all encoded as ordinary text.
 */
const PLAIN_TEXT = Object.freeze({ disallowedSpecial: new Set<string>() });

interface Encoding {
  countTokens: CountFn;
  /** The encoding's pre-tokenizer (tiktoken's split pattern): BPE merges never cross its pieces. */
  split: RegExp;
}

/**
 * Loads the encoding's rank table (tens of milliseconds to parse, ~150 ms for o200k_base), so it is required
 * lazily, only for the encodings a policy actually uses. The literal paths keep bundlers able to see them.
 * `gpt-tokenizer/cjs/...` is used because this project resolves modules the classic Node way (no `exports`).
 */
function loadEncoding(name: BpeName): Encoding {
  const patterns: typeof import("gpt-tokenizer/cjs/encodingParams/constants") = require("gpt-tokenizer/cjs/encodingParams/constants");
  switch (name) {
    case "cl100k_base": {
      const mod: typeof import("gpt-tokenizer/cjs/encoding/cl100k_base") = require("gpt-tokenizer/cjs/encoding/cl100k_base");
      return { countTokens: mod.countTokens, split: sticky(patterns.CL100K_TOKEN_SPLIT_REGEX) };
    }
    case "o200k_base": {
      const mod: typeof import("gpt-tokenizer/cjs/encoding/o200k_base") = require("gpt-tokenizer/cjs/encoding/o200k_base");
      return { countTokens: mod.countTokens, split: sticky(patterns.O200K_TOKEN_SPLIT_REGEX) };
    }
  }
}

/** The same pattern, matched only where it is told to start (so `test` walks the pieces without allocating). */
function sticky(pattern: RegExp): RegExp {
  return new RegExp(pattern.source, `${pattern.flags.replace(/[gy]/g, "")}y`);
}

/**
 * BPE merges within one piece cost time quadratic in its length: 50,000 "a"s take over a second (measured:
 * o200k_base 1.2 s, cl100k_base 1.2 s; 50,000 spaces 1.6 s), which would block the event loop on one hostile
 * memory. So a piece longer than this is counted in chunks of this many code units (cut between code points).
 * Text without such pieces — every ordinary text — is counted exactly as tiktoken does; a chunked piece's count
 * can differ from its count whole by a token or so either way (a cut changes which merges apply), and every
 * count of a text goes through this one function, so a budget measured with it stays strict.
 */
export const MAX_RUN = 256;

/**
 * Pieces' counts are kept for up to this many pieces adding up to at most this many code units (then the table
 * starts afresh): a few MB at most, like gpt-tokenizer's own cache of 100,000 merges. Ordinary text has far
 * fewer distinct pieces than that (words recur), so in practice the table fills once and stays.
 */
const MAX_CACHED_PIECES = 100_000;
const MAX_CACHED_UNITS = 1 << 20;

/**
 * Whole texts' counts (a memory, a clipped memory, a long sentence) are kept in a bounded cache of the recent ones
 * (../text/recent.ts) shared by every request: the same memories come back request after request (and within
 * one request: the budget's relative measure, the budget's clipped texts, the expansion round's second run), and
 * the count of a text is a pure function of it, so a count read from here is the count. Texts longer than
 * `MAX_CACHED_TEXT` code units are never kept (a hostile 1 MB memory stays out), nor texts shorter than
 * `MIN_CACHED_TEXT` (most single sentences: the request index keeps those counts per memory, and copying them
 * into this cache cost more than it saved); each of the cache's two generations holds at most
 * `MAX_CACHED_TEXTS` texts of `MAX_CACHED_TEXT_UNITS` code units in all (a few MB).
 */
const MAX_CACHED_TEXT = 4096;
const MIN_CACHED_TEXT = 128;
const MAX_CACHED_TEXTS = 20_000;
const MAX_CACHED_TEXT_UNITS = 1 << 21;

/**
 * A real byte-pair encoding (tiktoken-compatible counts) through gpt-tokenizer. A text is cut into the
 * encoding's own pieces (its pre-tokenizer pattern), and the count of a text is the sum of its pieces'
 * counts, each piece counted by gpt-tokenizer once and then remembered: words repeat, so most pieces are
 * a table read, and nothing is allocated per piece but its string (the library's own `countTokens` builds a
 * match array for every piece, ~0.6 MB for 40 memories). The sum equals gpt-tokenizer's count of the whole
 * text (test/pipeline/tokenizers.test.ts checks it on arbitrary text); should the pattern ever fail to cover
 * a text, that text is counted by gpt-tokenizer whole.
 */
export function createBpeTokenizer(name: BpeName): Tokenizer {
  const { countTokens, split } = loadEncoding(name);
  const pieces = new Map<string, number>();
  let cachedUnits = 0;

  function countPiece(piece: string): number {
    let n = pieces.get(piece);
    if (n !== undefined) return n;
    // A copy, both as the key and for gpt-tokenizer (whose own merge cache keeps slices of what it counts):
    // the slice would keep its whole text alive.
    const own = detached(piece);
    n = own.length > MAX_RUN ? countInChunks(own) : countTokens(own, PLAIN_TEXT);
    if (pieces.size >= MAX_CACHED_PIECES || cachedUnits + own.length > MAX_CACHED_UNITS) {
      pieces.clear();
      cachedUnits = 0;
    }
    pieces.set(own, n);
    cachedUnits += own.length;
    return n;
  }

  function countInChunks(piece: string): number {
    let total = 0;
    for (let at = 0; at < piece.length; ) {
      let cut = Math.min(at + MAX_RUN, piece.length);
      const last = piece.charCodeAt(cut - 1);
      if (cut < piece.length && last >= 0xd800 && last <= 0xdbff) cut -= 1; // never split a surrogate pair
      total += countTokens(piece.slice(at, cut), PLAIN_TEXT);
      at = cut;
    }
    return total;
  }

  function count(text: string): number {
    let total = 0;
    let at = 0;
    while (at < text.length) {
      split.lastIndex = at;
      if (!split.test(text) || split.lastIndex <= at) return countInChunks(text);
      const end = split.lastIndex;
      total += countPiece(at === 0 && end === text.length ? text : text.slice(at, end));
      at = end;
    }
    return total;
  }

  const texts = new RecentCache<number>(MAX_CACHED_TEXTS, MAX_CACHED_TEXT_UNITS);

  return Object.freeze({
    name,
    count(text: string): number {
      if (text.length === 0) return 0;
      if (text.length > MAX_CACHED_TEXT || text.length < MIN_CACHED_TEXT) return count(text);
      let n = texts.get(text);
      if (n === undefined) {
        n = count(text);
        texts.set(text, n);
      }
      return n;
    },
  });
}
