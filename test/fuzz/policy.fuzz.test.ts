import fc from "fast-check";
import { stringify } from "yaml";
import { compilePolicyText } from "../../src/policy/compile";
import { nastyString, nastyValue } from "./arbitraries";

/**
 * Fuzzing policy files (docs/policy.md#policy-files): whatever an operator (or an attacker with write access to the policy
 * directory) puts in a file, `compilePolicyText` never throws: it returns a compiled policy, or problems that
 * each name the file, a field path and a readable message. No document pollutes Object.prototype.
 */
const PROTO_BEFORE = Object.getOwnPropertyNames(Object.prototype).sort();

function expectVerdict(text: string, file = "fuzz.yaml"): void {
  const result = compilePolicyText(text, file);
  if (result.ok) {
    expect(typeof result.compiled.hash).toBe("string");
    return;
  }
  expect(result.problems.length).toBeGreaterThan(0);
  for (const p of result.problems) {
    expect(p.file).toBe(file);
    expect(Array.isArray(p.path)).toBe(true);
    for (const seg of p.path) expect(["string", "number"]).toContain(typeof seg);
    expect(typeof p.message).toBe("string");
    expect(p.message.length).toBeGreaterThan(0);
    if (p.line !== undefined) expect(Number.isInteger(p.line) && p.line >= 1).toBe(true);
  }
}

const fieldValue = fc.oneof(nastyValue, fc.integer({ min: -10, max: 100_000 }), fc.double());

/** Policy-shaped documents: the real sections, hostile values. */
const policyDoc = fc.record(
  {
    name: fc.oneof(fc.constantFrom("default", "x"), nastyString),
    version: fc.oneof(fc.integer({ min: -1, max: 10 }), nastyValue),
    backend: fc.oneof(fc.constantFrom("zep", "local", "openmemory"), nastyValue),
    retrieval: fc.oneof(
      fc.record(
        { topK: fieldValue, overfetch: fieldValue, maxTokens: fieldValue, minScore: fieldValue },
        { requiredKeys: [] },
      ),
      nastyValue,
    ),
    redaction: fc.oneof(
      fc.record(
        {
          enabled: fc.oneof(fc.boolean(), nastyValue),
          detectors: fc.oneof(fc.array(fc.constantFrom("email", "ssn", "nope", "__proto__")), nastyValue),
          patterns: fc.oneof(
            fc.array(
              fc.oneof(fc.constantFrom("(a+)+$", "(a)\\1", "(?<=a)b", "[", "\\p{L}+", ".*"), nastyString),
              {
                maxLength: 3,
              },
            ),
            nastyValue,
          ),
          replacement: fc.oneof(fc.constantFrom("[REDACTED]", "a@b.co", "4111111111111111", ""), nastyString),
        },
        { requiredKeys: [] },
      ),
      nastyValue,
    ),
    tokenizer: fc.oneof(fc.constantFrom("approx", "o200k_base", "gpt2"), nastyValue),
    fallbacks: fc.oneof(
      fc.dictionary(fc.string(), fc.constantFrom("skip", "empty", "cache", "explode")),
      nastyValue,
    ),
    format: fc.oneof(
      fc.record({ timeZone: fc.oneof(fc.constantFrom("UTC", "Europe/Lisbon", "Mars/Base"), nastyString) }),
      nastyValue,
    ),
    timeouts: fc.oneof(fc.record({ backendMs: fieldValue }), nastyValue),
  },
  { requiredKeys: [] },
);

describe("fuzz: policy files through compilePolicyText", () => {
  afterEach(() => {
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(Object.getOwnPropertyNames(Object.prototype).sort()).toEqual(PROTO_BEFORE);
  });

  test("policy-shaped documents with hostile values, as YAML and as JSON", () => {
    fc.assert(
      fc.property(policyDoc, (doc) => {
        expectVerdict(stringify(doc));
        expectVerdict(JSON.stringify(doc), "fuzz.json");
      }),
      { numRuns: 300 },
    );
  });

  test("any JSON value and any text", () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.jsonValue().map((v) => JSON.stringify(v) ?? "null"),
          fc.string(),
          fc.string({ unit: "binary" }),
        ),
        (text) => expectVerdict(text),
      ),
      { numRuns: 300 },
    );
  });

  test("`__proto__` / `constructor` / `prototype` keys are refused as unknown keys, with no pollution", () => {
    for (const text of [
      "name: a\nversion: 1\n__proto__: { polluted: yes }\n",
      "name: a\nversion: 1\nretrieval: { __proto__: { polluted: yes }, topK: 3 }\n",
      '{"name":"a","version":1,"__proto__":{"polluted":"yes"}}',
      '{"name":"a","version":1,"constructor":{"prototype":{"polluted":"yes"}}}',
      "name: a\nversion: 1\nprototype: { polluted: yes }\n",
      "name: a\nversion: 1\nfallbacks: { __proto__: skip }\n",
      "<<: { polluted: yes }\nname: a\nversion: 1\n",
    ]) {
      const result = compilePolicyText(text, "proto.yaml");
      expect(result.ok).toBe(false);
      if (!result.ok)
        expect(result.problems.map((p) => p.message).join("; ")).toMatch(/unknown key|invalid|expected/i);
    }
  });

  test("YAML hazards: alias bombs, custom tags, huge numbers, duplicate keys, deep nesting", () => {
    const bomb = [
      "a: &a [x, x, x, x, x, x, x, x, x]",
      "b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]",
      "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]",
      "d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]",
      "e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d]",
      "name: bomb",
      "version: 1",
    ].join("\n");
    for (const text of [
      bomb,
      "name: !!js/function 'function(){ return 1 }'\nversion: 1\n",
      "name: a\nversion: !!binary aGVsbG8=\n",
      "name: a\nversion: 1e999\n",
      "name: a\nversion: 1\nname: b\n",
      `name: a\nversion: 1\nretrieval: ${"[".repeat(5000)}${"]".repeat(5000)}\n`,
      `${"a:\n ".repeat(2000)}b`,
      "\u0000\u0001\u0002",
      "\ufeffname: bom\nversion: 1\n",
      "name: a\u202e\u200b\nversion: 1\n",
    ]) {
      const started = Date.now();
      expectVerdict(text);
      expect(Date.now() - started).toBeLessThan(5000);
    }
  });
});
