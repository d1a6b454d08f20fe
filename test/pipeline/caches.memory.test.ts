/**
 * The process-wide caches of the text scanners (Porter2 stems, BPE piece counts) keep words, not the memories
 * they were read from: a slice of 13 code units or more is a view into its parent string in V8, so a cached
 * slice would keep a whole memory alive for as long as the cache holds it.
 */
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { detached } from "../../src/pipeline/text/detach";
import { normalizedKey } from "../../src/pipeline/text/hash";
import { relevanceTerms } from "../../src/pipeline/text/relevance";
import { getTokenizer } from "../../src/pipeline/tokenizers";

setFlagsFromString("--expose-gc");
const gc = runInNewContext("gc") as () => void;

/** Heap growth (MB) after `read` ran over 40 texts of ~1 MB, each with one unique long word, and a full GC. */
function retainedBy(read: (text: string) => unknown): number {
  gc();
  const before = process.memoryUsage().heapUsed;
  for (let i = 0; i < 40; i++) {
    // Letters only (a digit would end the word, and the piece): "zqxuniquewordaa", "…ab", … one per text.
    const word = `zqxuniqueword${String.fromCharCode(97 + Math.floor(i / 26), 97 + (i % 26))}`;
    read(`${"filler ".repeat(150_000)}${word} end.`);
  }
  gc();
  return (process.memoryUsage().heapUsed - before) / 1e6;
}

describe("scanner caches keep copies of words, not the texts they come from", () => {
  test("detached returns an equal string", () => {
    const parent = `${"x".repeat(100)}a long slice of text${"y".repeat(100)}`;
    const slice = parent.slice(100, 120);
    expect(detached(slice)).toBe(slice);
    expect(detached("short")).toBe("short");
  });

  test("Porter2 stems (relevance terms)", () => {
    expect(retainedBy((text) => relevanceTerms(text))).toBeLessThan(10);
  });

  test.each(["o200k_base", "cl100k_base"] as const)("BPE piece counts (%s)", (name) => {
    const tokenizer = getTokenizer(name);
    expect(retainedBy((text) => tokenizer.count(text))).toBeLessThan(10);
  });

  test("dedup's normal forms of slices (normalizedKey)", () => {
    expect(retainedBy((text) => normalizedKey(text.slice(text.length - 200)))).toBeLessThan(10);
  });

  test.each(["o200k_base", "cl100k_base"] as const)("BPE whole-text counts of slices (%s)", (name) => {
    const tokenizer = getTokenizer(name);
    // A memory-sized slice of each ~1 MB text (long enough to be kept): its count is kept, the text it was cut
    // from must not be.
    expect(retainedBy((text) => tokenizer.count(text.slice(text.length - 200)))).toBeLessThan(10);
  });
});
