/**
 * A tripwire for refactors of the pipeline's internals (the shared per-request text index, caches, faster data
 * structures): the shipped policies, the eval policies and a few variants run over golden-set conversations, and
 * the whole result of every run — memories, systemPrompt, the trace with `explain` (ranking signals, clip's kept
 * sentences), the query analysis and the sufficiency certificate — must hash as it did when the hashes below were
 * recorded. A change that is *meant* to alter what a policy returns updates them and says so in its commit; a
 * speed-up never does. (scripts/pipeline-hashes.ts runs the same check over the whole long golden set.)
 *
 * Candidates: for each question, a window of 40 consecutive turns of its user around the first evidence turn,
 * scored by a fixed permutation; a turn answering a question turn (previous content ends with "?") carries
 * `replyTo`, as the local store's reply turns do.
 */
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { runPipeline } from "../../src/pipeline";
import type { Candidate, MemoryType, StageTrace } from "../../src/pipeline/types";
import { compilePolicy } from "../../src/policy/compile";
import { parsePolicyText } from "../../src/policy/load";
import { type Policy, policySchema } from "../../src/policy/schema";

const ROOT = resolve(__dirname, "../..");
const GOLDEN = resolve(ROOT, "eval/golden/long");
/** One user per language of the set (en, de, fr, es), and a second English one. */
const USERS = ["ben", "clara", "julie", "mateo", "maya"];
const QUESTIONS_PER_USER = 8;

interface Memory {
  id: string;
  type: MemoryType;
  sessionId: string;
  timestamp: string;
  content: string;
}
interface Question {
  id: string;
  query: string;
  expectedIds: string[];
}

function jsonl<T>(file: string): T[] {
  return readFileSync(file, "utf8")
    .split("\n")
    .filter((l) => l.trim() !== "")
    .map((l) => JSON.parse(l) as T);
}

function loadPolicy(file: string): Policy {
  const parsed = parsePolicyText(readFileSync(resolve(ROOT, file), "utf8"), file);
  if (!parsed.ok) throw new Error(`${file}: ${JSON.stringify(parsed.problems)}`);
  return parsed.policy;
}

interface Case {
  userId: string;
  query: string;
  turnTime: number;
  candidates: Candidate[];
}

function cases(): Case[] {
  const out: Case[] = [];
  for (const user of USERS) {
    const memories = jsonl<Memory>(resolve(GOLDEN, `${user}.memories.jsonl`));
    const questions = jsonl<Question>(resolve(GOLDEN, `${user}.questions.jsonl`));
    // Every 13th question, so the categories (they come in runs) are mixed.
    for (let q = 0; q < QUESTIONS_PER_USER; q++) {
      const question = questions[(q * 13) % questions.length] as Question;
      const at = Math.max(
        0,
        memories.findIndex((m) => m.id === question.expectedIds[0]),
      );
      const window = memories.slice(Math.max(0, at - 17), Math.max(0, at - 17) + 40);
      const candidates = window.map((m, i): Candidate => {
        const c: Candidate = {
          id: m.id,
          content: m.content,
          // A fixed permutation of the window (7 is prime to 40): scores unrelated to the order.
          score: Math.round((0.95 - ((i * 7) % 40) * 0.02) * 1000) / 1000,
          timestamp: m.timestamp,
          sessionId: m.sessionId,
          type: m.type,
        };
        const previous = window[i - 1];
        if (previous?.content.trimEnd().endsWith("?")) c.replyTo = previous.id;
        return c;
      });
      const turnTime = Math.max(...memories.map((m) => Date.parse(m.timestamp)));
      out.push({ userId: user, query: question.query, turnTime, candidates });
    }
  }
  return out;
}

/** The policies and variants whose every output is pinned (the v3 default, not the shipped one: retuning the shipped default must not move these). */
function subjects(): Array<[string, Policy]> {
  const def = loadPolicy("eval/policies/default-v3.yaml");
  const pii = loadPolicy("policies/strict-pii.yaml");
  const variant = (patch: Partial<Policy>) => policySchema.parse({ ...def, ...patch });
  return [
    ["eval/policies/default-v3.yaml", def],
    ["eval/policies/seed-000.yaml", loadPolicy("eval/policies/seed-000.yaml")],
    ["eval/policies/default-leading.yaml", loadPolicy("eval/policies/default-leading.yaml")],
    ["eval/policies/relevant-3.yaml", loadPolicy("eval/policies/relevant-3.yaml")],
    ["eval/policies/top20-whole.yaml", loadPolicy("eval/policies/top20-whole.yaml")],
    ["policies/recency-heavy.yaml", loadPolicy("policies/recency-heavy.yaml")],
    ["default, cl100k_base", variant({ tokenizer: "cl100k_base" })],
    ["default, approx", variant({ tokenizer: "approx" })],
    ["default + strict-pii redaction", variant({ redaction: pii.redaction })],
    [
      "default, λ 1, fixed K, truncate, no fill",
      variant({
        ranking: { ...def.ranking, diversity: 1, dynamicK: { ...def.ranking.dynamicK, enabled: false } },
        budget: { ...def.budget, packing: "truncate", fill: false },
      }),
    ],
  ];
}

/**
 * Recorded on the code before the shared per-request text index: sha256 of every run's JSON,
 * first 16 hex digits. The ranked policies' pins were re-recorded once when explain gained two fields (the rank
 * stage's `entities` detail and the query analysis' `turnTime`); with those two left out the old pins held.
 */
const EXPECTED: Record<string, string> = {
  "eval/policies/default-v3.yaml": "6bc7538fc3925650",
  "eval/policies/seed-000.yaml": "e1cf9e2908dbaefe",
  "eval/policies/default-leading.yaml": "c9340edf74702c0b",
  "eval/policies/relevant-3.yaml": "322650ecec7a8338",
  "eval/policies/top20-whole.yaml": "1a6e719be0ebaafa",
  "policies/recency-heavy.yaml": "3174d73ad77cbb34",
  "default, cl100k_base": "53eb0a6704bd2461",
  "default, approx": "e9c8ba8b9c28ac0c",
  "default + strict-pii redaction": "b4ec1f846c13dd18",
  "default, λ 1, fixed K, truncate, no fill": "acd62f1ccc11a53b",
};

/**
 * The trace as it was when the pins were recorded (issue 28 changed only how explain reports, not what a policy
 * keeps): no `fetch` entry, the `top_k` cut inside `deduplication`, kept sentences numbered from 0. Anything else
 * that differs still moves the hash.
 */
function asRecorded(result: ReturnType<typeof runPipeline>): ReturnType<typeof runPipeline> {
  const trace: StageTrace[] = [];
  for (const t of result.trace) {
    if (t.stage === "fetch") continue;
    const prev = trace.at(-1);
    if (t.stage === "top_k" && prev?.stage === "deduplication") {
      trace[trace.length - 1] = {
        ...prev,
        out: t.out,
        changes: [...prev.changes, ...t.changes],
        detail: { ...prev.detail, ...t.detail },
      };
      continue;
    }
    const changes = t.changes.map((c) =>
      c.sentences === undefined
        ? c
        : {
            ...c,
            sentences: {
              ...c.sentences,
              kept: c.sentences.kept.map((k) => ({ ...k, sentence: k.sentence - 1 })),
            },
          },
    );
    trace.push({ ...t, changes });
  }
  return { ...result, trace };
}

describe("pipeline outputs are pinned (refactors must not change a byte)", () => {
  const all = cases();
  it("has a case per question", () => {
    expect(all).toHaveLength(USERS.length * QUESTIONS_PER_USER);
  });
  for (const [label, policy] of subjects()) {
    it(label, () => {
      const compiled = compilePolicy(policy);
      const hash = createHash("sha256");
      for (const c of all) {
        const result = runPipeline({ ...c, backend: "local", explain: true }, compiled);
        hash.update(JSON.stringify(asRecorded(result)));
      }
      expect(hash.digest("hex").slice(0, 16)).toBe(EXPECTED[label]);
    });
  }
});
