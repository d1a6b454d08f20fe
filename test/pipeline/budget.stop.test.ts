/**
 * `budget.stop` (seed 004, "tokens are a budget"): once `afterTokens` are spent, the budget stops taking memories as
 * soon as the kept ones cover the question (the sufficiency certificate's completeness at or above
 * `completeness`); the rest are `not_needed`, and the trace says why it stopped. A policy without it fills as
 * before.
 */
import { runPipeline } from "../../src/pipeline";
import { budgetStage } from "../../src/pipeline/stages/budget";
import { getTokenizer } from "../../src/pipeline/tokenizers";
import type { WorkItem } from "../../src/pipeline/types";
import { compilePolicy } from "../../src/policy/compile";
import { type PolicyInput, policySchema } from "../../src/policy/schema";
import { makeCandidate, makeItem, makePolicy } from "../helpers/items";

const approx = {
  redactor: { enabled: false, redact: (text: string) => ({ text, fired: [] }) },
  tokenizer: getTokenizer("approx"),
};

/** Ten memories of 20 approx tokens each. */
const items = Array.from({ length: 10 }, (_, i) =>
  makeItem({ id: `m${i}`, content: `${i} ${"word ".repeat(16)}`.trim() }),
);
const tokens = approx.tokenizer.count(items[0]?.content ?? "");

function stopPolicy(afterTokens: number, completeness: number, maxTokens = 1000) {
  return makePolicy({
    retrieval: { maxTokens },
    budget: { packing: "skip", stop: { afterTokens, completeness } },
  } as Partial<PolicyInput>);
}

describe("budget.stop", () => {
  test("stops once afterTokens are spent and the kept memories cover the question; the rest are not_needed", () => {
    // Covered from the third memory on.
    const covered = (kept: readonly WorkItem[]) => (kept.length >= 3 ? 0.9 : 0.2);
    const out = budgetStage(items, stopPolicy(tokens * 2, 0.5), approx, { covered });
    expect(out.items.map((i) => i.id)).toEqual(["m0", "m1", "m2"]);
    expect(out.trace.changes.every((c) => c.reason === "not_needed")).toBe(true);
    expect(out.trace.changes).toHaveLength(7);
    expect(out.trace.detail).toMatchObject({
      stoppedBy: "covered",
      completeness: 0.9,
      afterTokens: tokens * 2,
    });
  });

  test("never stops before afterTokens are spent, however covered the question is", () => {
    const out = budgetStage(items, stopPolicy(tokens * 5, 0.5), approx, { covered: () => 1 });
    expect(out.items).toHaveLength(5);
  });

  test("a question never covered fills the budget as without the rule", () => {
    const policy = stopPolicy(0, 0.95, tokens * 6);
    const withRule = budgetStage(items, policy, approx, { covered: () => 0.94 });
    const without = budgetStage(
      items,
      makePolicy({ retrieval: { maxTokens: tokens * 6 }, budget: { packing: "skip" } }),
      approx,
    );
    expect(withRule.items.map((i) => i.id)).toEqual(without.items.map((i) => i.id));
    expect(withRule.trace.detail).not.toHaveProperty("stoppedBy");
    expect(withRule.usedTokens).toBeLessThanOrEqual(tokens * 6);
  });

  test("without a covered measure (or without the section) nothing changes", () => {
    const plain = budgetStage(items, makePolicy({ retrieval: { maxTokens: 100 } }), approx);
    const noMeasure = budgetStage(items, stopPolicy(0, 0), approx);
    expect(noMeasure.items).toHaveLength(10);
    expect(plain.trace.detail).not.toHaveProperty("stoppedBy");
  });

  test("the pipeline measures coverage with the certificate: a question the first memory answers stops early", () => {
    const talk = [
      "Maya: We finally named the puppy Pickle, after the jar he knocked over.",
      "Tom: The bakery shift starts at six all week and I am tired of it already.",
      "Tom: My sister got a cat last month and the cat hates the rain.",
      "Maya: The weather was awful on Saturday so we stayed in and watched films.",
    ];
    const candidates = talk.map((content, i) =>
      makeCandidate({ id: `t${i}`, content, score: 0.9 - i * 0.1, type: "message" }),
    );
    const run = (stop?: { afterTokens: number; completeness: number }) =>
      runPipeline(
        { userId: "u", query: "What did Maya name the puppy?", candidates, backend: "t", explain: true },
        compilePolicy(
          makePolicy({
            tokenizer: "approx",
            retrieval: { maxTokens: 1000 },
            ranking: { enabled: true },
            budget: { packing: "skip", ...(stop === undefined ? {} : { stop }) },
          } as Partial<PolicyInput>),
        ),
      );
    const full = run();
    const stopped = run({ afterTokens: 0, completeness: 0.6 });
    expect(full.memories).toHaveLength(4);
    expect(stopped.memories.map((m) => m.id)).toEqual(["t0"]);
    const budget = stopped.trace.find((t) => t.stage === "token_budget");
    expect(budget?.detail).toMatchObject({ stoppedBy: "covered" });
    expect(stopped.totalTokens).toBeLessThan(full.totalTokens);
  });
});

describe("budget.stop is validated like every field", () => {
  const base = { name: "p", version: 1 };
  test.each([
    [{ afterTokens: -1, completeness: 0.5 }],
    [{ afterTokens: 3001, completeness: 0.5 }],
    [{ afterTokens: 10, completeness: 1.5 }],
    [{ afterTokens: 10 }],
    [{ afterTokens: 10, completeness: 0.5, extra: 1 }],
  ])("rejects %j", (stop) => {
    const parsed = policySchema.safeParse({ ...base, budget: { stop } });
    expect(parsed.success).toBe(false);
    expect(parsed.error?.issues[0]?.path.slice(0, 2)).toEqual(["budget", "stop"]);
  });
  test("absent by default: the policy (and its hash) as before", () => {
    expect(policySchema.parse(base).budget.stop).toBeUndefined();
    expect(
      policySchema.parse({ ...base, budget: { stop: { afterTokens: 0, completeness: 0 } } }).budget.stop,
    ).toEqual({
      afterTokens: 0,
      completeness: 0,
    });
  });
});
