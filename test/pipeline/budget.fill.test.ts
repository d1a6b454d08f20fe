/**
 * A budget that is used: `budget.packing: skip` (a memory that does not fit is left out and the next is tried)
 * and `budget.fill` (candidates beyond topK, best first, while they fit, up to `maxMemories`). Seed 000's
 * behaviour (`truncate`, no fill) stays the default.
 */
import fc from "fast-check";
import { runPipeline } from "../../src/pipeline";
import { budgetStage } from "../../src/pipeline/stages/budget";
import { getTokenizer } from "../../src/pipeline/tokenizers";
import type { Candidate } from "../../src/pipeline/types";
import { compilePolicy } from "../../src/policy/compile";
import type { PolicyInput } from "../../src/policy/schema";
import { withTopK } from "../../src/retrieval/policy";
import { makeCandidate, makeItem, makePolicy } from "../helpers/items";

const approx = {
  redactor: { enabled: false, redact: (text: string) => ({ text, fired: [] }) },
  tokenizer: getTokenizer("approx"),
};

function pipeline(candidates: Candidate[], patch: Partial<PolicyInput>) {
  const compiled = compilePolicy(makePolicy({ tokenizer: "approx", ...patch }));
  return runPipeline({ userId: "u", query: "", candidates, backend: "t", explain: true }, compiled);
}

/** `n` memories of `chars` characters each (approx: chars/4 tokens), scores descending by index. */
function memories(n: number, chars: (i: number) => number, prefix = "m"): Candidate[] {
  return Array.from({ length: n }, (_, i) =>
    makeCandidate({
      id: `${prefix}${String(i).padStart(2, "0")}`,
      content: `${String(i).padStart(2, "0")} ${"x".repeat(Math.max(0, chars(i) - 3))}`,
      score: 0.99 - i * 0.01,
    }),
  );
}

describe("budget.packing", () => {
  test("truncate (default, seed 000): the first that does not fit is cut, nothing after it", () => {
    const items = [400, 300, 40].map((c, i) =>
      makeItem({ id: `m${i}`, content: "word ".repeat(c / 5).trim() }),
    );
    const { items: kept, trace } = budgetStage(items, makePolicy({ retrieval: { maxTokens: 150 } }), approx);
    expect(kept.map((i) => i.id)).toEqual(["m0", "m1"]);
    expect(trace.changes).toEqual([
      { id: "m1", reason: "truncated_by_budget" },
      { id: "m2", reason: "dropped_by_budget" },
    ]);
  });

  test("skip: a memory that does not fit is left out whole and the shorter ones after it still come in", () => {
    const items = [400, 300, 40, 200].map((c, i) => makeItem({ id: `m${i}`, content: "a".repeat(c) }));
    const policy = makePolicy({ retrieval: { maxTokens: 150 }, budget: { packing: "skip" } });
    const { items: kept, trace, usedTokens } = budgetStage(items, policy, approx);
    expect(kept.map((i) => [i.id, i.content.length])).toEqual([
      ["m0", 400],
      ["m2", 40],
    ]);
    expect(usedTokens).toBe(110);
    expect(trace.changes).toEqual([
      { id: "m1", reason: "dropped_by_budget" },
      { id: "m3", reason: "dropped_by_budget" },
    ]);
    expect(trace.detail).toMatchObject({ packing: "skip" });
  });
});

describe("budget.fill", () => {
  test("off (default): topK memories, the rest beyond_topK — the budget mostly unused", () => {
    const result = pipeline(
      memories(16, () => 100),
      { retrieval: { topK: 8, minScore: 0, maxTokens: 1500 } },
    );
    expect(result.memories).toHaveLength(8);
    expect(result.totalTokens).toBe(200);
    // The topK cut is its own stage in the trace, after dedup.
    const stages = result.trace.map((t) => t.stage);
    expect(stages.slice(0, 4)).toEqual(["fetch", "score_threshold", "deduplication", "top_k"]);
    expect(result.trace[0]).toEqual({
      stage: "fetch",
      in: 16,
      out: 16,
      changes: [],
      detail: { fetched: 16 },
    });
    const dedup = result.trace.find((t) => t.stage === "deduplication");
    expect(dedup).toMatchObject({ in: 16, out: 16, changes: [], detail: { duplicates: 0 } });
    const cut = result.trace.find((t) => t.stage === "top_k");
    expect(cut).toMatchObject({ in: 16, out: 8, detail: { topK: 8, reserve: 0 } });
    expect(cut?.changes.filter((c) => c.reason === "beyond_topK")).toHaveLength(8);
  });

  test("on: after the topK (interleaved), the over-fetched rest by score while it fits, up to maxMemories", () => {
    const result = pipeline(
      memories(30, () => 100),
      {
        retrieval: { topK: 4, overfetch: 5, minScore: 0, maxTokens: 1500 },
        interleaving: { strategy: "recency_first" },
        budget: { fill: true, maxMemories: 12 },
      },
    );
    const ids = result.memories.map((m) => m.id);
    expect(ids).toHaveLength(12);
    // The four best, in the interleaving's order (all share a timestamp: recency ties go by id), then m04…m11.
    expect(ids.slice(0, 4).sort()).toEqual(["m00", "m01", "m02", "m03"]);
    expect(ids.slice(4)).toEqual(["m04", "m05", "m06", "m07", "m08", "m09", "m10", "m11"]);
    // Dedup keeps only as many reserves as maxMemories leaves room for; everything reaches the budget and fits.
    const cut = result.trace.find((t) => t.stage === "top_k");
    expect(cut?.changes.map((c) => c.reason)).toEqual(Array(18).fill("beyond_maxMemories"));
    expect(cut).toMatchObject({ in: 30, out: 12, detail: { topK: 4, reserve: 8 } });
    expect(result.trace.find((t) => t.stage === "token_budget")?.changes).toEqual([]);
  });

  test("on, with skip: long reserves are passed over for shorter ones that fit", () => {
    const result = pipeline(
      memories(10, (i) => (i % 2 === 0 ? 1200 : 200)),
      {
        retrieval: { topK: 2, overfetch: 5, minScore: 0, maxTokens: 900 },
        budget: { fill: true, maxMemories: 20, packing: "skip" },
      },
    );
    // topK: m00 (300 tokens) + m01 (50). Reserves: m02 (300) and m03 (50) fit (700), m04 (300) does not,
    // m05, m07, m09 (50 each) do, m06 and m08 do not.
    expect(result.memories.map((m) => m.id)).toEqual(["m00", "m01", "m02", "m03", "m05", "m07", "m09"]);
    expect(result.totalTokens).toBe(850);
  });

  test("reserves are never below minScore, duplicates or re-ordered by recency", () => {
    const list = [
      ...memories(3, () => 40),
      makeCandidate({ id: "dup", content: "00 xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", score: 0.5 }),
      makeCandidate({ id: "low", content: "below the bar", score: 0.1 }),
      makeCandidate({ id: "new", content: "newest", score: 0.6, timestamp: "2027-01-01T00:00:00Z" }),
      makeCandidate({ id: "old", content: "oldest", score: 0.7, timestamp: "2020-01-01T00:00:00Z" }),
    ];
    const result = pipeline(list, {
      retrieval: { topK: 2, minScore: 0.3 },
      interleaving: { strategy: "score_first" },
      budget: { fill: true },
    });
    expect(result.memories.map((m) => m.id)).toEqual(["m00", "m01", "m02", "old", "new"]);
  });

  test("the Zep and OpenMemory doors never return more than the SDK asked for: fill is off there", () => {
    const compiled = compilePolicy(makePolicy({ budget: { fill: true, maxMemories: 30 } }));
    expect(withTopK(compiled, 5).policy.budget.fill).toBe(false);
    expect(withTopK(compiled, 5).hash).not.toBe(compiled.hash);
    const plain = compilePolicy(makePolicy());
    expect(withTopK(plain, plain.policy.retrieval.topK)).toBe(plain);
  });
});

describe("budget properties with packing and fill", () => {
  const content = fc
    .array(fc.constantFrom("word", "Wörter", "漢字", "🙂", "a.", "longer-word", "\n"), { maxLength: 200 })
    .map((w) => w.join(" "));
  const list = fc.array(fc.tuple(content, fc.double({ min: 0, max: 1, noNaN: true })), { maxLength: 40 });

  test("strict budget; topK memories first, then reserves in score order; at most max(topK, maxMemories)", () => {
    fc.assert(
      fc.property(
        list,
        fc.record({
          topK: fc.integer({ min: 1, max: 20 }),
          maxTokens: fc.integer({ min: 100, max: 3000 }),
          packing: fc.constantFrom("truncate" as const, "skip" as const),
          fill: fc.boolean(),
          maxMemories: fc.integer({ min: 1, max: 50 }),
          tokenizer: fc.constantFrom("approx" as const, "o200k_base" as const),
        }),
        (entries, p) => {
          const candidates = entries.map(([c, score], i) =>
            makeCandidate({ id: `m${String(i).padStart(2, "0")}`, content: c, score }),
          );
          const compiled = compilePolicy(
            makePolicy({
              tokenizer: p.tokenizer,
              retrieval: { topK: p.topK, overfetch: 5, maxTokens: p.maxTokens, minScore: 0 },
              interleaving: { strategy: "score_first" },
              clip: { mode: "off" },
              budget: { packing: p.packing, fill: p.fill, maxMemories: p.maxMemories },
            }),
          );
          const result = runPipeline({ userId: "u", query: "", candidates, backend: "t" }, compiled);
          const tokenizer = compiled.ctx.tokenizer;
          const used = result.memories.reduce((sum, m) => sum + tokenizer.count(m.content), 0);
          expect(used).toBeLessThanOrEqual(p.maxTokens);
          expect(result.totalTokens).toBe(used);
          expect(result.memories.length).toBeLessThanOrEqual(
            p.fill ? Math.max(p.topK, p.maxMemories) : p.topK,
          );
          // score_first: the output is in score order (ties by id) whether a memory is topK or reserve.
          const order = result.memories.map((m) => [m.score, m.id] as const);
          for (let i = 1; i < order.length; i++) {
            const [s0, id0] = order[i - 1] ?? [0, ""];
            const [s1, id1] = order[i] ?? [0, ""];
            expect(s0 > s1 || (s0 === s1 && id0 < id1)).toBe(true);
          }
          if (p.packing === "skip") {
            for (const m of result.memories) {
              expect(m.content).toBe(candidates.find((c) => c.id === m.id)?.content);
            }
          }
        },
      ),
      { numRuns: 200 },
    );
  });
});
