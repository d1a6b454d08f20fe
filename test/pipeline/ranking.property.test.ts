/**
 * Properties of the pipeline with the ranking stages on (query understanding, multi-signal rank, MMR selection
 * with dynamic K, answer-aware clipping with a per-memory allowance and speaker labels, sufficiency): the budget
 * is strict, the output is a subset of the input without duplicates, the same inputs give the same bytes in any
 * order, and the only clock is the request's turn time.
 */
import fc from "fast-check";
import { runPipeline } from "../../src/pipeline";
import { normalizeAndHash } from "../../src/pipeline/text/hash";
import type { Candidate } from "../../src/pipeline/types";
import { compilePolicy } from "../../src/policy/compile";
import { policySchema, TOKENIZERS } from "../../src/policy/schema";

const SPEAKERS = ["Maya", "Tom", "Camille"];
const SENTENCES = [
  "I finally signed up for the pottery class at Clayhouse.",
  "It starts on Tuesday evenings at 7 p.m.",
  "Tom bought a blue bike last weekend.",
  "How was your week?",
  "We adopted a puppy and named him Pickle!",
  "The rent went up to 950 euros because the landlord renovated.",
  "Haha yes, gotta run.",
  "Camille moved to Vertou in May.",
  "Le mariage aura lieu le 21 juin près d'Annecy.",
  "What did you name the puppy?",
  "¿Dónde vive Pablo ahora?",
  "Ich habe gestern 18 km geschafft.",
];
const QUERIES = [
  "When did Maya sign up for pottery?",
  "What did Tom buy last weekend?",
  "What is the puppy called?",
  "How much is the rent now?",
  "Where did Camille move in May?",
  "Who is Pickle?",
  "Quand a lieu le mariage ?",
  "",
];

const candidates: fc.Arbitrary<Candidate[]> = fc
  .array(
    fc.record({
      speaker: fc.constantFrom(...SPEAKERS),
      sentences: fc.array(fc.nat(SENTENCES.length - 1), { minLength: 1, maxLength: 4 }),
      score: fc.double({ min: 0, max: 1, noNaN: true }),
      day: fc.integer({ min: 0, max: 200 }),
      reply: fc.boolean(),
    }),
    { maxLength: 40 },
  )
  .map((specs) =>
    specs.map((s, i): Candidate => {
      const c: Candidate = {
        id: `m${String(i).padStart(2, "0")}`,
        content: `${s.speaker}: ${s.sentences.map((k) => SENTENCES[k]).join(" ")}`,
        score: s.score,
        timestamp: new Date(Date.UTC(2024, 0, 1) + s.day * 86_400_000).toISOString(),
        sessionId: `s-${s.day}`,
        type: "message",
      };
      if (s.reply && i > 0) c.replyTo = `m${String(i - 1).padStart(2, "0")}`;
      return c;
    }),
  );

const policy = (tokenizer: (typeof TOKENIZERS)[number]) =>
  fc
    .record({
      maxTokens: fc.integer({ min: 100, max: 600 }),
      clipSentences: fc.integer({ min: 1, max: 5 }),
      allowance: fc.option(fc.integer({ min: 10, max: 80 })),
      diversity: fc.constantFrom(1, 0.8, 0.5, 0),
      dynamic: fc.boolean(),
      min: fc.integer({ min: 1, max: 10 }),
      span: fc.integer({ min: 0, max: 10 }),
      fill: fc.boolean(),
      packing: fc.constantFrom("truncate", "skip"),
      minScore: fc.constantFrom(0, 0.2, 0.5),
    })
    .map((p) =>
      compilePolicy(
        policySchema.parse({
          name: "ranked",
          version: 1,
          tokenizer,
          retrieval: {
            topK: 12,
            clipSentences: p.clipSentences,
            maxTokens: p.maxTokens,
            minScore: p.minScore,
          },
          clip: {
            mode: "relevant",
            answerAware: true,
            speakerLabel: true,
            ...(p.allowance === null ? {} : { maxTokensPerMemory: p.allowance }),
          },
          budget: { packing: p.packing, fill: p.fill, maxMemories: 20 },
          ranking: {
            enabled: true,
            diversity: p.diversity,
            dynamicK: { enabled: p.dynamic, min: p.min, max: p.min + p.span },
          },
          sufficiency: { enabled: true },
        }),
      ),
    );

const TURN = Date.parse("2024-07-01T12:00:00Z");

describe.each(TOKENIZERS)("ranking stages (%s)", (tokenizer) => {
  test("strict budget, subset without duplicates, same bytes in any order, turn time the only clock", () => {
    fc.assert(
      fc.property(
        policy(tokenizer),
        candidates,
        fc.constantFrom(...QUERIES),
        fc.array(fc.nat(), { minLength: 40, maxLength: 40 }),
        (compiled, list, query, keys) => {
          const input = { userId: "u", query, candidates: list, backend: "test", turnTime: TURN };
          const a = runPipeline(input, compiled);
          // Budget: strict, and what metadata says.
          const used = a.memories.reduce((sum, m) => sum + compiled.ctx.tokenizer.count(m.content), 0);
          expect(used).toBeLessThanOrEqual(compiled.policy.retrieval.maxTokens);
          expect(a.totalTokens).toBe(used);
          // Subset, each once, no two with the same normalized hash.
          const ids = a.memories.map((m) => m.id);
          expect(new Set(ids).size).toBe(ids.length);
          for (const id of ids) expect(list.some((c) => c.id === id)).toBe(true);
          const hashes = a.memories.map((m) =>
            normalizeAndHash(list.find((c) => c.id === m.id)?.content ?? ""),
          );
          expect(new Set(hashes).size).toBe(hashes.length);
          // The sufficiency certificate is always there and well-formed.
          expect(a.sufficiency).toBeDefined();
          expect(a.sufficiency?.completeness).toBeGreaterThanOrEqual(0);
          expect(a.sufficiency?.completeness).toBeLessThanOrEqual(1);
          if (a.memories.length === 0) expect(a.sufficiency?.verdict).toBe("insufficient");
          // Same inputs in another order, another host clock: the same bytes.
          const shuffled = list
            .map((c, i) => ({ c, k: keys[i] ?? 0, i }))
            .sort((x, y) => x.k - y.k || x.i - y.i)
            .map((e) => e.c);
          const now = jest.spyOn(Date, "now").mockReturnValue(Date.parse("2031-05-05T00:00:00Z"));
          let b: ReturnType<typeof runPipeline>;
          try {
            b = runPipeline({ ...input, candidates: shuffled }, compiled);
          } finally {
            now.mockRestore();
          }
          expect(JSON.stringify(b.memories)).toBe(JSON.stringify(a.memories));
          expect(b.systemPrompt).toBe(a.systemPrompt);
          expect(b.sufficiency).toEqual(a.sufficiency);
        },
      ),
      { numRuns: tokenizer === "approx" ? 120 : 60 },
    );
  });
});
