/**
 * docs/policy.md#determinism: same policy + same candidates ⇒ byte-identical `memories` and `systemPrompt` on any host,
 * time zone or locale. Child processes run the built CLI (`dist/`, what `bin/memgate.js` runs) under
 * different `TZ` and `LANG`/`LC_ALL`, and must agree with each other and with this process.
 */
import { execFile, execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { runPipeline } from "../../src/pipeline";
import { replayInputSchema } from "../../src/pipeline/candidate";
import { compilePolicy } from "../../src/policy/compile";
import { parsePolicyText } from "../../src/policy/load";
import { buildPayload } from "../../src/retrieval/payload";

const run = promisify(execFile);
const ROOT = resolve(__dirname, "../..");
const CLI = join(ROOT, "dist", "cli", "main.js");
const REPLAY = join(ROOT, "dist", "cli", "replay.js");

/**
 * Every zone and every locale at least once (UTC+0, UTC−8/−7 with DST, UTC+5:30, UTC+12:45/+13:45 with DST;
 * POSIX, German, Turkish with its dotless i, Japanese), and Turkish twice. Process start-up dominates the
 * cost, so the full product (16 children) would add seconds and no coverage.
 */
const ENVIRONMENTS: ReadonlyArray<{ TZ: string; LANG: string }> = [
  { TZ: "UTC", LANG: "C" },
  { TZ: "America/Los_Angeles", LANG: "de_DE.UTF-8" },
  { TZ: "Asia/Kolkata", LANG: "tr_TR.UTF-8" },
  { TZ: "Pacific/Chatham", LANG: "ja_JP.UTF-8" },
  { TZ: "Pacific/Chatham", LANG: "tr_TR.UTF-8" },
];

/**
 * Candidates where a host-dependent implementation would differ: Turkish dotted/dotless i in duplicates
 * (lower-casing in the host's locale maps "I" to "ı" under tr_TR), ids whose locale order differs from
 * code-unit order, tied scores and times, a timestamp without an offset (read in the host's zone by
 * `Date.parse`) whose order against its neighbours flips between zones, instants in DST transitions, and
 * recency-first ordering so the timestamps decide the order. Checked to catch: `Date.parse` of that timestamp,
 * `toLocaleString` for the prompt's times or confidences.
 */
const TRICKY_INPUT = {
  query: "İstanbul?",
  userId: "u-tr",
  results: [
    { id: "b", content: "ISTANBUL IN WINTER IS ICY.", score: 0.8, timestamp: "2026-01-01T12:00:00Z" },
    { id: "B", content: "istanbul in winter is icy", score: 0.8, timestamp: "2026-01-01T12:00:00Z" },
    { id: "ä", content: "İzmir has a quiet İnn.", score: 0.7, timestamp: "2026-01-01T10:00:00" },
    {
      id: "a",
      content: "Izmir had nice weather in spring.",
      score: 0.7,
      timestamp: "2026-01-01T06:00:00+00:00",
    },
    {
      id: "Z",
      content: "The clocks changed at 2:30 that night.",
      score: 0.6,
      timestamp: "2026-03-08T02:30:00-08:00",
    },
    {
      id: "z",
      content: "Daylight saving time ended at dawn.",
      score: 0.6,
      timestamp: "2026-04-05T03:45:00+13:45",
    },
    {
      id: "10",
      content: "Dr. Aydın said 3.5 mg, e.g. twice a day. Take it with food. Never at night.",
      score: 0.9,
      timestamp: "2025-10-26T01:30:00+01:00",
    },
    {
      id: "9",
      content: "東京で会いましょう。駅の前で。三時に。",
      score: 0.9,
      timestamp: "2025-12-31T23:59:59.999Z",
    },
  ].map((c) => ({ ...c, sessionId: "s-1", type: "message", role: "user" })),
};

/** A policy with no `format` (UTC), recency first, approx tokens: the timestamps decide the order. */
const POLICY_WITHOUT_TIME_ZONE = `
name: no-tz
version: 1
retrieval: { topK: 20, clipSentences: 2, maxTokens: 100, minScore: 0 }
interleaving: { strategy: recency_first }
tokenizer: approx
`;

let dir = "";
const cases: Array<{ name: string; policy: string; input: string }> = [];

beforeAll(() => {
  if (!existsSync(CLI) || !existsSync(REPLAY)) {
    // `npm test` builds dist/ first; when jest runs alone, build it rather than test nothing.
    execFileSync(process.execPath, [require.resolve("typescript/bin/tsc"), "-p", "tsconfig.build.json"], {
      cwd: ROOT,
      stdio: "inherit",
    });
  }
  if (!existsSync(CLI) || !existsSync(REPLAY)) throw new Error("dist/ is incomplete after `npm run build`");
  dir = mkdtempSync(join(tmpdir(), "memgate-determinism-"));
  const noTz = join(dir, "no-tz.yaml");
  writeFileSync(noTz, POLICY_WITHOUT_TIME_ZONE);
  const tricky = join(dir, "tricky.json");
  writeFileSync(tricky, JSON.stringify(TRICKY_INPUT));
  const examplePolicy = join(ROOT, "examples", "replay-policy.yaml");
  const exampleInput = join(ROOT, "examples", "replay-input.json");
  cases.push(
    { name: "example policy (America/New_York) on the example", policy: examplePolicy, input: exampleInput },
    { name: "example policy (America/New_York) on tricky input", policy: examplePolicy, input: tricky },
    { name: "policy without format.timeZone on the example", policy: noTz, input: exampleInput },
    { name: "policy without format.timeZone on tricky input", policy: noTz, input: tricky },
  );
});

afterAll(() => {
  if (dir !== "") rmSync(dir, { recursive: true, force: true });
});

interface Replayed {
  memories: string;
  systemPrompt: string;
  hash: string;
}

/** The parts that must be byte-identical: `memories` exactly as the CLI prints them, the prompt as is. */
function pick(payload: {
  memories: unknown;
  systemPrompt: string;
  metadata: { policy: { hash: string } };
}): Replayed {
  return {
    memories: JSON.stringify(payload.memories, null, 2),
    systemPrompt: payload.systemPrompt,
    hash: payload.metadata.policy.hash,
  };
}

/**
 * One child per environment runs every case through the built `memgate replay` command (one process start
 * instead of four, and without loading the server half of the CLI: start-up dominates the cost) and prints
 * each case's stdout and exit code as JSON. `bin/memgate.js` itself runs once, below.
 */
const DRIVER = `
const { replayCommand } = require(process.argv[1]);
const cases = JSON.parse(process.argv[2]);
(async () => {
  const results = [];
  for (const c of cases) {
    const out = [];
    const err = [];
    const code = await replayCommand({ policy: c.policy, input: c.input }, {
      out: (line) => out.push(line),
      err: (line) => err.push(line),
    });
    results.push({ code, stdout: out.join("\\n"), stderr: err.join("\\n") });
  }
  process.stdout.write(JSON.stringify(results));
})();
`;

async function replayIn(env: { TZ: string; LANG: string }): Promise<Replayed[]> {
  const { stdout } = await run(process.execPath, ["-e", DRIVER, REPLAY, JSON.stringify(cases)], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? "", TZ: env.TZ, LANG: env.LANG, LC_ALL: env.LANG },
    maxBuffer: 16 * 1024 * 1024,
  });
  const results = JSON.parse(stdout) as Array<{ code: number; stdout: string; stderr: string }>;
  return results.map((r, i) => {
    if (r.code !== 0)
      throw new Error(`${cases[i]?.name} under ${JSON.stringify(env)}: exit ${r.code}: ${r.stderr}`);
    return pick(JSON.parse(r.stdout) as Parameters<typeof pick>[0]);
  });
}

/** The same replay in this process, from src/: the reference the children must match. */
function replayHere(policyFile: string, inputFile: string): Replayed {
  const parsed = parsePolicyText(readFileSync(policyFile, "utf8"), policyFile);
  if (!parsed.ok) throw new Error(`invalid policy ${policyFile}`);
  const compiled = compilePolicy(parsed.policy);
  const input = replayInputSchema.parse(JSON.parse(readFileSync(inputFile, "utf8")));
  const result = runPipeline(
    { userId: input.userId, query: input.query, candidates: input.results, backend: "replay" },
    compiled,
  );
  return pick(buildPayload(result, compiled, { backend: "replay", cache: "bypass", queryTimeMs: 0 }));
}

/** Each environment's results, case by case (filled once: starting the children is the slow part). */
let runs: Replayed[][] = [];
/** `bin/memgate.js replay` itself (what `npx memgate` runs), once, in the most unusual environment. */
let binary: Replayed | undefined;
const BINARY_ENV = { TZ: "Pacific/Chatham", LANG: "tr_TR.UTF-8" };
beforeAll(async () => {
  const example = cases[0];
  if (example === undefined) throw new Error("cases not set up");
  const [all, bin] = await Promise.all([
    Promise.all(ENVIRONMENTS.map(replayIn)),
    run(
      process.execPath,
      [join(ROOT, "bin", "memgate.js"), "replay", "--policy", example.policy, "--input", example.input],
      {
        cwd: ROOT,
        env: {
          PATH: process.env.PATH ?? "",
          TZ: BINARY_ENV.TZ,
          LANG: BINARY_ENV.LANG,
          LC_ALL: BINARY_ENV.LANG,
        },
        maxBuffer: 16 * 1024 * 1024,
      },
    ),
  ]);
  runs = all;
  binary = pick(JSON.parse(bin.stdout) as Parameters<typeof pick>[0]);
});

const where = (c: { name: string }, env: { TZ: string; LANG: string }): string =>
  `${c.name} under TZ=${env.TZ} LANG=${env.LANG}`;

/** The first line where two texts differ, to say where a mismatch is without a 200-line diff. */
function firstDifference(a: string, b: string): string {
  const x = a.split("\n");
  const y = b.split("\n");
  const i = x.findIndex((line, n) => line !== y[n]);
  const n = i === -1 ? x.length : i;
  return `line ${n + 1}: ${JSON.stringify(x[n])} vs ${JSON.stringify(y[n])}`;
}

test("replay output is byte-identical under every TZ and LANG, and equal to this process's", () => {
  expect(runs).toHaveLength(ENVIRONMENTS.length);
  const mismatches: string[] = [];
  cases.forEach((c, i) => {
    const expected = replayHere(c.policy, c.input);
    // Not a vacuous comparison: every case yields memories and a prompt.
    expect(expected.memories).toContain('"id"');
    expect(expected.systemPrompt).toContain("Relevant Context");
    runs.forEach((results, e) => {
      const env = ENVIRONMENTS[e];
      const got = results[i];
      if (env === undefined || got === undefined) throw new Error("missing result");
      for (const field of ["memories", "systemPrompt", "hash"] as const) {
        if (got[field] !== expected[field]) {
          mismatches.push(
            `${where(c, env)}: ${field} differs, ${firstDifference(got[field], expected[field])}`,
          );
        }
      }
    });
  });
  expect(mismatches).toEqual([]);
});

test("bin/memgate.js replay prints the same bytes", () => {
  const example = cases[0];
  if (example === undefined) throw new Error("cases not set up");
  expect(binary).toEqual(replayHere(example.policy, example.input));
});

test("the prompt shows times in the policy's zone, or UTC without one, whatever the host's zone", () => {
  const [, tricky, , noTz] = cases;
  if (tricky === undefined || noTz === undefined) throw new Error("cases not set up");
  for (const results of runs) {
    // 2026-01-01T12:00:00Z is 07:00 in New York; the offset-less 2026-01-01T10:00:00 is read as UTC.
    expect(results[1]?.systemPrompt).toContain("[2026-01-01T07:00:00-05:00] user:");
    expect(results[1]?.systemPrompt).toContain("[2026-01-01T05:00:00-05:00] user:");
    expect(results[3]?.systemPrompt).toContain("[2026-01-01T10:00:00Z] user:");
  }
});

test("an offset-less timestamp is ordered as UTC, like it is displayed, in every zone", () => {
  for (const [e, results] of runs.entries()) {
    const memories = JSON.parse(results[3]?.memories ?? "[]") as Array<{ id: string }>;
    // recency_first: 04-05 "z", 03-08 "Z", 01-01T12:00Z "B" ("b" is its duplicate: same score and time, and
    // "B" < "b"), then the offset-less 01-01T10:00 "ä", then 01-01T06:00Z "a".
    expect([ENVIRONMENTS[e], memories.slice(0, 5).map((m) => m.id)]).toEqual([
      ENVIRONMENTS[e],
      ["z", "Z", "B", "ä", "a"],
    ]);
  }
});
