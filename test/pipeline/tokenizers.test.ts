import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import fc from "fast-check";
import { getTokenizer, warmTokenizers } from "../../src/pipeline/tokenizers";
import { MAX_RUN } from "../../src/pipeline/tokenizers/bpe";
import { TOKENIZERS } from "../../src/policy/schema";

describe("approx tokenizer (seed 000: ceil(chars / 4))", () => {
  const approx = getTokenizer("approx");

  test.each([
    ["", 0],
    ["a", 1],
    ["abcd", 1],
    ["abcde", 2],
    ["hello world", 3],
    ["👨‍👩‍👧", 2], // 8 UTF-16 code units
  ])("count(%j) = %i", (text, expected) => {
    expect(approx.count(text)).toBe(expected);
  });

  test("400 characters are 100 tokens, 401 are 101", () => {
    expect(approx.count("x".repeat(400))).toBe(100);
    expect(approx.count("x".repeat(401))).toBe(101);
  });
});

describe("BPE tokenizers", () => {
  // Pinned counts (tiktoken-compatible encodings through gpt-tokenizer).
  test.each([
    ["hello world", 2, 2],
    ["The quick brown fox jumps over the lazy dog.", 10, 10],
    ["我喜欢吃北京烤鸭。", 15, 8],
    ["안녕하세요 세계", 9, 3],
    ["👨‍👩‍👧", 13, 8],
    ["🇫🇷", 6, 4],
    ["", 0, 0],
  ])("count(%j): cl100k_base %i, o200k_base %i", (text, cl100k, o200k) => {
    expect(getTokenizer("cl100k_base").count(text)).toBe(cl100k);
    expect(getTokenizer("o200k_base").count(text)).toBe(o200k);
  });

  test.each(["cl100k_base", "o200k_base"] as const)(
    "%s counts special-token text as plain text instead of throwing",
    (name) => {
      const tokenizer = getTokenizer(name);
      expect(tokenizer.count("<|endoftext|>")).toBe(7);
      expect(tokenizer.count("before <|im_start|>system<|im_end|> after")).toBeGreaterThan(5);
    },
  );

  test.each(["cl100k_base", "o200k_base"] as const)("%s survives lone surrogates", (name) => {
    expect(getTokenizer(name).count("a\uD800b\uDC00c")).toBeGreaterThan(0);
  });
});

describe("instances", () => {
  test.each(TOKENIZERS)("getTokenizer(%s) returns one shared instance with that name", (name) => {
    const first = getTokenizer(name);
    expect(first.name).toBe(name);
    expect(getTokenizer(name)).toBe(first);
  });

  test("instances are immutable", () => {
    expect(Object.isFrozen(getTokenizer("approx"))).toBe(true);
    expect(Object.isFrozen(getTokenizer("o200k_base"))).toBe(true);
  });

  test("warmTokenizers loads each named encoding once and reports a timing for it", () => {
    const before = getTokenizer("cl100k_base");
    const timings = warmTokenizers(["cl100k_base", "approx", "cl100k_base"]);
    expect(timings.map((t) => t.name)).toEqual(["cl100k_base", "approx"]);
    for (const t of timings) expect(t.ms).toBeGreaterThanOrEqual(0);
    expect(getTokenizer("cl100k_base")).toBe(before);
  });

  test("an unknown name is a clear error", () => {
    expect(() => getTokenizer("p50k_base" as never)).toThrow(/unknown tokenizer "p50k_base"/);
  });
});

describe("BPE counting of long runs without whitespace", () => {
  const { countTokens } =
    require("gpt-tokenizer/cjs/encoding/o200k_base") as typeof import("gpt-tokenizer/cjs/encoding/o200k_base");
  const o200k = getTokenizer("o200k_base");

  test("ordinary text is counted exactly as tiktoken counts it", () => {
    const text =
      "Ana usually orders an oat milk flat white. 她每天早上喝咖啡。 https://example.com/a?b=1 👨‍👩‍👧";
    expect(o200k.count(text)).toBe(countTokens(text));
  });

  test("a run longer than MAX_RUN is counted in chunks (these runs: no fewer tokens than whole)", () => {
    for (const run of ["a".repeat(50_000), "x7Q".repeat(1000), "咖啡".repeat(400), "😀".repeat(300)]) {
      const text = `before ${run} after`;
      const chunked = o200k.count(text);
      expect(chunked).toBeGreaterThanOrEqual(countTokens(`before ${run.slice(0, 2 * MAX_RUN)} after`));
      if (run.length <= 5000) expect(chunked).toBeGreaterThanOrEqual(countTokens(text));
    }
  });

  test("chunks never split a surrogate pair (an emoji piece counts like its halves)", () => {
    // " 😀😀…" is one piece of the pre-tokenizer (a space and symbols), 513 code units: a cut at 256 would
    // fall inside a pair, so the first chunk ends at 255.
    const piece = ` ${"😀".repeat(MAX_RUN)}`;
    expect(o200k.count(piece)).toBe(
      countTokens(piece.slice(0, MAX_RUN - 1)) +
        countTokens(piece.slice(MAX_RUN - 1, 2 * MAX_RUN - 1)) +
        countTokens(piece.slice(2 * MAX_RUN - 1)),
    );
  });

  test("a long run of whitespace is one piece, counted in chunks too (whole, 50,000 spaces take 1.6 s)", () => {
    // Pieces of "a" + 50,000 spaces + "b": "a", 49,999 spaces (`\s+(?!\S)`), " b"; the spaces in chunks of MAX_RUN.
    const spaces = 49_999;
    const chunks = Math.floor(spaces / MAX_RUN);
    const expected =
      countTokens("a") +
      chunks * countTokens(" ".repeat(MAX_RUN)) +
      countTokens(" ".repeat(spaces - chunks * MAX_RUN)) +
      countTokens(" b");
    expect(o200k.count(`a${" ".repeat(spaces + 1)}b`)).toBe(expected);
  });
});

describe("BPE counting piece by piece equals gpt-tokenizer's count of the whole text", () => {
  const libraries = {
    o200k_base: (
      require("gpt-tokenizer/cjs/encoding/o200k_base") as typeof import("gpt-tokenizer/cjs/encoding/o200k_base")
    ).countTokens,
    cl100k_base: (
      require("gpt-tokenizer/cjs/encoding/cl100k_base") as typeof import("gpt-tokenizer/cjs/encoding/cl100k_base")
    ).countTokens,
  };
  const plain = { disallowedSpecial: new Set<string>() };
  /** Pieces of chat text that stress the pre-tokenizer: contractions, case, digits, scripts, spaces, breaks. */
  const bits = fc.constantFrom(
    "Hello",
    "world",
    "I'm",
    "we'll",
    "THEY'RE",
    "don't",
    "McDonald's",
    "iPhone",
    "x",
    "Q",
    "42",
    "1234567",
    "3.14",
    "v1.2.3",
    "$9.99",
    "e-mail",
    "a@b.co",
    "https://ex.am/p?q=1",
    "—",
    "...",
    "!!",
    "?",
    "(",
    ")",
    "«",
    "»",
    "„",
    "“",
    "’s",
    "咖啡",
    "我喜欢",
    "東京に住んでいて",
    "안녕하세요",
    "Ünïcödé",
    "naïve",
    "café",
    "ｆｕｌｌ",
    "١٢٣",
    "مرحبا",
    "😀",
    "👨‍👩‍👧",
    "🇫🇷",
    "<|endoftext|>",
    " ",
    "  ",
    "   ",
    "\t",
    "\n",
    "\n\n",
    "\r\n",
    " \n ",
    "\u00a0",
    "\u3000",
    "\u200b",
  );
  const chatText = fc.array(bits, { maxLength: 40 }).map((parts) => parts.join(""));

  test.each(["o200k_base", "cl100k_base"] as const)(
    "%s: on generated chat text and arbitrary strings",
    (name) => {
      const tokenizer = getTokenizer(name);
      const library = libraries[name];
      fc.assert(
        fc.property(fc.oneof(chatText, fc.string({ unit: "binary", maxLength: 120 })), (text) => {
          expect(tokenizer.count(text)).toBe(library(text, plain));
          // Counting again (every piece now remembered) gives the same.
          expect(tokenizer.count(text)).toBe(library(text, plain));
        }),
        { numRuns: 1500 },
      );
    },
  );

  test("on every memory of the golden set", () => {
    const lines = readFileSync(resolve(__dirname, "../../eval/golden/basic/memories.jsonl"), "utf8").split(
      "\n",
    );
    const contents = lines
      .filter((l) => l.startsWith("{"))
      .map((l) => (JSON.parse(l) as { content: string }).content);
    expect(contents.length).toBeGreaterThan(300);
    for (const name of ["o200k_base", "cl100k_base"] as const) {
      const tokenizer = getTokenizer(name);
      for (const content of contents)
        expect([content, tokenizer.count(content)]).toEqual([content, libraries[name](content, plain)]);
    }
  });
});
