/**
 * `memgate eval`'s "default vs top20-whole" line (src/eval/versus.ts): the first policy against the backend's top 20,
 * whole — share of its tokens overall and per category (and the categories over 60 %), answer kept overall and per
 * category, and the categories where it is not ahead.
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

function report(
  name: string,
  tokens: number,
  byCategory: Record<string, number | null>,
  tokensByCategory: Record<string, number> = {},
): PolicyReport {
  const values = Object.values(byCategory).filter((v): v is number => v !== null);
  return {
    label: name,
    policy: { name, version: 1, hash: name },
    maxTokens: 450,
    candidatesPerQuestion: 20,
    overall: stats(values.reduce((a, b) => a + b, 0) / values.length, tokens),
    byCategory: Object.fromEntries(
      Object.entries(byCategory).map(([k, v]) => [k, stats(v, tokensByCategory[k] ?? tokens)]),
    ),
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
    expect(v?.overTokens).toEqual([]);
    expect(v?.tokensByCategory.map((t) => [t.category, t.ratio])).toEqual([
      ["multi-hop", 0.6],
      ["single-hop", 0.6],
      ["unanswerable", 0.6],
    ]);
    expect(line).toMatch(
      /^default vs top20-whole: 60\.0 % of its tokens \(240 against 400 mean\), at most 60 % in every category \(multi-hop 60\.0, single-hop 60\.0, unanswerable 60\.0\); /,
    );
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

  test("a category over 60 % of the baseline's tokens is named, even when the mean is under it", () => {
    const v = versusOf([
      report(
        "default",
        230,
        { "multi-hop": 0.3, "single-hop": 0.75, unanswerable: null },
        { "multi-hop": 260, "single-hop": 220, unanswerable: 210 },
      ),
      report(
        "top20-whole",
        400,
        { "multi-hop": 0.25, "single-hop": 0.7, unanswerable: null },
        { "multi-hop": 420, "single-hop": 400, unanswerable: 380 },
      ),
    ]);
    expect(v?.tokensRatio).toBeLessThan(0.6);
    expect(v?.notAhead).toEqual([]);
    expect(v?.overTokens).toEqual(["multi-hop"]);
    expect(versusText(v as NonNullable<typeof v>)).toContain(
      "over 60 % in multi-hop (multi-hop 61.9, single-hop 55.0, unanswerable 55.3); answer kept",
    );
  });

  test("no line without both", () => {
    expect(versusOf([whole])).toBeUndefined();
    expect(versusOf([report("default", 1, { a: 1 })])).toBeUndefined();
  });
});
