/**
 * `memgate eval`'s "default vs top20-whole" line (src/eval/versus.ts): the first policy against the backend's top 20,
 * whole — share of its tokens, answer kept overall and per category, and the categories where it is not ahead.
 */
import type { PolicyReport, Stats } from "../../src/eval/run";
import { versusOf, versusText } from "../../src/eval/versus";

const stats = (answerKept: number | null, tokensMean: number): Stats => ({
  questions: 10,
  answerKept,
  answerInCandidates: answerKept,
  evidenceRecall: answerKept,
  tokensMean,
  tokensP95: tokensMean,
  budgetUsed: 0.5,
  memoriesMean: 3,
});

function report(name: string, tokens: number, byCategory: Record<string, number | null>): PolicyReport {
  const values = Object.values(byCategory).filter((v): v is number => v !== null);
  return {
    label: name,
    policy: { name, version: 1, hash: name },
    maxTokens: 450,
    candidatesPerQuestion: 20,
    overall: stats(values.reduce((a, b) => a + b, 0) / values.length, tokens),
    byCategory: Object.fromEntries(Object.entries(byCategory).map(([k, v]) => [k, stats(v, tokens)])),
    byLang: {},
    unanswerable: null,
    expansion: null,
    outcomes: [],
  };
}

describe("default vs top20-whole", () => {
  const whole = report("top20-whole", 400, { "multi-hop": 0.25, "single-hop": 0.7, unanswerable: null });

  test("ahead in every category with 60 % of the tokens", () => {
    const v = versusOf([
      report("default", 240, { "multi-hop": 0.26, "single-hop": 0.75, unanswerable: null }),
      whole,
    ]);
    expect(v).toMatchObject({ policy: "default", baseline: "top20-whole", notAhead: [] });
    expect(v?.tokensRatio).toBeCloseTo(0.6, 12);
    expect(v?.categories.map((c) => c.category)).toEqual(["multi-hop", "single-hop"]);
    const line = versusText(v as NonNullable<typeof v>);
    expect(line).toMatch(/^default vs top20-whole: 60\.0 % of its tokens \(240 against 400 mean\)/);
    expect(line).toMatch(
      /more often in every category \(multi-hop 26\.0 vs 25\.0, single-hop 75\.0 vs 70\.0\)$/,
    );
  });

  test("a tie or a loss in a category is named", () => {
    const v = versusOf([
      whole,
      report("cheap", 100, { "multi-hop": 0.25, "single-hop": 0.6, unanswerable: null }),
    ]);
    expect(v?.policy).toBe("cheap");
    expect(v?.notAhead).toEqual(["multi-hop", "single-hop"]);
    expect(versusText(v as NonNullable<typeof v>)).toMatch(/not ahead in multi-hop, single-hop/);
  });

  test("no line without both", () => {
    expect(versusOf([whole])).toBeUndefined();
    expect(versusOf([report("default", 1, { a: 1 })])).toBeUndefined();
  });
});
