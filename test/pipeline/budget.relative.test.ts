/**
 * `budget.relative`: the request's budget is min(`retrieval.maxTokens`, floor(share × T)), T the tokens of the
 * backend's first `topK` candidates whole, as they arrived (reply turns it added not counted). Strict; shown in
 * the token_budget detail; the effective budget replaces maxTokens for sections, refs and stop; absent ⇒ as before.
 */
import fc from "fast-check";
import { formatProblem } from "../../src/config/yaml";
import { runPipeline } from "../../src/pipeline";
import { analyzeQuery } from "../../src/pipeline/query/analyze";
import {
  budgetStage,
  measureRelative,
  relativeBudget,
  relativeTokens,
} from "../../src/pipeline/stages/budget";
import { getTokenizer } from "../../src/pipeline/tokenizers";
import type { Candidate } from "../../src/pipeline/types";
import { compilePolicy } from "../../src/policy/compile";
import { parsePolicyText } from "../../src/policy/load";
import type { PolicyInput } from "../../src/policy/schema";
import { makeCandidate, makeItem, makePolicy } from "../helpers/items";

const approx = getTokenizer("approx");
const ctx = {
  redactor: { enabled: false, redact: (text: string) => ({ text, fired: [] }) },
  tokenizer: approx,
};

/** Ten memories of 20 approx tokens each, scores falling. */
const candidates: Candidate[] = Array.from({ length: 10 }, (_, i) =>
  makeCandidate({ id: `m${i}`, content: `${i} ${"word ".repeat(16)}`.trim(), score: 0.9 - i * 0.05 }),
);
const each = approx.count(candidates[0]?.content ?? "");

function policyWith(patch: Partial<PolicyInput>) {
  return compilePolicy(makePolicy({ tokenizer: "approx", retrieval: { minScore: 0 }, ...patch }));
}

const run = (policy: ReturnType<typeof policyWith>, list: readonly Candidate[] = candidates) =>
  runPipeline({ userId: "u", query: "word", candidates: list, backend: "local", explain: true }, policy);

const budgetTrace = (r: ReturnType<typeof run>) => r.trace.find((t) => t.stage === "token_budget");

describe("budget.relative", () => {
  test("T counts the first topK candidates whole, in the backend's order, replies left out", () => {
    const items = [
      makeItem({ id: "a", content: "one two three four" }),
      makeItem({ id: "r", content: "a reply turn of many many words here", origin: "reply" }),
      makeItem({ id: "b", content: "five six" }),
      makeItem({ id: "c", content: "seven eight nine ten eleven" }),
    ];
    const count = (s: string) => approx.count(s);
    expect(relativeTokens(items, 2, approx)).toBe(count("one two three four") + count("five six"));
    expect(relativeTokens(items, 50, approx)).toBe(
      count("one two three four") + count("five six") + count("seven eight nine ten eleven"),
    );
    expect(relativeTokens([], 20, approx)).toBe(0);
    expect(relativeBudget(450, { topK: 20, share: 0.6 }, 416)).toBe(249);
    expect(relativeBudget(450, { topK: 20, share: 0.6 }, 1000)).toBe(450);
    // minTokens: a floor under share × T for a user with only a few short memories, still capped by maxTokens.
    expect(relativeBudget(450, { topK: 20, share: 0.6, minTokens: 150 }, 100)).toBe(150);
    expect(relativeBudget(450, { topK: 20, share: 0.6, minTokens: 150 }, 416)).toBe(249);
    expect(relativeBudget(120, { topK: 20, share: 0.6, minTokens: 150 }, 100)).toBe(120);
  });

  test("the budget is min(maxTokens, floor(share × T)) and the detail shows it", () => {
    const policy = policyWith({
      retrieval: { topK: 10, maxTokens: 1000, minScore: 0 },
      budget: { packing: "skip", relative: { topK: 5, share: 0.5 } },
    } as Partial<PolicyInput>);
    const r = run(policy);
    const T = 5 * each;
    const budget = Math.floor(0.5 * T);
    expect(r.totalTokens).toBeLessThanOrEqual(budget);
    expect(r.memories).toHaveLength(Math.floor(budget / each));
    expect(budgetTrace(r)?.detail).toMatchObject({
      maxTokens: budget,
      policyMaxTokens: 1000,
      relativeTopK: 5,
      relativeShare: 0.5,
      relativeTokens: T,
      relativeCounted: 5,
    });
  });

  test("complexShare: the share follows the question's complexity, share at 0 up to complexShare at 1", () => {
    const policy = policyWith({
      retrieval: { topK: 10, maxTokens: 1000, minScore: 0 },
      budget: { packing: "skip", relative: { topK: 10, share: 0.2, complexShare: 0.8 } },
    } as Partial<PolicyInput>);
    const T = 10 * each;
    const budgets = [
      "word",
      "Which two words did Ben and Aisha each say before the move, and when did they say them?",
    ].map((query) => {
      const complexity = analyzeQuery(query, undefined).complexity;
      const share = Math.round((0.2 + 0.6 * complexity) * 1e6) / 1e6;
      const r = runPipeline({ userId: "u", query, candidates, backend: "local", explain: true }, policy);
      expect(budgetTrace(r)?.detail).toMatchObject({
        maxTokens: Math.floor(share * T),
        relativeShare: share,
        relativeComplexShare: 0.8,
        relativeTokens: T,
      });
      expect(r.totalTokens).toBeLessThanOrEqual(Math.floor(share * T));
      return Math.floor(share * T);
    });
    // The multi-part question gets more of T than the one-word one.
    expect(budgets[1]).toBeGreaterThan(budgets[0] ?? Number.POSITIVE_INFINITY);
  });

  test("maxTokens still caps a large share", () => {
    const policy = policyWith({
      retrieval: { topK: 10, maxTokens: 100, minScore: 0 },
      budget: { relative: { topK: 10, share: 1 } },
    } as Partial<PolicyInput>);
    const r = run(policy);
    // Counting stops once floor(share × T) reaches maxTokens: the rest could not change the budget.
    expect(budgetTrace(r)?.detail).toMatchObject({
      maxTokens: 100,
      relativeTokens: Math.ceil(100 / each) * each,
      relativeCounted: Math.ceil(100 / each),
    });
    expect(r.totalTokens).toBeLessThanOrEqual(100);
  });

  test("sections share the effective budget", () => {
    const items = candidates.map((c) => makeItem(c));
    const policy = makePolicy({
      tokenizer: "approx",
      budget: { packing: "skip", sections: { fact: 0.5 }, relative: { topK: 10, share: 0.5 } },
    } as Partial<PolicyInput>);
    const budget = Math.floor(0.5 * 10 * each);
    const out = budgetStage(items, policy, ctx, {
      relative: { tokens: 10 * each, counted: 10, maxTokens: budget },
    });
    expect(out.trace.detail).toMatchObject({ maxTokens: budget, factShare: Math.floor(budget / 2) });
    expect(out.usedTokens).toBeLessThanOrEqual(Math.floor(budget / 2));
  });

  test("refs count against the effective budget", () => {
    const policy = policyWith({
      retrieval: { topK: 10, maxTokens: 1000, minScore: 0 },
      budget: { relative: { topK: 10, share: 0.5 } },
      format: { citations: "on" },
    } as Partial<PolicyInput>);
    const r = run(policy);
    const detail = budgetTrace(r)?.detail ?? {};
    expect(detail.refTokens).toBeGreaterThan(0);
    expect(r.totalTokens).toBeLessThanOrEqual(Math.floor(0.5 * 10 * each));
  });

  test("validation names the field", () => {
    const problems = (body: string): string[] => {
      const r = parsePolicyText(`name: p\nversion: 1\nbudget:\n${body}`, "p.yaml");
      if (r.ok) throw new Error("expected problems");
      return r.problems.map(formatProblem);
    };
    expect(problems("  relative: { topK: 0, share: 0.5 }\n")[0]).toContain(
      "budget.relative.topK: must be an integer from 1 to 50",
    );
    expect(problems("  relative: { topK: 20, share: 0 }\n")[0]).toContain(
      "budget.relative.share: must be a number greater than 0 and at most 1",
    );
    expect(problems("  relative: { topK: 20, share: 1.5 }\n")[0]).toContain("budget.relative.share");
    expect(problems("  relative: { topK: 20 }\n")[0]).toContain("budget.relative.share");
    expect(problems("  relative: { share: 0.5, k: 3 }\n")[0]).toContain("budget.relative");
    expect(problems("  relative: { share: 0.5, minTokens: -1 }\n")[0]).toContain(
      "budget.relative.minTokens: must be an integer from 0 to 3000",
    );
    const ok = parsePolicyText("name: p\nversion: 1\nbudget: { relative: { share: 0.6 } }\n", "p.yaml");
    expect(ok.ok && ok.policy.budget.relative).toEqual({ topK: 20, share: 0.6 });
  });

  const candidateList = fc
    .array(
      fc.record({
        words: fc.integer({ min: 1, max: 60 }),
        score: fc.double({ min: 0, max: 1, noNaN: true }),
        reply: fc.boolean(),
      }),
      { maxLength: 40 },
    )
    .map((rows) =>
      rows.map((row, i) =>
        makeCandidate({
          id: `c${String(i).padStart(2, "0")}`,
          content: `${i} ${"alpha beta. ".repeat(row.words)}`.trim(),
          score: row.score,
          ...(row.reply && i > 0
            ? { origin: "reply" as const, replyTo: `c${String(i - 1).padStart(2, "0")}` }
            : {}),
        }),
      ),
    );

  test("property: output tokens ≤ min(maxTokens, floor(share × T)); deterministic; a cap that does not bind changes nothing", () => {
    fc.assert(
      fc.property(
        candidateList,
        fc.integer({ min: 100, max: 600 }),
        fc.integer({ min: 1, max: 50 }),
        fc.double({ min: 0.01, max: 1, noNaN: true }),
        fc.constantFrom("truncate", "skip"),
        fc.boolean(),
        (list, maxTokens, topK, share, packing, citations) => {
          const base = {
            retrieval: { topK: 20, overfetch: 2, maxTokens, minScore: 0 },
            clip: { mode: "relevant" },
            ...(citations ? { format: { citations: "on" } } : {}),
          };
          const plain = policyWith({ ...base, budget: { packing } } as Partial<PolicyInput>);
          const relative = policyWith({
            ...base,
            budget: { packing, relative: { topK, share } },
          } as Partial<PolicyInput>);
          const T = relativeTokens(list, topK, approx);
          // Counting stops early only when the rest could not change the budget.
          const measured = measureRelative(list, { topK, share }, maxTokens, approx);
          expect(measured.maxTokens).toBe(relativeBudget(maxTokens, { topK, share }, T));
          const r = run(relative, list);
          const sum = r.memories.reduce((s, m) => s + approx.count(m.content), 0);
          expect(r.totalTokens).toBeLessThanOrEqual(Math.min(maxTokens, Math.floor(share * T)));
          if (!citations) expect(sum).toBe(r.totalTokens);
          // Deterministic: the same run twice gives the same bytes.
          expect(JSON.stringify(run(relative, list))).toBe(JSON.stringify(r));
          // When the relative cap does not bind, the output is the plain policy's (only the detail says more).
          if (Math.floor(share * T) >= maxTokens) {
            const p = run(plain, list);
            expect(r.memories).toEqual(p.memories);
            expect(r.systemPrompt).toBe(p.systemPrompt);
            expect(r.totalTokens).toBe(p.totalTokens);
          }
        },
      ),
      { numRuns: 60 },
    );
  });
});
