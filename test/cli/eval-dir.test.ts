/**
 * `memgate eval --golden <dir> --data <dir>`: a golden set written one pair of files per user (as the long
 * conversations in eval/golden/long/), loaded by name into one store; and each question's turn time.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { cliText, jsonl } from "../helpers/cli";

const cli = cliText;

const memory = (id: string, userId: string, timestamp: string, content: string) => ({
  id,
  userId,
  type: "message",
  role: "user",
  sessionId: `${userId}-s1`,
  timestamp,
  content,
});

let root = "";
let long = "";
let policy = "";

beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), "memgate-evaldir-"));
  long = join(root, "long");
  mkdirSync(long);
  const write = (name: string, text: string) => writeFileSync(join(long, name), text);
  // Written in the reverse of name order: the run must not depend on the directory's order.
  write(
    "zoe.memories.jsonl",
    jsonl([
      memory("zoe-1", "zoe", "2026-05-01T09:00:00Z", "Zoe: my dentist is Dr. Lind on Pine Road."),
      memory("zoe-2", "zoe", "2026-06-12T18:30:00Z", "Zoe: the dentist moved my check-up to July."),
    ]),
  );
  write(
    "zoe.questions.jsonl",
    jsonl([
      {
        id: "zoe-q1",
        userId: "zoe",
        query: "who is my dentist?",
        category: "single-hop",
        answers: ["Dr. Lind"],
      },
      {
        id: "zoe-q2",
        userId: "zoe",
        query: "when is my dentist check-up?",
        category: "temporal",
        answers: ["July"],
        asOf: "2026-06-20T10:00:00+02:00",
      },
    ]),
  );
  write(
    "amy.memories.jsonl",
    jsonl([memory("amy-1", "amy", "2026-03-03T07:15:00Z", "Amy: my cat is called Pepper.")]),
  );
  write(
    "amy.questions.jsonl",
    jsonl([
      {
        id: "amy-q1",
        userId: "amy",
        query: "what is my cat called?",
        category: "single-hop",
        answers: ["Pepper"],
      },
      { id: "amy-q2", userId: "amy", query: "what is my passport number?", category: "unanswerable" },
    ]),
  );
  write("README.md", "not a golden file\n");
  policy = join(root, "p.yaml");
  writeFileSync(policy, "name: p\nversion: 1\nretrieval: { minScore: 0 }\nclip: { mode: off }\n");
});
afterAll(() => {
  jest.useRealTimers();
  rmSync(root, { recursive: true, force: true });
});

interface Outcome {
  id: string;
  turnTime: string | null;
  answerKept: boolean | null;
  tokens: number;
}

const dirArgs = (...more: string[]) => [
  "eval",
  "--golden",
  long,
  "--backend",
  "local",
  "--data",
  long,
  "--policy",
  policy,
  ...more,
];

describe("memgate eval on a directory", () => {
  test("every *.questions.jsonl by name, every *.memories.jsonl in one store", async () => {
    const run = await cli(...dirArgs("--json"));
    expect(run.err).toBe("");
    expect(run.code).toBe(0);
    const report = JSON.parse(run.out) as {
      questions: number;
      users: number;
      policies: Array<{ outcomes: Outcome[]; overall: { answerKept: number } }>;
    };
    expect(report.questions).toBe(4);
    expect(report.users).toBe(2);
    const outcomes = report.policies[0]?.outcomes ?? [];
    expect(outcomes.map((o) => o.id)).toEqual(["amy-q1", "amy-q2", "zoe-q1", "zoe-q2"]);
    // Both users' memories were searched: every answerable question keeps its answer.
    expect(report.policies[0]?.overall.answerKept).toBe(1);
  });

  test("each question runs at its turn time: asOf, else its newest candidate; never the host clock", async () => {
    // The host clock says 2031: a run that read it would show it.
    jest.useFakeTimers({
      now: Date.parse("2031-07-04T00:00:00Z"),
      doNotFake: [
        "nextTick",
        "setImmediate",
        "clearImmediate",
        "setTimeout",
        "clearTimeout",
        "setInterval",
        "clearInterval",
        "queueMicrotask",
        "hrtime",
        "performance",
      ],
    });
    try {
      expect(new Date().getUTCFullYear()).toBe(2031);
      const run = await cli(...dirArgs("--json"));
      expect(run.code).toBe(0);
      const outcomes = (JSON.parse(run.out) as { policies: Array<{ outcomes: Outcome[] }> }).policies[0]
        ?.outcomes;
      const turn = (id: string) => outcomes?.find((o) => o.id === id)?.turnTime;
      expect(turn("zoe-q2")).toBe("2026-06-20T08:00:00.000Z"); // asOf, in UTC
      expect(turn("zoe-q1")).toBe("2026-06-12T18:30:00.000Z"); // the newest of zoe's candidates
      expect(turn("amy-q1")).toBe("2026-03-03T07:15:00.000Z");
    } finally {
      jest.useRealTimers();
    }
  });

  test("the report counts unanswerable questions apart: no answer to keep, the verdict unknown, their tokens", async () => {
    const run = await cli(...dirArgs());
    expect(run.code).toBe(0);
    expect(run.out).toMatch(
      /unanswerable questions \(1\): called insufficient by the pipeline, tokens spent/,
    );
    expect(run.out).toMatch(/^p\s+—\s+—\s+\d+$/m);
  });

  test.each([
    [
      "an id in two files",
      () => {
        const dup = join(root, "dup");
        mkdirSync(dup, { recursive: true });
        writeFileSync(
          join(dup, "a.memories.jsonl"),
          jsonl([memory("m-1", "a", "2026-01-01T00:00:00Z", "a")]),
        );
        writeFileSync(
          join(dup, "b.memories.jsonl"),
          jsonl([memory("m-1", "b", "2026-01-01T00:00:00Z", "b")]),
        );
        return ["eval", "--golden", long, "--backend", "local", "--data", dup, "--policy", policy];
      },
      /dup\/b\.memories\.jsonl: id: duplicate id "m-1" \(first defined in .*dup\/a\.memories\.jsonl\)$/,
    ],
    [
      "a question id in two files",
      () => {
        const dup = join(root, "dupq");
        mkdirSync(dup, { recursive: true });
        const q = { id: "q", userId: "a", query: "x?", answers: ["x"] };
        writeFileSync(join(dup, "a.questions.jsonl"), jsonl([q]));
        writeFileSync(join(dup, "b.questions.jsonl"), jsonl([q]));
        return ["eval", "--golden", dup, "--backend", "local", "--data", long, "--policy", policy];
      },
      /dupq\/b\.questions\.jsonl: id: duplicate id "q" \(first in .*dupq\/a\.questions\.jsonl\)$/,
    ],
    [
      "a directory without questions",
      () => ["eval", "--golden", root, "--backend", "local", "--data", long, "--policy", policy],
      /: no \*\.questions\.jsonl files in this directory$/,
    ],
  ])("bad input (%s): exit 2, one line", async (_name, args, message) => {
    const run = await cli(...(args as () => string[])());
    expect(run.code).toBe(2);
    expect(run.err.split("\n")).toHaveLength(1);
    expect(run.err).toMatch(message as RegExp);
  });
});
