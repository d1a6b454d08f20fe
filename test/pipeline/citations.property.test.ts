/**
 * Properties of citations and section budgets over arbitrary candidates and policies (fast-check):
 * - same input ⇒ same bytes (memories, citations, prompt, trace);
 * - refs are m1..mN in prompt order, every ref in the prompt has a citation entry and every entry a ref in the
 *   prompt, each memory's citation is `citationOf` of it;
 * - total tokens (contents and ref labels) ≤ maxTokens, always, and equal to what the memories really cost;
 * - each section spends at most its share plus what flowed to it, measured on the memories kept;
 * - `format.citations: off` is byte-identical to no field at all.
 */
import fc from "fast-check";
import { runPipeline } from "../../src/pipeline";
import { citationOf, refLabel } from "../../src/pipeline/citations";
import { sectionAllowances } from "../../src/pipeline/stages/budget";
import type { Candidate, MemoryType } from "../../src/pipeline/types";
import { compilePolicy } from "../../src/policy/compile";
import { type PolicyInput, SECTION_TYPES } from "../../src/policy/schema";
import { makePolicy } from "../helpers/items";

const WORDS = [
  "Ana",
  "moved",
  "to",
  "Berlin",
  "in",
  "May.",
  "Tea?",
  "北京烤鸭。",
  "👩🏽‍💻",
  "[m2]",
  "[m10]",
  "\\[m1]",
];
const content = fc
  .array(fc.oneof(fc.constantFrom(...WORDS), fc.string({ maxLength: 12 })), { minLength: 1, maxLength: 40 })
  .map((words) => words.join(" "));

const TYPES: readonly MemoryType[] = ["message", "fact", "summary"];

const candidates: fc.Arbitrary<Candidate[]> = fc
  .array(
    fc.record({
      content,
      score: fc.double({ min: 0, max: 1, noNaN: true }),
      type: fc.constantFrom(...TYPES),
      day: fc.integer({ min: 1, max: 28 }),
      backend: fc.option(fc.constantFrom("zep", "openmemory"), { nil: undefined }),
    }),
    { maxLength: 30 },
  )
  .map((specs) =>
    specs.map((s, i): Candidate => {
      const c: Candidate = {
        id: `c${i}`,
        content: s.content,
        score: s.score,
        timestamp: `2026-03-${String(s.day).padStart(2, "0")}T10:00:00.000Z`,
        sessionId: `s-${i % 3}`,
        type: s.type,
      };
      if (s.type === "message") c.messageId = `msg-${i}`;
      if (s.backend !== undefined) c.backend = s.backend;
      return c;
    }),
  );

const share = fc.integer({ min: 1, max: 10 }).map((n) => n / 10);
const sections = fc
  .record({ summary: share, fact: share, message: share }, { requiredKeys: [] })
  .filter((s) => Object.keys(s).length > 0)
  .filter((s) => Object.values(s).reduce((a, b) => a + b, 0) <= 1 + 1e-9);

const policy: fc.Arbitrary<PolicyInput> = fc
  .record({
    maxTokens: fc.oneof(fc.integer({ min: 100, max: 160 }), fc.integer({ min: 100, max: 3000 })),
    tokenizer: fc.constantFrom("approx", "o200k_base"),
    packing: fc.constantFrom("truncate", "skip"),
    fill: fc.boolean(),
    clip: fc.constantFrom("leading", "off"),
    citations: fc.constantFrom("on", "off", undefined),
    sections: fc.option(sections, { nil: undefined }),
    envelope: fc.constantFrom("none", "tagged"),
  })
  .map((p) => ({
    name: "prop",
    version: 1,
    retrieval: { maxTokens: p.maxTokens, minScore: 0, topK: 20 },
    tokenizer: p.tokenizer,
    clip: { mode: p.clip },
    budget: {
      packing: p.packing,
      fill: p.fill,
      ...(p.sections === undefined ? {} : { sections: p.sections }),
    },
    format: { envelope: p.envelope, ...(p.citations === undefined ? {} : { citations: p.citations }) },
  }));

/** The unescaped refs of a prompt, in order. */
const refsIn = (prompt: string): string[] =>
  [...prompt.matchAll(/(?<!\\)\[(m[0-9]+)\]/g)].map((m) => m[1] ?? "");

describe("citations and section budgets (property)", () => {
  test("deterministic, refs m1..mN in prompt order ↔ citations, strict budget, sections within share + flow", () => {
    fc.assert(
      fc.property(candidates, policy, (cands, input) => {
        const compiled = compilePolicy(makePolicy(input));
        const { policy: p, ctx } = compiled;
        const run = () =>
          runPipeline(
            { userId: "u", query: "where did Ana move", candidates: cands, backend: "local" },
            compiled,
          );
        const a = run();
        expect(JSON.stringify(run())).toBe(JSON.stringify(a));

        const on = p.format.citations === "on";
        const cost = (m: (typeof a.memories)[number]) =>
          ctx.tokenizer.count(m.content) + (m.ref === undefined ? 0 : ctx.tokenizer.count(refLabel(m.ref)));
        const total = a.memories.reduce((n, m) => n + cost(m), 0);
        expect(a.totalTokens).toBe(total);
        expect(total).toBeLessThanOrEqual(p.retrieval.maxTokens);

        if (on) {
          const expected = a.memories.map((_, i) => `m${i + 1}`);
          expect(refsIn(a.systemPrompt)).toEqual(expected);
          expect(Object.keys(a.citations ?? {})).toEqual(expected);
          expect([...a.memories.map((m) => m.ref)].sort()).toEqual([...expected].sort());
          for (const m of a.memories) expect(a.citations?.[m.ref ?? ""]).toEqual(citationOf(m, "local"));
        } else {
          expect(a.citations).toBeUndefined();
          expect(a.memories.some((m) => "ref" in m)).toBe(false);
          // `off` and no field at all: the same bytes.
          const { citations: _, ...format } = input.format ?? {};
          const bare = compilePolicy(makePolicy({ ...input, format }));
          const b = runPipeline(
            { userId: "u", query: "where did Ana move", candidates: cands, backend: "local" },
            bare,
          );
          expect(JSON.stringify(b)).toBe(JSON.stringify(a));
        }

        const { sections: shares } = p.budget;
        if (shares !== undefined) {
          const allowances = sectionAllowances(shares, p.retrieval.maxTokens);
          const detail = a.trace.find((t) => t.stage === "token_budget")?.detail ?? {};
          let flowed = 0;
          let order: MemoryType[] = [];
          for (const type of SECTION_TYPES) {
            const spent = a.memories.filter((m) => m.type === type).reduce((n, m) => n + cost(m), 0);
            const own = allowances.get(type) ?? 0;
            expect(spent).toBeLessThanOrEqual(own + flowed);
            expect(detail[`${type}Used`]).toBe(spent);
            expect(detail[`${type}Available`]).toBe(own + flowed);
            flowed = own + flowed - spent;
            order = [...order, ...a.memories.filter((m) => m.type === type).map((m) => m.type)];
          }
          // Kept in section order, summaries first: the order the prompt shows them.
          expect(a.memories.map((m) => m.type)).toEqual(order);
        }
      }),
      { numRuns: 150 },
    );
  });
});
