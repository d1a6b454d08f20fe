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

  test("a run longer than MAX_RUN is counted in chunks: never fewer tokens than whole", () => {
    for (const run of ["a".repeat(50_000), "x7Q".repeat(1000), "咖啡".repeat(400), "😀".repeat(300)]) {
      const text = `before ${run} after`;
      const chunked = o200k.count(text);
      expect(chunked).toBeGreaterThanOrEqual(countTokens(`before ${run.slice(0, 2 * MAX_RUN)} after`));
      if (run.length <= 5000) expect(chunked).toBeGreaterThanOrEqual(countTokens(text));
    }
  });

  test("chunks never split a surrogate pair (an emoji run counts like its halves)", () => {
    const run = "😀".repeat(MAX_RUN); // 512 code units: cut at 256 would fall between code points only
    const odd = `x${run}`; // shifts every pair by one code unit: a naive cut would split one
    expect(o200k.count(odd)).toBe(
      countTokens(odd.slice(0, MAX_RUN - 1)) + countTokens(odd.slice(MAX_RUN - 1)),
    );
  });
});
