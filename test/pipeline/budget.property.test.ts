import fc from "fast-check";
import { budgetStage, countTotalTokens } from "../../src/pipeline/stages/budget";
import { getTokenizer } from "../../src/pipeline/tokenizers";
import type { StageContext, WorkItem } from "../../src/pipeline/types";
import { TOKENIZERS } from "../../src/policy/schema";
import { makeItem, makePolicy } from "../helpers/items";

const segmenter = new Intl.Segmenter("en", { granularity: "grapheme" });
const graphemesOf = (text: string): string[] => Array.from(segmenter.segment(text), (s) => s.segment);

/** Pieces that stress grapheme and word segmentation, joined in any order. */
const TRICKY_UNITS = [
  " ",
  "  ",
  "\n",
  "\r\n",
  "\t",
  "word",
  "Zoë",
  "e\u0301",
  "\u0301",
  "\u200d",
  "👨‍👩‍👧",
  "👩🏽‍💻",
  "🏳️‍🌈",
  "🇫🇷",
  "🇩",
  "北京",
  "烤鸭。",
  "食べる",
  "カタカナ",
  "한국어",
  "\u1112\u1161\u11AB",
  "שלום",
  "مرحبا",
  "ภาษาไทย",
  "\u0600",
  "\uD800", // lone surrogates must not crash anything either
  "\uDC00",
  "<|endoftext|>",
  "...",
  "1.5",
  "x".repeat(40),
];

// Sizes are pushed up (fast-check's default "small" size rarely exceeds a budget): with these, most runs
// truncate one memory and drop some, a few fit whole.
const content = fc.oneof(
  fc.string({ unit: "binary", maxLength: 300, size: "max" }),
  fc.string({ unit: "grapheme", maxLength: 300, size: "max" }),
  fc.string({ unit: fc.constantFrom(...TRICKY_UNITS), maxLength: 120, size: "max" }),
  fc.string({ unit: "grapheme-ascii", maxLength: 600, size: "max" }),
);

const memories = fc
  .array(content, { maxLength: 40, size: "large" })
  .map((contents) => contents.map((c, i) => makeItem({ id: `m${String(i).padStart(2, "0")}`, content: c })));

/**
 * A passing run takes about a second. A failing one shrinks 40 memories of up to 600 characters, which can
 * take minutes: stop after 10 s and report the smallest counterexample found by then.
 */
const shrinkAtMost = fc.interruptAfterTimeLimit(10_000);

const maxTokens = fc.oneof(fc.integer({ min: 100, max: 400 }), fc.integer({ min: 100, max: 3000 }));

describe.each(TOKENIZERS)("budgetStage properties (%s)", (name) => {
  const tokenizer = getTokenizer(name);
  const ctx: StageContext = {
    tokenizer,
    redactor: { enabled: false, redact: (text) => ({ text, fired: [] }) },
  };

  test("the budget is never exceeded; output is an in-order prefix; a cut keeps whole graphemes", () => {
    let truncations = 0;
    fc.assert(
      fc.property(memories, maxTokens, (input: WorkItem[], max: number) => {
        const snapshot = JSON.stringify(input);
        const { items, trace } = budgetStage(
          input,
          makePolicy({ tokenizer: name, retrieval: { maxTokens: max } }),
          ctx,
        );
        const used = countTotalTokens(
          items.map((i) => i.content),
          tokenizer,
        );

        expect(used).toBeLessThanOrEqual(max);
        expect(trace.detail).toEqual({
          maxTokens: max,
          usedTokens: used,
          tokenizer: name,
          packing: "truncate",
        });
        expect(JSON.stringify(input)).toBe(snapshot);

        // Order kept, nothing skipped: the output ids are the first ids of the input.
        expect(items.map((i) => i.id)).toEqual(input.slice(0, items.length).map((i) => i.id));

        const truncated = new Set(
          trace.changes.filter((c) => c.reason === "truncated_by_budget").map((c) => c.id),
        );
        expect(truncated.size).toBeLessThanOrEqual(1);
        items.forEach((item, i) => {
          const original = input[i]?.content ?? "";
          if (!truncated.has(item.id)) {
            expect(item.content).toBe(original);
            return;
          }
          // Only the last one may be cut; it is a non-empty prefix of whole graphemes plus "...".
          expect(i).toBe(items.length - 1);
          expect(item.content.endsWith("...")).toBe(true);
          const prefix = item.content.slice(0, -3);
          expect(prefix.length).toBeGreaterThan(0);
          expect(original.startsWith(prefix)).toBe(true);
          expect(prefix.length).toBeLessThanOrEqual(original.length);
          const kept = graphemesOf(prefix);
          expect(graphemesOf(original).slice(0, kept.length)).toEqual(kept);
          expect(graphemesOf(item.content).slice(0, kept.length)).toEqual(kept); // "..." merged into none
        });

        // Every input that is not in the output is reported as dropped, and nothing else is.
        const dropped = trace.changes.filter((c) => c.reason === "dropped_by_budget").map((c) => c.id);
        expect(dropped).toEqual(input.slice(items.length).map((i) => i.id));
        expect(trace.in).toBe(input.length);
        expect(trace.out).toBe(items.length);

        // Whatever fits whole is kept whole: if nothing was cut or dropped, all inputs came through.
        if (dropped.length === 0 && truncated.size === 0) expect(items).toHaveLength(input.length);
        if (truncated.size > 0) truncations += 1;
      }),
      { numRuns: 100, plugins: [shrinkAtMost] },
    );
    expect(truncations).toBeGreaterThan(30); // the generators do reach the interesting case
  });

  test("same input, same output", () => {
    fc.assert(
      fc.property(memories, maxTokens, (input: WorkItem[], max: number) => {
        const policy = makePolicy({ tokenizer: name, retrieval: { maxTokens: max } });
        expect(JSON.stringify(budgetStage(input, policy, ctx))).toBe(
          JSON.stringify(budgetStage(input, policy, ctx)),
        );
      }),
      { numRuns: 30, plugins: [shrinkAtMost] },
    );
  });
});
