/**
 * The measurement behind `memgate eval`'s new figures: the turn time each question's pipeline runs at, the
 * unanswerable questions' sufficiency verdicts, and the SVG chart of a sweep.
 */
import type { RecordedCandidates } from "../../src/eval/candidates";
import { shareAxis, tokensAxis } from "../../src/eval/chart/scale";
import { svgChart } from "../../src/eval/chart/svg";
import { textChart } from "../../src/eval/chart/text";
import { type GoldenQuestion, goldenQuestionSchema } from "../../src/eval/golden";
import { evaluatePolicy, type Stats } from "../../src/eval/run";
import type { Sweep } from "../../src/eval/sweep";
import { turnTimeOf } from "../../src/eval/turn-time";
import * as pipeline from "../../src/pipeline";
import { compilePolicy } from "../../src/policy/compile";
import { policySchema } from "../../src/policy/schema";

const question = (q: object): GoldenQuestion => goldenQuestionSchema.parse({ userId: "u", ...q });
const candidate = (id: string, timestamp: string, content = `memory ${id}`) => ({
  id,
  content,
  score: 0.9,
  timestamp,
  sessionId: "s",
  type: "message" as const,
});
const recorded = (q: GoldenQuestion, results: RecordedCandidates["results"]): RecordedCandidates => ({
  id: q.id,
  userId: q.userId,
  query: q.query,
  backend: "local",
  searchType: "hybrid",
  limit: 10,
  results,
});
const subject = {
  label: "p",
  compiled: compilePolicy(policySchema.parse({ name: "p", version: 1, retrieval: { minScore: 0 } })),
};

afterEach(() => jest.restoreAllMocks());

describe("turn time", () => {
  const q = question({ id: "q", query: "when?", answers: ["x"] });
  const results = [
    candidate("old", "2026-01-01T00:00:00Z"),
    candidate("new", "2026-04-02T12:00:00+02:00"),
    candidate("mid", "2026-03-01T00:00:00Z"),
  ];

  test("asOf wins; else the newest recorded candidate (all of them, offsets honoured); else none", () => {
    const asOf = question({ id: "q", query: "when?", answers: ["x"], asOf: "2026-05-05T05:05:00-03:00" });
    expect(turnTimeOf(asOf, recorded(asOf, results))).toBe(Date.parse("2026-05-05T08:05:00Z"));
    expect(turnTimeOf(q, recorded(q, results))).toBe(Date.parse("2026-04-02T10:00:00Z"));
    expect(turnTimeOf(q, recorded(q, []))).toBeUndefined();
  });

  test("is what the pipeline runs with, for every policy the same", async () => {
    const spy = jest.spyOn(pipeline, "runPipeline");
    const narrow = {
      label: "narrow",
      compiled: compilePolicy(
        policySchema.parse({ name: "narrow", version: 1, retrieval: { topK: 1, overfetch: 1, minScore: 0 } }),
      ),
    };
    // `narrow` takes only the first candidate, yet runs at the newest of all the recorded ones.
    await evaluatePolicy([q], [recorded(q, results)], subject);
    await evaluatePolicy([q], [recorded(q, results)], narrow);
    expect(spy).toHaveBeenCalledTimes(2);
    for (const call of spy.mock.calls) expect(call[0].turnTime).toBe(Date.parse("2026-04-02T10:00:00Z"));
    expect(spy.mock.calls[1]?.[0].candidates).toHaveLength(1);
  });
});

describe("unanswerable questions", () => {
  const none1 = question({ id: "n1", query: "passport?", category: "unanswerable" });
  const none2 = question({ id: "n2", query: "blood type?", category: "unanswerable" });
  const none3 = question({ id: "n3", query: "shoe size?", category: "unanswerable" });
  const known = question({ id: "k", query: "memory a?", answers: ["memory a"] });
  const questions = [known, none1, none2, none3];
  const lines = questions.map((q) => recorded(q, [candidate("a", "2026-01-01T00:00:00Z")]));

  test("count in neither answer kept nor evidence recall", async () => {
    const report = await evaluatePolicy(questions, lines, subject);
    expect(report.overall.answerKept).toBe(1);
    expect(report.overall.evidenceRecall).toBeNull();
    expect(report.byCategory.unanswerable).toMatchObject({
      questions: 3,
      answerKept: null,
      evidenceRecall: null,
    });
  });

  test("without a sufficiency verdict the share is unknown (null), their tokens still counted", async () => {
    const report = await evaluatePolicy(questions, lines, subject);
    expect(report.unanswerable?.questions).toBe(3);
    expect(report.unanswerable?.insufficient).toBeNull();
    expect(report.unanswerable?.answerableInsufficient).toBeNull();
    expect(report.unanswerable?.tokensMean).toBeGreaterThan(0);
    expect(report.unanswerable?.tokensMean).toBe(report.byCategory.unanswerable?.tokensMean);
  });

  test("with verdicts: the share of unanswerable questions called insufficient (answerable ones not counted)", async () => {
    const actual = pipeline.runPipeline;
    const verdicts: Record<string, "sufficient" | "partial" | "insufficient"> = {
      "memory a?": "insufficient", // answerable: must not count
      "passport?": "insufficient",
      "blood type?": "partial",
      "shoe size?": "insufficient",
    };
    jest.spyOn(pipeline, "runPipeline").mockImplementation((input, compiled) => {
      const verdict = verdicts[input.query];
      return {
        ...actual(input, compiled),
        ...(verdict ? { sufficiency: { verdict, completeness: 0, redundancy: 0, missing: [] } } : {}),
      };
    });
    const report = await evaluatePolicy(questions, lines, subject);
    expect(report.unanswerable?.insufficient).toBeCloseTo(2 / 3, 12);
    // The false alarm on the one answerable question is reported apart.
    expect(report.unanswerable?.answerableInsufficient).toBe(1);
    expect(report.outcomes.map((o) => o.sufficiency)).toEqual([
      "insufficient",
      "insufficient",
      "partial",
      "insufficient",
    ]);
  });

  test("a golden set without them has none to report", async () => {
    expect(
      (await evaluatePolicy([known], [lines[0] as RecordedCandidates], subject)).unanswerable,
    ).toBeNull();
  });
});

describe("the sweep's charts", () => {
  const stats = (answerKept: number | null, evidenceRecall: number | null, tokensMean: number): Stats => ({
    questions: 4,
    answerKept,
    answerInCandidates: answerKept,
    evidenceRecall,
    tokensMean,
    tokensP95: tokensMean,
    budgetUsed: 0.5,
    memoriesMean: 3,
  });
  const point = (budget: number, a: number, e: number, t: number, insufficient: number | null = null) => ({
    budget,
    overall: stats(a, e, t),
    byCategory: { "single-hop": stats(a, e, t), unanswerable: stats(null, null, t / 2) },
    unanswerable: { questions: 4, insufficient, answerableInsufficient: null, tokensMean: t / 2 },
  });
  const sweep: Sweep = {
    budgets: [300, 800, 1500],
    series: [
      {
        label: "default",
        policy: { name: "default", version: 1, hash: "h1" },
        points: [point(300, 0.61, 0.7, 290), point(800, 0.82, 0.9, 700), point(1500, 0.9, 0.95, 1100)],
      },
      {
        label: "a&b <seed>",
        policy: { name: "seed", version: 1, hash: "h2" },
        points: [point(300, 0.5, 0.6, 200), point(800, 0.55, 0.62, 260), point(1500, 0.55, 0.62, 260)],
      },
    ],
  };

  test("the SVG: same sweep, same bytes; a series per policy in each panel; labels escaped; nothing active", () => {
    const svg = svgChart(sweep);
    expect(svgChart(structuredClone(sweep))).toBe(svg);
    expect(svg).toMatch(/^<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg" [^>]*viewBox="0 0 \d+ \d+"/);
    expect(svg.endsWith("</svg>\n")).toBe(true);
    // Two panels with data (all questions, single-hop): per policy a solid and a dashed line in each.
    const solid = (colour: string) =>
      svg
        .split("\n")
        .filter((l) => l.startsWith("<polyline") && l.includes(`stroke="${colour}" stroke-width="2"`));
    const dashed = (colour: string) =>
      svg
        .split("\n")
        .filter(
          (l) => l.startsWith("<polyline") && l.includes(`stroke="${colour}"`) && l.includes("dasharray"),
        );
    for (const colour of ["#0072B2", "#D55E00"]) {
      expect(solid(colour)).toHaveLength(2);
      expect(dashed(colour)).toHaveLength(2);
    }
    // Budget labels; two budgets at the same point share one.
    expect(svg).toContain(">300</text>");
    expect(svg).toContain(">800/1500</text>");
    expect(svg).toContain(">a&amp;b &lt;seed&gt;</text>");
    expect(svg).not.toContain("a&b <seed>");
    expect(svg).not.toMatch(/<script|<style|href=|on[a-z]+=/i);
    // Without sufficiency verdicts the unanswerable panel says so and lists the tokens spent on them.
    expect(svg).toContain(">unanswerable (4): called insufficient</text>");
    expect(svg).toContain(">no sufficiency verdict from the pipeline</text>");
    expect(svg).toContain(">default: 145 / 350 / 550</text>");
    expect(svg).toContain(">a&amp;b &lt;seed&gt;: 100 / 130 / 130</text>");
  });

  test("the SVG's unanswerable panel, with verdicts: the share called insufficient against their tokens", () => {
    const judged: Sweep = {
      ...sweep,
      series: sweep.series.map((s, i) => ({
        ...s,
        points: s.points.map((p, j) =>
          point(
            p.budget,
            p.overall.answerKept ?? 0,
            p.overall.evidenceRecall ?? 0,
            p.overall.tokensMean,
            i === 0 ? 0.9 - j * 0.2 : 1,
          ),
        ),
      })),
    };
    const svg = svgChart(judged);
    expect(svg).not.toContain("no sufficiency verdict");
    // Three panels with lines now: all questions, single-hop, unanswerable (solid only: no evidence there).
    const solid = svg
      .split("\n")
      .filter((l) => l.startsWith("<polyline") && l.includes('stroke="#0072B2" stroke-width="2"'));
    expect(solid).toHaveLength(3);
  });

  test("the terminal chart: a marker per policy, a legend, the axes in shares and tokens", () => {
    const text = textChart(sweep);
    expect(textChart(structuredClone(sweep))).toBe(text);
    expect(text).toMatch(/^100 % ┤/m);
    expect(text).toMatch(/^ 50 % ┤/m);
    expect(text).toContain("1,000       1,250  mean tokens");
    expect(text).toMatch(/^ {2}● default$/m);
    expect(text).toMatch(/^ {2}■ a&b <seed>$/m);
    expect(text.split("\n").filter((l) => l.includes("●")).length).toBeGreaterThanOrEqual(3);
  });
});

describe("the charts' axes", () => {
  test("a share axis ends at 100 % and every tick lies on it", () => {
    for (const low of [0, 0.05, 0.3, 0.31, 0.55, 0.62, 0.88, 0.97, 1]) {
      const axis = shareAxis([low, 1]);
      expect(axis.max).toBe(1);
      expect(axis.min).toBeLessThanOrEqual(low);
      expect(axis.ticks[0]).toBe(axis.min);
      expect(axis.ticks.at(-1)).toBe(1);
      for (const t of axis.ticks) expect(t).toBeLessThanOrEqual(1);
    }
    expect(shareAxis([0.3, 0.9]).ticks).toEqual([0.2, 0.4, 0.6, 0.8, 1]);
  });

  test("a tokens axis starts at 0 and ends on a round number at or above the largest value", () => {
    expect(tokensAxis(937, 4)).toEqual({ min: 0, max: 1000, step: 250, ticks: [0, 250, 500, 750, 1000] });
    expect(tokensAxis(0).max).toBeGreaterThan(0);
  });
});
