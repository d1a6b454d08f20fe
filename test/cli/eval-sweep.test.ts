/**
 * `memgate eval --budgets … --chart …` through `main(argv, io)`: quality against tokens on a set small enough to
 * work out by hand, the chart file, and budgets refused as a policy's `retrieval.maxTokens` would be.
 */
import { readFileSync } from "node:fs";
import { cliText, jsonl, scratchFiles } from "../helpers/cli";

const cli = cliText;

const scratch = scratchFiles("memgate-sweep-");
const file = scratch.file;

/** Exactly `chars` characters (4 per approx token), starting with `head`. */
const sized = (head: string, chars: number) => `${head}${" filler".repeat(chars)}`.slice(0, chars);

// Two memories of exactly 100 approx tokens each (400 characters).
const A = {
  id: "a",
  content: sized("The code word is alpha.", 400),
  score: 0.9,
  timestamp: "2026-01-10T08:00:00Z",
  sessionId: "s1",
  type: "message",
};
const B = {
  id: "b",
  content: sized("The code word is bravo.", 400),
  score: 0.8,
  timestamp: "2026-02-20T08:00:00Z",
  sessionId: "s2",
  type: "message",
};
const QUESTIONS = [
  { id: "q1", userId: "u", query: "alpha?", category: "single-hop", expectedIds: ["a"], answers: ["alpha"] },
  { id: "q2", userId: "u", query: "bravo?", category: "temporal", expectedIds: ["b"], answers: ["bravo"] },
  { id: "q3", userId: "u", query: "passport?", category: "unanswerable" },
];
const recordedLine = (q: { id: string; query: string }, results: object[]) => ({
  id: q.id,
  userId: "u",
  query: q.query,
  backend: "local",
  searchType: "hybrid",
  limit: 2,
  results,
});

// Whole memories (no clip), best score first, a memory that does not fit whole is skipped.
const policy = (name: string, topK: number) =>
  `name: ${name}\nversion: 1\nretrieval: { topK: ${topK}, overfetch: 1, minScore: 0, maxTokens: 1500 }\n` +
  "interleaving: { strategy: score_first }\nclip: { mode: off }\nbudget: { packing: skip }\ntokenizer: approx\n";

let golden = "";
let recorded = "";
let two = "";
let one = "";

beforeAll(() => {
  golden = file("golden.jsonl", jsonl(QUESTIONS));
  const [q1, q2, q3] = QUESTIONS;
  if (q1 === undefined || q2 === undefined || q3 === undefined) throw new Error("questions");
  recorded = file(
    "recorded.jsonl",
    jsonl([recordedLine(q1, [A, B]), recordedLine(q2, [A, B]), recordedLine(q3, [])]),
  );
  two = file("two.yaml", policy("two", 2));
  one = file("one.yaml", policy("one", 1));
});

const sweepArgs = (...more: string[]) => [
  "eval",
  "--golden",
  golden,
  "--candidates",
  recorded,
  "--policy",
  two,
  "--policy",
  one,
  ...more,
];

interface Point {
  budget: number;
  overall: {
    answerKept: number | null;
    evidenceRecall: number | null;
    tokensMean: number;
    questions: number;
  };
  byCategory: Record<
    string,
    { answerKept: number | null; evidenceRecall: number | null; tokensMean: number }
  >;
  unanswerable: { questions: number; insufficient: number | null; tokensMean: number } | null;
}

describe("memgate eval --budgets", () => {
  test("every policy at every budget, figures as worked out by hand", async () => {
    // Given in any order, repeated: measured once each, smallest first.
    const run = await cli(...sweepArgs("--budgets", "200, 100,150,100", "--json"));
    expect(run.err).toBe("");
    expect(run.code).toBe(0);
    const { sweep } = JSON.parse(run.out) as {
      sweep: { budgets: number[]; series: Array<{ label: string; points: Point[] }> };
    };
    expect(sweep.budgets).toEqual([100, 150, 200]);
    expect(sweep.series.map((s) => s.label)).toEqual(["two", "one"]);
    const [twoSeries, oneSeries] = sweep.series;
    // "two" (topK 2): under 200 tokens only A (100 tokens) fits whole, B is skipped: q1 keeps its answer, q2
    // does not; both send 100 tokens, q3 (no candidates) none → answer kept 1/2, evidence 1/2, tokens 200/3.
    // At 200 both fit: 2/2, 2/2, tokens (200 + 200 + 0)/3.
    const figures = (p: Point) => [
      p.budget,
      p.overall.answerKept,
      p.overall.evidenceRecall,
      p.overall.tokensMean,
    ];
    expect(twoSeries?.points.map(figures)).toEqual([
      [100, 0.5, 0.5, 200 / 3],
      [150, 0.5, 0.5, 200 / 3],
      [200, 1, 1, 400 / 3],
    ]);
    // "one" (topK 1) never keeps B, whatever the budget.
    expect(oneSeries?.points.map(figures)).toEqual([
      [100, 0.5, 0.5, 200 / 3],
      [150, 0.5, 0.5, 200 / 3],
      [200, 0.5, 0.5, 200 / 3],
    ]);
    // Per category: temporal (q2) is the one the budget decides; unanswerable has nothing to keep (null).
    const at200 = twoSeries?.points[2];
    expect(at200?.byCategory.temporal).toMatchObject({ answerKept: 1, evidenceRecall: 1, tokensMean: 200 });
    expect(twoSeries?.points[0]?.byCategory.temporal).toMatchObject({ answerKept: 0, tokensMean: 100 });
    expect(at200?.byCategory.unanswerable).toMatchObject({
      answerKept: null,
      evidenceRecall: null,
      tokensMean: 0,
    });
    // No sufficiency verdict from this pipeline: the share is unknown, not 0.
    expect(at200?.unanswerable).toEqual({
      questions: 1,
      insufficient: null,
      answerableInsufficient: null,
      tokensMean: 0,
    });
  });

  test("the text report: a row per policy × budget, per category, and the terminal chart with a legend", async () => {
    const run = await cli(...sweepArgs("--budgets", "100,200"));
    expect(run.code).toBe(0);
    expect(run.out).toContain("quality against tokens: every policy at retrieval.maxTokens 100, 200");
    expect(run.out).toMatch(/^two @ 100\s+50\.0 %\s+50\.0 %\s+67\s/m);
    expect(run.out).toMatch(/^two @ 200\s+100\.0 %\s+100\.0 %\s+133\s/m);
    expect(run.out).toMatch(/^one @ 200\s+50\.0 %\s+50\.0 %\s+67\s/m);
    expect(run.out).toMatch(/^policy\s+single-hop \(1\)\s+temporal \(1\)\s+unanswerable \(1\)$/m);
    expect(run.out).toContain("answer kept against mean tokens");
    expect(run.out).toMatch(/^\s+● two$/m);
    expect(run.out).toMatch(/^\s+■ one$/m);
    expect(run.out).toContain("unanswerable questions (1)");
    // Both policies' markers stand in the plot (the rows right of the y axis), not only in the legend.
    const chart = run.out.slice(run.out.indexOf("answer kept against mean tokens"));
    const plot = chart
      .split("\n")
      .filter((l) => /[┤│]/.test(l))
      .join("\n");
    expect(plot).toContain("●");
    expect(plot).toContain("■");
  });

  test("--chart writes the SVG, byte for byte the same on a second run", async () => {
    const first = scratch.path("first.svg");
    const second = scratch.path("second.svg");
    expect((await cli(...sweepArgs("--budgets", "100,150,200", "--chart", first))).code).toBe(0);
    expect((await cli(...sweepArgs("--budgets", "100,150,200", "--chart", second))).code).toBe(0);
    const svg = readFileSync(first, "utf8");
    expect(readFileSync(second, "utf8")).toBe(svg);
    expect(svg.startsWith("<svg xmlns=")).toBe(true);
    expect(svg).toContain(">two</text>");
    expect(svg).toContain(">one</text>");
    // Panels: all questions, then each category.
    for (const title of [
      "all questions (3)",
      "single-hop (1)",
      "temporal (1)",
      "unanswerable (1): called insufficient",
    ]) {
      expect(svg).toContain(`>${title}</text>`);
    }
  });

  test.each([
    [
      "a budget below a policy's range",
      ["--budgets", "50"],
      /^--budgets: two: retrieval\.maxTokens: must be an integer from 100 to 3000 \(got 50\)$/,
    ],
    [
      "a budget that is not a number",
      ["--budgets", "100,lots"],
      /^--budgets: two: retrieval\.maxTokens: .*\(got "lots"\)$/,
    ],
    [
      "a fractional budget",
      ["--budgets", "150.5"],
      /^--budgets: two: retrieval\.maxTokens: must be an integer/,
    ],
    ["--chart without --budgets", ["--chart", "x.svg"], /^--chart: needs --budgets/],
  ])("bad input (%s): exit 2, one line", async (_name, more, message) => {
    const run = await cli(...sweepArgs(...(more as string[])));
    expect(run.code).toBe(2);
    expect(run.out).toBe("");
    expect(run.err).toMatch(message as RegExp);
  });
});
