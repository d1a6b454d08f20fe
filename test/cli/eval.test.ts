/**
 * `memgate eval` through `main(argv, io)`, as bin/memgate.js calls it: golden set × policies on identical
 * candidates, the report, --record/--candidates, --json, --diff, threshold gates and bad input.
 */
import { readFileSync } from "node:fs";
import { cliText, jsonl, scratchFiles } from "../helpers/cli";

const cli = cliText;

const scratch = scratchFiles("memgate-eval-");
const file = scratch.file;

/** Two users; the answers sit in the third sentence of long messages, where a leading clip cuts them. */
const MEMORIES = [
  {
    id: "p-1",
    userId: "priya",
    type: "message",
    role: "user",
    sessionId: "s-1",
    timestamp: "2026-03-01T10:00:00Z",
    content:
      "Long shift again, I'm exhausted. The ward was full all night. Anyway, Biscuit's new vet is Dr. Okafor on Elm Street. He needs a check-up in May.",
  },
  {
    id: "p-2",
    userId: "priya",
    type: "message",
    role: "user",
    sessionId: "s-2",
    timestamp: "2026-04-01T10:00:00Z",
    content:
      "My sister called today. We talked for hours about nothing. The wedding venue is Harlow Barn, she finally decided. I still need a dress.",
  },
  {
    id: "p-3",
    userId: "priya",
    type: "message",
    role: "assistant",
    sessionId: "s-2",
    timestamp: "2026-04-01T10:01:00Z",
    content: "That sounds like a lovely choice for a wedding.",
  },
  {
    id: "t-1",
    userId: "tom",
    type: "message",
    role: "user",
    sessionId: "s-9",
    timestamp: "2026-05-01T10:00:00Z",
    content:
      "Good morning. The weather is fine. My cardiologist changed the dose to 5 mg of bisoprolol. Thank you.",
  },
];
const QUESTIONS = [
  {
    id: "q1",
    userId: "priya",
    query: "who is Biscuit's vet?",
    category: "single-hop",
    lang: "en",
    expectedIds: ["p-1"],
    answers: ["Dr. Okafor"],
  },
  {
    id: "q2",
    userId: "priya",
    query: "where is my sister's wedding venue?",
    category: "single-hop",
    lang: "en",
    expectedIds: ["p-2"],
    answers: ["Harlow Barn"],
  },
  {
    id: "q3",
    userId: "tom",
    query: "what dose did the cardiologist give me?",
    category: "update",
    lang: "en",
    expectedIds: ["t-1"],
    answers: [["5 mg", "five milligrams"]],
  },
];

const LEADING = `name: lead\nversion: 1\nretrieval: { topK: 8, clipSentences: 2, minScore: 0 }\nclip: { mode: leading }\n`;
const RELEVANT = `name: rel\nversion: 1\nretrieval: { topK: 8, clipSentences: 2, minScore: 0 }\nclip: { mode: relevant }\n`;

let data = "";
let golden = "";
let lead = "";
let rel = "";

beforeAll(() => {
  data = file("memories.jsonl", jsonl(MEMORIES));
  golden = file("golden.jsonl", `// a comment line\n${jsonl(QUESTIONS)}`);
  lead = file("lead.yaml", LEADING);
  rel = file("rel.yaml", RELEVANT);
});

const base = () => ["eval", "--golden", golden, "--backend", "local", "--data", data];

describe("memgate eval", () => {
  test("prints the table: a leading clip loses the answers a relevant clip keeps, on the same candidates", async () => {
    const run = await cli(...base(), "--policy", lead, "--policy", rel);
    expect(run.err).toBe("");
    expect(run.code).toBe(0);
    expect(run.out).toContain("memgate eval: 3 questions of 2 user(s); candidates fetched from local");
    const row = (label: string) => run.out.split("\n").find((l) => l.startsWith(`${label} `)) ?? "";
    // answer kept, answer in candidates, evidence recall
    expect(row("lead")).toMatch(/^lead\s+0\.0 %\s+100\.0 %\s+100\.0 %/);
    expect(row("rel")).toMatch(/^rel\s+100\.0 %\s+100\.0 %\s+100\.0 %/);
    expect(run.out).toContain("answer kept, by category (questions)");
    expect(run.out).toMatch(/single-hop \(2\)\s+update \(1\)/);
  });

  test("--json: per policy and category, with each question's outcome", async () => {
    const run = await cli(...base(), "--policy", lead, "--policy", rel, "--json");
    expect(run.code).toBe(0);
    const report = JSON.parse(run.out);
    expect(report.questions).toBe(3);
    expect(report.policies.map((p: { label: string }) => p.label)).toEqual(["lead", "rel"]);
    const [l, r] = report.policies;
    expect(l.overall).toMatchObject({
      questions: 3,
      answerKept: 0,
      answerInCandidates: 1,
      evidenceRecall: 1,
    });
    expect(r.overall.answerKept).toBe(1);
    expect(r.byCategory.update.answerKept).toBe(1);
    expect(r.overall.tokensMean).toBeGreaterThan(0);
    expect(r.overall.budgetUsed).toBeCloseTo(r.overall.tokensMean / 1500, 10);
    const q1 = l.outcomes.find((o: { id: string }) => o.id === "q1");
    expect(q1).toMatchObject({ answerKept: false, evidenceKept: 1, evidenceTotal: 1 });
    expect(q1.evidence[0].content).toBe("Long shift again, I'm exhausted. The ward was full all night....");
  });

  test("--diff: side by side, the evidence as each policy left it", async () => {
    const run = await cli(...base(), "--policy", lead, "--policy", rel, "--diff", "rel,lead");
    expect(run.code).toBe(0);
    expect(run.out).toContain(
      "rel vs lead: 3 question(s) differ — answer kept only by rel: 3, only by lead: 0",
    );
    expect(run.out).toContain("[q1 · single-hop] who is Biscuit's vet?");
    expect(run.out).toContain(
      [
        "  rel   answer kept, evidence 1/1",
        `          p-1: "... Anyway, Biscuit's new vet is Dr. Okafor on Elm Street. He needs a check-up in May."`,
        "  lead  answer lost, evidence 1/1",
        `          p-1: "Long shift again, I'm exhausted. The ward was full all night...."`,
      ].join("\n"),
    );
  });

  test("--record, then --candidates: the same report without the backend", async () => {
    const recorded = scratch.path("recorded.jsonl");
    const live = await cli(...base(), "--policy", rel, "--record", recorded, "--json");
    expect(live.code).toBe(0);
    expect(readFileSync(recorded, "utf8").split("\n")[0]).toMatch(/^\/\/ memgate eval candidates/);
    const replayed = await cli(
      "eval",
      "--golden",
      golden,
      "--candidates",
      recorded,
      "--policy",
      rel,
      "--json",
    );
    expect(replayed.err).toBe("");
    const a = JSON.parse(live.out);
    const b = JSON.parse(replayed.out);
    expect(b.policies).toEqual(a.policies);
    expect(b.candidates.source).toBe(`recorded in ${recorded}`);
  });

  test("thresholds: exit 1 naming the policy and figure that missed; exit 0 when all are met", async () => {
    const failed = await cli(...base(), "--policy", lead, "--policy", rel, "--min-answer-kept", "90%");
    expect(failed.code).toBe(1);
    expect(failed.out).toContain("FAIL lead: answer kept 0.0 % (required ≥ 90.0 %)");
    expect(failed.out).toContain("ok   rel: answer kept 100.0 % (required ≥ 90.0 %)");
    const met = await cli(
      ...base(),
      "--policy",
      rel,
      "--min-answer-kept",
      "0.9",
      "--min-evidence-recall",
      "1",
      "--max-mean-tokens",
      "500",
    );
    expect(met.code).toBe(0);
    const tokens = await cli(...base(), "--policy", rel, "--max-mean-tokens", "5");
    expect(tokens.code).toBe(1);
    expect(tokens.out).toMatch(/FAIL rel: tokens mean \d+ \(required ≤ 5\)/);
  });

  test("--policy takes a directory (every policy file in it, by name)", async () => {
    const run = await cli(...base(), "--policy", scratch.dir, "--json");
    expect(run.code).toBe(0);
    expect(JSON.parse(run.out).policies.map((p: { label: string }) => p.label)).toEqual(["lead", "rel"]);
  });

  test("each policy is scored on its own fetch: reply turns by its own retrieval.questionAt, whatever else runs", async () => {
    // "anywhere" counts ana's turn as a question (a question mark mid-turn) and brings its reply, which holds the
    // answer; "end" does not. Run together, "end" must not be scored on the reply turns "anywhere" fetched.
    const memories = file(
      "ana.jsonl",
      jsonl([
        {
          id: "a-1",
          userId: "ana",
          type: "message",
          role: "user",
          sessionId: "s-5",
          timestamp: "2026-06-01T10:00:00Z",
          content: "Ha, which bakery did you recommend for the cake? I forgot again. Anyway, thanks.",
        },
        {
          id: "a-2",
          userId: "ana",
          type: "message",
          role: "assistant",
          sessionId: "s-5",
          timestamp: "2026-06-01T10:01:00Z",
          content: "It was Crumb and Co on Dale Road.",
        },
      ]),
    );
    const questions = file(
      "ana-golden.jsonl",
      jsonl([
        {
          id: "qa",
          userId: "ana",
          query: "which bakery did you recommend for the cake?",
          category: "single-hop",
          lang: "en",
          expectedIds: ["a-2"],
          answers: ["Crumb and Co"],
        },
      ]),
    );
    const policy = (name: string, retrieval: string) =>
      file(`${name}.yaml`, `name: ${name}\nversion: 1\nretrieval: { topK: 8, minScore: 0, ${retrieval} }\n`);
    const anywhere = policy("anywhere", "replies: true, questionAt: anywhere");
    const end = policy("end", "replies: true, questionAt: end");
    const plain = policy("plain", "replies: false");
    const run = async (...policies: string[]) => {
      const args = ["eval", "--golden", questions, "--backend", "local", "--data", memories, "--json"];
      const r = await cli(...args, ...policies.flatMap((p) => ["--policy", p]));
      expect(r.err).toBe("");
      const report = JSON.parse(r.out) as { policies: { label: string; overall: { answerKept: number } }[] };
      return Object.fromEntries(report.policies.map((p) => [p.label, p.overall.answerKept]));
    };
    const together = await run(anywhere, end, plain);
    expect(together).toEqual({ anywhere: 1, end: 0, plain: 0 });
    expect(together).toEqual({ ...(await run(anywhere)), ...(await run(end)), ...(await run(plain)) });
  });

  test.each([
    [
      "a golden line without a query",
      () => [...argsWith(file("g1.jsonl", jsonl([{ id: "x", userId: "priya", answers: ["a"] }])))],
      /g1\.jsonl:1: query: /,
    ],
    [
      "a question with nothing to measure",
      () => argsWith(file("g2.jsonl", jsonl([{ id: "x", userId: "priya", query: "q" }]))),
      /g2\.jsonl:1: needs expectedIds or answers/,
    ],
    [
      "a repeated question id",
      () => argsWith(file("g3.jsonl", jsonl([QUESTIONS[0] ?? {}, QUESTIONS[0] ?? {}]))),
      /g3\.jsonl:2: id: duplicate id "q1" \(first at line 1\)/,
    ],
    ["not JSON", () => argsWith(file("g4.jsonl", "{nope\n")), /g4\.jsonl:1: invalid JSON/],
    [
      "a threshold out of range",
      () => [...base(), "--policy", rel, "--min-answer-kept", "2"],
      /^--min-answer-kept: must be a share from 0 to 1/,
    ],
    [
      "a policy file that does not validate",
      () => [...base(), "--policy", file("bad.yml", "name: bad\nversion: 1\nretrieval: { topK: 50 }\n")],
      /bad\.yml:3: retrieval\.topK: must be an integer from 1 to 20/,
    ],
    [
      "a missing policy file",
      () => [...base(), "--policy", scratch.path("nope.yaml")],
      /^--policy: .*nope\.yaml: no such file or directory/,
    ],
    [
      "both recorded candidates and a backend",
      () => ["eval", "--golden", golden, "--candidates", data, "--backend", "local", "--policy", rel],
      /^--candidates: give either/,
    ],
    [
      "recorded candidates that miss a question",
      () => ["eval", "--golden", golden, "--candidates", file("rec.jsonl", ""), "--policy", rel],
      /rec\.jsonl: no candidates for question "q1"/,
    ],
  ])("bad input (%s): exit 2, one line naming the place", async (_name, args, message) => {
    const run = await cli(...(args as () => string[])());
    expect(run.code).toBe(2);
    expect(run.out).toBe("");
    expect(run.err.split("\n")).toHaveLength(1);
    expect(run.err).toMatch(message as RegExp);
  });
});

function argsWith(goldenFile: string): string[] {
  return ["eval", "--golden", goldenFile, "--backend", "local", "--data", data, "--policy", rel];
}
