/**
 * Properties of the WHOLE pipeline (stages 2–8, docs/policy.md#the-pipeline) under arbitrary policies and candidate lists.
 * The per-stage properties live next to each stage's tests; these check what only the composition can break.
 */
import fc from "fast-check";
import { type PipelineResult, runPipeline } from "../../src/pipeline";
import { luhn } from "../../src/pipeline/redaction/luhn";
import { normalizeAndHash } from "../../src/pipeline/text/hash";
import { removeInvisible } from "../../src/pipeline/text/neutralize";
import type { Candidate, MemoryType, Redactor, Role } from "../../src/pipeline/types";
import { type CompiledPolicy, compilePolicy } from "../../src/policy/compile";
import {
  CLIP_MODES,
  DETECTORS,
  type DetectorName,
  type PolicyInput,
  policySchema,
  STRATEGIES,
  TOKENIZERS,
  type TokenizerName,
} from "../../src/policy/schema";
import { buildPayload } from "../../src/retrieval/payload";

// ---- contents ------------------------------------------------------------------------------------------

const pad = (n: number, width: number): string => String(n).padStart(width, "0");
const digits = (n: number) => fc.stringMatching(new RegExp(`^[0-9]{${n}}$`));

const email = fc
  .tuple(
    fc.stringMatching(/^[a-z0-9._%+-]{0,10}[a-z0-9]$/).filter((s) => !s.startsWith(".") && !s.includes("..")),
    fc.constantFrom("example.com", "mail.example.org", "correo.es", "例子.中国"),
  )
  .map(([local, domain]) => `${local}@${domain}`);

/** Luhn-valid, with an issuer prefix and a length that go together (Visa 13/16/19, Mastercard 16, Amex 15, Discover 16–19), as one block or in fours. */
const card = fc
  .constantFrom<[string, number[]]>(
    ["4", [13, 16, 19]],
    ["51", [16]],
    ["37", [15]],
    ["6011", [16, 17, 18, 19]],
  )
  .chain(([prefix, lengths]) => fc.tuple(fc.constant(prefix), fc.constantFrom(...lengths), digits(18)))
  .map(([prefix, length, body]) => {
    const stem = (prefix + body).slice(0, length - 1);
    const number = stem + ([..."0123456789"].find((d) => luhn(stem + d)) ?? "0");
    return length === 16 && body.charCodeAt(0) % 2 === 0 ? (number.match(/.{4}/g) ?? []).join(" ") : number;
  });

const ssn = fc
  .tuple(
    fc.integer({ min: 1, max: 899 }).filter((a) => a !== 666),
    fc.integer({ min: 1, max: 99 }),
    fc.integer({ min: 1, max: 9999 }),
  )
  .map(([a, g, s]) => `${pad(a, 3)}-${pad(g, 2)}-${pad(s, 4)}`);

const phone = fc
  .tuple(fc.integer({ min: 200, max: 999 }), fc.integer({ min: 200, max: 999 }), digits(4))
  .chain(([a, e, l]) => fc.constantFrom(`(${a}) ${e}-${l}`, `${a}-${e}-${l}`, `+1 ${a} ${e} ${l}`));

const ipv4 = fc.tuple(fc.nat(255), fc.nat(255), fc.nat(255), fc.nat(255)).map((o) => o.join("."));

const pii = fc.oneof(email, card, ssn, phone, ipv4);

/** Sentences where a naive splitter would cut too early (abbreviations, decimals, URLs, ellipses). */
const ENGLISH = [
  "Dr. Smith met Mr. Jones at 3 p.m. today.",
  "Version 1.2.3 shipped, e.g. on Monday.",
  "It costs 3.5 dollars, i.e. too much.",
  "The U.S. Army arrived.",
  "Well... I think so.",
  "See https://example.com/a.b?c=d for details.",
  "Apples, pears, etc. Then we left.",
  "I prefer oat milk in my coffee.",
  "Call me later!",
  "Really?",
  "ok",
];
const OTHER_SCRIPTS = [
  "我喜欢喝茶。",
  "北京烤鸭很好吃！",
  "東京で会いましょう。",
  "「すごい！」と言った。",
  "한국어를 배우고 있어요. 매주 화요일에 수업이 있어요.",
  "שלום עולם.",
  "مرحبا بك؟",
  "\u202eevil\u202c",
  "👨‍👩‍👧",
  "🏳️‍🌈",
  "👩🏽‍💻",
  "🇫🇷",
  "e\u0301",
  "Zoë",
  "n\u0303o",
  "\u1112\u1161\u11ab",
];

/** A run-on sentence: long memories are what the budget has to cut. */
const WORDS = [
  "and",
  "then",
  "we",
  "talked",
  "about",
  "the",
  "trip",
  "to",
  "Lisbon",
  "coffee",
  "旅行",
  "🙂",
  "naïve",
];
const runOn = fc.array(fc.constantFrom(...WORDS), { minLength: 5, maxLength: 80 }).map((w) => w.join(" "));

const piece = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom(...ENGLISH) },
  { weight: 2, arbitrary: runOn },
  { weight: 3, arbitrary: fc.constantFrom(...OTHER_SCRIPTS) },
  { weight: 2, arbitrary: pii },
  { weight: 1, arbitrary: fc.string({ maxLength: 80 }) },
  { weight: 1, arbitrary: fc.string({ unit: "grapheme", maxLength: 12 }) },
);
const joiner = fc.constantFrom(" ", " ", "", "\n", "\n\n", ". ", ", ");

const content = fc
  .array(fc.tuple(piece, joiner), { maxLength: 24, size: "large" })
  .map((parts) => parts.map(([p, j]) => p + j).join(""));

/**
 * Ways of writing the same memory that dedup must treat as one (case, whitespace, boundary punctuation), and
 * one it must not ("..." inside). Applied to contents drawn from a small pool, so duplicates are frequent.
 */
const VARIANTS: ReadonlyArray<(s: string) => string> = [
  (s) => s,
  (s) => s,
  (s) => s.toUpperCase(),
  (s) => s.toLowerCase(),
  (s) => `  ${s.replace(/ /g, "   ")}\t`,
  (s) => `"${s}!!"`,
  (s) => `...${s}?`,
  (s) => `${s} (edited)`,
];

// ---- candidates ----------------------------------------------------------------------------------------

const TIMESTAMPS = [
  "2026-01-01T00:00:00Z",
  "2026-01-01T00:00:00.000Z",
  "2026-03-08T10:30:00Z",
  "2026-03-08T02:30:00-08:00",
  "2025-10-26T01:30:00+01:00",
  "2026-01-01T12:00:00+05:30",
  "2026-02-28T23:59:59.999Z",
  "2026-01-01T10:00:00", // no offset: read as UTC
];
const ID_PREFIXES = ["m", "M", "a", "z", "Z", "ä", "10", "9", "id-"];
const TYPES: readonly MemoryType[] = ["message", "fact", "summary"];
const ROLES: ReadonlyArray<Role | undefined> = ["user", "assistant", "system", undefined];

const score = fc.oneof(
  fc.constantFrom(0, 0.25, 0.5, 0.5, 0.75, 0.9, 1),
  fc.double({ min: 0, max: 1, noNaN: true }),
);

const spec = fc.record({
  pick: fc.nat(),
  variant: fc.nat(VARIANTS.length - 1),
  prefix: fc.constantFrom(...ID_PREFIXES),
  score,
  timestamp: fc.oneof(
    fc.constantFrom(...TIMESTAMPS),
    fc
      .integer({ min: Date.UTC(2020, 0, 1), max: Date.UTC(2027, 0, 1) })
      .map((ms) => new Date(ms).toISOString()),
  ),
  type: fc.constantFrom(...TYPES),
  role: fc.constantFrom(...ROLES),
});

const MAX_CANDIDATES = 60;

/** 0–60 candidates with unique ids, drawing contents from a pool of up to 20. */
const candidates: fc.Arbitrary<Candidate[]> = fc
  .tuple(
    fc.array(content, { minLength: 1, maxLength: 20 }),
    fc.array(spec, { maxLength: MAX_CANDIDATES, size: "medium" }),
  )
  .map(([pool, specs]) =>
    specs.map((s, i): Candidate => {
      const base = pool[s.pick % pool.length] ?? "";
      const variant = VARIANTS[s.variant] ?? ((x: string) => x);
      const c: Candidate = {
        id: `${s.prefix}${i}`,
        content: variant(base),
        score: s.score,
        timestamp: s.timestamp,
        sessionId: `s-${i % 3}`,
        type: s.type,
      };
      if (s.type === "message") {
        c.messageId = `msg-${i}`;
        if (s.role !== undefined) c.role = s.role;
      }
      return c;
    }),
  );

/** Sort keys for a permutation of the candidates (ties by position): shrinks, unlike a shuffle. */
const permutation = fc.array(fc.nat(), { minLength: MAX_CANDIDATES, maxLength: MAX_CANDIDATES });

function permute<T>(items: readonly T[], keys: readonly number[]): T[] {
  return items
    .map((item, i) => ({ item, key: keys[i] ?? 0, i }))
    .sort((a, b) => a.key - b.key || a.i - b.i)
    .map((e) => e.item);
}

// ---- policies ------------------------------------------------------------------------------------------

const policyFor = (tokenizer: TokenizerName): fc.Arbitrary<PolicyInput> =>
  fc
    .record({
      topK: fc.integer({ min: 1, max: 20 }),
      clipSentences: fc.integer({ min: 1, max: 5 }),
      // Mostly tight budgets (they truncate and drop), sometimes anything in range.
      maxTokens: fc.oneof(
        { weight: 3, arbitrary: fc.integer({ min: 100, max: 200 }) },
        { weight: 1, arbitrary: fc.integer({ min: 100, max: 3000 }) },
      ),
      minScore: fc.oneof(
        { weight: 3, arbitrary: fc.constantFrom(0, 0.3, 0.5) },
        { weight: 2, arbitrary: fc.double({ min: 0, max: 1, noNaN: true }) },
        { weight: 1, arbitrary: fc.constant(1) },
      ),
      strategy: fc.constantFrom(...STRATEGIES),
      ratio: fc.integer({ min: 1, max: 10 }),
      detectors: fc.option(fc.subarray([...DETECTORS], { minLength: 1 }), { freq: 3 }),
      replacement: fc.constantFrom("[REDACTED]", "<pii>", "█", "", "[EMAIL]"),
      timeZone: fc.constantFrom("UTC", "America/Los_Angeles", "Asia/Kolkata", "Pacific/Chatham"),
      clipMode: fc.constantFrom(...CLIP_MODES),
      // Seed 000's packing more often: it is the one that truncates.
      packing: fc.constantFrom("truncate", "truncate", "skip"),
      fill: fc.boolean(),
      maxMemories: fc.integer({ min: 1, max: 50 }),
    })
    .map(
      (p): PolicyInput => ({
        name: "prop",
        version: 1,
        retrieval: {
          topK: p.topK,
          clipSentences: p.clipSentences,
          maxTokens: p.maxTokens,
          minScore: p.minScore,
        },
        interleaving: { strategy: p.strategy, ratio: p.ratio },
        redaction: {
          enabled: p.detectors !== null,
          detectors: p.detectors ?? ["email"],
          replacement: p.replacement,
        },
        tokenizer,
        format: { timeZone: p.timeZone },
        clip: { mode: p.clipMode },
        budget: { packing: p.packing, fill: p.fill, maxMemories: p.maxMemories },
      }),
    );

/** Queries for `clip.mode: relevant`: words the contents use, stopwords, other scripts, nothing. */
const query = fc
  .array(
    fc.constantFrom(...WORDS, "what", "did", "I", "say", "Dr.", "coffee?", "旅行", "茶", "Smith", "p.m."),
    {
      maxLength: 8,
    },
  )
  .map((w) => w.join(" "));

/** One redactor per enabled built-in detector, each with a replacement no detector matches. */
const checkers = new Map<DetectorName, Redactor>(
  DETECTORS.map((d) => [
    d,
    compilePolicy(
      policySchema.parse({ name: "check", version: 1, redaction: { enabled: true, detectors: [d] } }),
    ).ctx.redactor,
  ]),
);

function run(compiled: CompiledPolicy, list: readonly Candidate[], q = ""): PipelineResult {
  return runPipeline(
    { userId: "u-prop", query: q, candidates: list, backend: "test", explain: true },
    compiled,
  );
}

/**
 * A passing run takes a second or two (ten times that on a machine loaded ~10, where a 10 s limit cut the runs short
 * of `numRuns` and failed the run-count check below). A failing one shrinks up to 60 candidates and 20 contents,
 * which can take minutes: stop after 60 s and report the smallest counterexample found by then (the test's own
 * timeout is above that).
 */
const shrinkAtMost = fc.interruptAfterTimeLimit(60_000);
const PROPERTY_TIMEOUT_MS = 90_000;

/** BPE counting costs far more than approx; the runs are tuned so the whole file stays around 5 s. */
const RUNS: Record<TokenizerName, number> = { approx: 150, cl100k_base: 80, o200k_base: 80 };

describe.each(TOKENIZERS)("the whole pipeline (%s)", (tokenizerName) => {
  test(
    "budget, dedup, ids, topK, determinism and redaction hold together",
    () => {
      const seen = { runs: 0, truncated: 0, cut: 0, duplicates: 0, redacted: 0, nonEmpty: 0, matched: 0 };
      fc.assert(
        fc.property(policyFor(tokenizerName), candidates, permutation, query, (input, list, keys, q) => {
          const compiled = compilePolicy(policySchema.parse(input));
          const { policy, ctx } = compiled;
          const { topK, maxTokens } = policy.retrieval;
          const snapshot = JSON.stringify(list);

          const result = run(compiled, list, q);
          const payload = buildPayload(result, compiled, {
            backend: "test",
            cache: "bypass",
            queryTimeMs: 0,
          });
          const { memories } = payload;

          // The budget is never exceeded, and totalTokens is what the policy's tokenizer counts.
          const used = memories.reduce((sum, m) => sum + ctx.tokenizer.count(m.content), 0);
          expect(used).toBeLessThanOrEqual(maxTokens);
          expect(payload.metadata.totalTokens).toBe(used);
          expect(payload.metadata.includedResults).toBe(memories.length);
          expect(payload.metadata.totalResults).toBe(list.length);

          // At most topK (with budget.fill: maxMemories, when larger); every id comes from the input, once; the
          // other fields are the source's.
          const { fill, maxMemories } = policy.budget;
          expect(memories.length).toBeLessThanOrEqual(fill ? Math.max(topK, maxMemories) : topK);
          const source = new Map(list.map((c) => [c.id, c]));
          expect(new Set(memories.map((m) => m.id)).size).toBe(memories.length);
          for (const m of memories) {
            const c = source.get(m.id);
            expect(c).toBeDefined();
            if (c === undefined) continue;
            expect([m.score, m.timestamp, m.sessionId, m.type, m.role, m.messageId]).toEqual([
              c.score,
              c.timestamp,
              c.sessionId,
              c.type,
              c.role,
              c.messageId,
            ]);
            expect(m.score).toBeGreaterThanOrEqual(policy.retrieval.minScore);
          }

          // Dedup is defined on the redacted content of the candidates (it runs before clip and budget):
          // no two outputs come from candidates that share a dedup hash.
          // With redaction on, the stage reads (and keeps) the content without invisible characters.
          const clean = (c: Candidate): string =>
            ctx.redactor.enabled ? removeInvisible(c.content) : c.content;
          const redacted = (c: Candidate): string => ctx.redactor.redact(clean(c)).text;
          const sourceHash = memories.map((m) => {
            const c = source.get(m.id);
            return c === undefined ? m.id : normalizeAndHash(redacted(c));
          });
          expect(new Set(sourceHash).size).toBe(memories.length);
          // On the output itself, two memories can only share a hash if clipping or truncation made them
          // alike ("A. B. C." and "A. B. D." both clip to "A. B...."): one of them must have been shortened.
          const byHash = new Map<string, string[]>();
          for (const m of memories) {
            const c = source.get(m.id);
            const shortened = c !== undefined && m.content !== redacted(c);
            const h = normalizeAndHash(m.content);
            byHash.set(h, [...(byHash.get(h) ?? []), shortened ? "shortened" : "whole"]);
          }
          for (const group of byHash.values()) {
            expect(group.filter((g) => g === "whole").length).toBeLessThanOrEqual(1);
            if (group.length > 1) expect(group).toContain("shortened");
          }

          // The trace chains: each stage's input is the previous stage's output.
          const { trace } = result;
          expect(trace[0]?.in).toBe(list.length);
          expect(trace[trace.length - 1]?.out).toBe(memories.length);
          trace.forEach((t, i) => {
            if (i > 0) expect(t.in).toBe(trace[i - 1]?.out);
          });

          // Same input twice: the same result, trace included. Inputs are not mutated.
          expect(run(compiled, list, q)).toEqual(result);
          expect(JSON.stringify(list)).toBe(snapshot);
          // Shuffled input: byte-identical memories and prompt (every order is chosen with ties by id).
          const shuffled = run(compiled, permute(list, keys), q);
          expect(JSON.stringify(shuffled.memories)).toBe(JSON.stringify(result.memories));
          expect(shuffled.systemPrompt).toBe(result.systemPrompt);
          expect(shuffled.totalTokens).toBe(result.totalTokens);

          // With redaction on, no enabled built-in detector matches any content or the system prompt.
          if (policy.redaction.enabled) {
            for (const detector of policy.redaction.detectors) {
              const checker = checkers.get(detector);
              if (checker === undefined) throw new Error(`no checker for ${detector}`);
              for (const m of memories) expect([m.id, checker.redact(m.content).fired]).toEqual([m.id, []]);
              expect(checker.redact(result.systemPrompt).fired).toEqual([]);
            }
            for (const m of memories) {
              const c = source.get(m.id);
              if (c !== undefined) expect(m.provenance.wasRedacted).toBe(redacted(c) !== clean(c));
            }
          } else {
            for (const m of memories) expect(m.provenance.wasRedacted).toBe(false);
          }

          seen.runs += 1;
          if (memories.length > 0) seen.nonEmpty += 1;
          const budget = trace[trace.length - 1]?.changes ?? [];
          if (budget.some((c) => c.reason === "truncated_by_budget")) seen.truncated += 1;
          if (budget.length > 0) seen.cut += 1;
          if (trace.some((t) => t.changes.some((c) => c.reason.startsWith("duplicate_of:"))))
            seen.duplicates += 1;
          if (memories.some((m) => m.provenance.wasRedacted)) seen.redacted += 1;
          const clip = trace.find((t) => t.stage === "clip");
          if (clip?.changes.some((c) => c.sentences?.kept.some((k) => k.why === "match"))) seen.matched += 1;
        }),
        { numRuns: RUNS[tokenizerName], plugins: [shrinkAtMost] },
      );
      // The generators reach the interesting cases, not only empty or tiny inputs.
      const { runs } = seen;
      expect(runs).toBeGreaterThanOrEqual(RUNS[tokenizerName]);
      expect(seen.nonEmpty).toBeGreaterThan(runs * 0.6);
      expect(seen.cut).toBeGreaterThan(runs * 0.15);
      expect(seen.truncated).toBeGreaterThan(runs * 0.1);
      expect(seen.duplicates).toBeGreaterThan(runs * 0.4);
      // Relevant clipping kept matching sentences in a fair share of runs (budget.fill going beyond topK is rarer
      // here, with small deduplicated pools and tight budgets: budget.fill.test.ts covers it).
      expect(seen.matched).toBeGreaterThan(runs * 0.05);
      // About 29 % of runs redact something (18 runs of 80 or 150 each: 19–33 of 80); one CI run drew 12 of 80,
      // so the floor sits far below the mean instead of near it: it still fails a generator that stops making PII.
      expect(seen.redacted).toBeGreaterThan(runs * 0.1);
    },
    PROPERTY_TIMEOUT_MS,
  );
});
