/**
 * RecentCache (src/pipeline/text/recent.ts): the bounded two-generation cache behind the BPE tokenizer's
 * whole-text counts.
 */

import { countTokens as cl100kCount } from "gpt-tokenizer/cjs/encoding/cl100k_base";
import { countTokens as o200kCount } from "gpt-tokenizer/cjs/encoding/o200k_base";
import { clearRecentCaches, RecentCache } from "../../src/pipeline/text/recent";
import { getTokenizer } from "../../src/pipeline/tokenizers";

describe("RecentCache", () => {
  test("holds at most two generations of maxEntries", () => {
    const cache = new RecentCache<number>(3, 1_000);
    for (let i = 0; i < 10; i++) cache.set(`k${i}`, i);
    expect(cache.size).toBeLessThanOrEqual(6);
    // Generations of three: 0–2, 3–5, 6–8, then 9 alone. The current one holds 9, the previous one 6–8; the
    // older ones are gone.
    expect([0, 1, 2, 3, 4, 5].map((i) => cache.get(`k${i}`))).toEqual(new Array(6).fill(undefined));
    expect([9, 8, 7, 6].map((i) => cache.get(`k${i}`))).toEqual([9, 8, 7, 6]);
  });

  test("an entry read from the previous generation moves to the current one and survives the next turn", () => {
    const cache = new RecentCache<number>(2, 1_000);
    cache.set("a", 1);
    cache.set("b", 2);
    cache.set("c", 3); // a, b are now the previous generation
    expect(cache.get("a")).toBe(1); // promoted: current = c, a
    cache.set("d", 4); // current full: previous = c, a; current = d
    cache.set("e", 5);
    expect(cache.get("a")).toBe(1);
    expect(cache.get("b")).toBeUndefined();
  });

  test("turns over when the keys' code units reach maxUnits", () => {
    const cache = new RecentCache<number>(1_000, 10);
    cache.set("aaaaaa", 1);
    cache.set("bbbbbb", 2); // 12 units > 10: "aaaaaa" goes to the previous generation
    cache.set("cccccc", 3); // and then out
    expect(cache.get("aaaaaa")).toBeUndefined();
    expect(cache.get("bbbbbb")).toBe(2);
    expect(cache.get("cccccc")).toBe(3);
  });
});

test("clearRecentCaches empties every cache", () => {
  const a = new RecentCache<number>(10, 100);
  const b = new RecentCache<string>(10, 100);
  a.set("x", 1);
  b.set("y", "z");
  clearRecentCaches();
  expect(a.size + b.size).toBe(0);
  expect(a.get("x")).toBeUndefined();
});

describe("BPE whole-text counts", () => {
  test.each(["o200k_base", "cl100k_base"] as const)(
    "%s: a count read from the cache is the count, for a text and its slices",
    (name) => {
      const tokenizer = getTokenizer(name);
      // Long enough to be kept (128 code units or more; checked below), with a sentence that is not.
      const text =
        "Maya: I finally booked the trip to Lisbon. The doctor said my blood pressure is fine, and we fly out on the 14th of May at 9:40!";
      expect(text.length).toBeGreaterThanOrEqual(128);
      const first = tokenizer.count(text);
      const sentence = text.slice(6, 42);
      const sentenceFirst = tokenizer.count(sentence);
      // Fresh strings with the same contents (no shared string object) hit the cache and agree.
      expect(tokenizer.count(`${text.slice(0, 10)}${text.slice(10)}`)).toBe(first);
      expect(tokenizer.count(text.slice(6, 42))).toBe(sentenceFirst);
      expect(first).toBeGreaterThan(sentenceFirst);
      // …and the cached counts are gpt-tokenizer's own, not only what the cache stored (this text has no special
      // tokens, so memgate's count is the library's).
      const reference = name === "o200k_base" ? o200kCount : cl100kCount;
      expect(tokenizer.count(`${text.slice(0, 7)}${text.slice(7)}`)).toBe(reference(text));
      expect(tokenizer.count(text.slice(6, 42))).toBe(reference(text.slice(6, 42)));
    },
  );
});
