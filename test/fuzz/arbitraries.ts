/**
 * Hostile inputs for the fuzz suites: strings and values an attacker (or a broken client) would send, shaped
 * around the real field names so the fuzzer reaches past the schema into eligibility, policy and overrides.
 */
import fc from "fast-check";

/** Strings that have broken parsers, loggers and terminals before. */
export const NASTY_STRINGS = [
  "",
  " ",
  "__proto__",
  "constructor",
  "prototype",
  "toString",
  "hasOwnProperty",
  "\u0000",
  "\r\n",
  "\ud800", // lone high surrogate
  "\udfff", // lone low surrogate
  "a\ud83d", // truncated emoji
  "\u202eevil\u202c", // right-to-left override
  "\u200b\u200c\u200d\ufeff", // zero-width
  "שלום עולם",
  "مرحبا",
  "👩‍👩‍👧‍👦".repeat(50),
  "e\u0301".repeat(200), // combining marks
  "<script>alert(1)</script>",
  "\u0024{jndi:ldap://x/a}", // log4shell-style lookup
  "{{7*7}}",
  "'; DROP TABLE users; --",
  "../../../../etc/passwd",
  "%00%0d%0a",
  "mg_test_acme_chat_0123456789", // a real key in a body field must not be echoed into logs
  "x".repeat(4001),
  "a ".repeat(30_000),
] as const;

export const nastyString = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom(...NASTY_STRINGS) },
  { weight: 2, arbitrary: fc.string({ maxLength: 64 }) },
  { weight: 2, arbitrary: fc.string({ unit: "binary", maxLength: 64 }) },
  { weight: 1, arbitrary: fc.string({ unit: "grapheme", maxLength: 32 }) },
);

/** Any JSON value, with hostile strings and numbers mixed in. */
export const nastyValue: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 4, arbitrary: nastyString },
  {
    weight: 2,
    arbitrary: fc.constantFrom(null, true, false, 0, -1, 1.5, 1e308, -1e308, 2 ** 53, Number.MIN_VALUE),
  },
  { weight: 2, arbitrary: fc.jsonValue({ maxDepth: 3 }) },
  { weight: 1, arbitrary: fc.constant({}) },
  { weight: 1, arbitrary: fc.constant([]) },
);

const validId = fc.stringMatching(/^[A-Za-z0-9_.:@-]{1,24}$/);

const overrideKey = fc.oneof(
  fc.constantFrom(
    "topK",
    "minScore",
    "maxTokens",
    "clipSentences",
    "searchType",
    "enableRedaction",
    "customRedactionPatterns",
    "interleaving",
    "tokenizer",
    "constructor",
    "prototype",
  ),
  fc.string({ maxLength: 12 }),
);

const overrideValue = fc.oneof(
  nastyValue,
  fc.integer({ min: -5, max: 5000 }),
  fc.array(fc.constantFrom("(a+)+$", "([a-z]+)*$", "(?<=x)y", "\\", "[", "(?=a)", ".*"), { maxLength: 3 }),
  fc.record({ strategy: fc.constantFrom("alternate", "weighted", "bogus"), ratio: fc.integer() }),
);

/** Mostly `good`, sometimes anything hostile: bodies get past the schema often enough to reach the backend. */
const mostly = <T>(good: fc.Arbitrary<T>) =>
  fc.oneof({ weight: 4, arbitrary: good }, { weight: 1, arbitrary: nastyValue });

/** Absent most of the time (these fields need the admin scope and so end most requests early). */
const rarely = <T>(arb: fc.Arbitrary<T>) =>
  fc.oneof({ weight: 4, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: arb });

const goodOverrides = fc.record(
  {
    topK: fc.integer({ min: 1, max: 20 }),
    minScore: fc.double({ min: 0, max: 1, noNaN: true }),
    maxTokens: fc.integer({ min: 100, max: 3000 }),
    enableRedaction: fc.boolean(),
    customRedactionPatterns: fc.array(fc.constantFrom("(a+)+$", "([a-z]+)*$", "\\d{3}", "tea"), {
      maxLength: 2,
    }),
  },
  { requiredKeys: [] },
);

/** A body with the real fields, each well-typed but hostile in content (or, now and then, anything at all). */
const plausibleBody = fc.record(
  {
    userId: mostly(fc.oneof(fc.constant("u-123"), validId)),
    sessionId: mostly(validId),
    query: nastyString,
    useMemory: mostly(fc.constant(true)),
    policy: rarely(fc.constantFrom("default", "fast", "nope", "__proto__")),
    backend: rarely(fc.constantFrom("zep", "openmemory", "local")),
    overrides: rarely(fc.oneof(goodOverrides, fc.dictionary(overrideKey, overrideValue, { maxKeys: 3 }))),
    explain: rarely(fc.boolean()),
  },
  { requiredKeys: ["userId"] },
);

/** The real field names with anything as values, plus stray keys. */
const wildBody = fc
  .tuple(
    fc.record(
      {
        userId: nastyValue,
        sessionId: nastyValue,
        query: nastyValue,
        useMemory: nastyValue,
        policy: nastyValue,
        backend: nastyValue,
        overrides: nastyValue,
        explain: nastyValue,
      },
      { requiredKeys: [] },
    ),
    fc.dictionary(
      fc.oneof(fc.string({ maxLength: 8 }), fc.constantFrom("prototype", "constructor")),
      nastyValue,
      {
        maxKeys: 2,
      },
    ),
  )
  .map(([fields, extra]) => ({ ...extra, ...fields }));

/** A /v1/retrieve body: mostly plausible ones (deep paths), some wild ones (the schema's edges). */
export const retrieveBody: fc.Arbitrary<Record<string, unknown>> = fc.oneof(
  { weight: 3, arbitrary: plausibleBody },
  { weight: 1, arbitrary: wildBody },
);

/**
 * JSON text with `__proto__` as a real own key (JSON.parse makes it one; an object literal would not), at the
 * top level or inside `overrides`.
 */
export function withProtoKeys(json: string, where: "top" | "overrides"): string {
  const poison =
    '"__proto__":{"polluted":"yes","isAdmin":true},"constructor":{"prototype":{"polluted":"yes"}}';
  if (where === "top") return json === "{}" ? `{${poison}}` : json.replace(/^\{/, `{${poison},`);
  return json.replace(/"overrides":\{/, `"overrides":{${poison},`);
}

/** Nested arrays/objects `depth` deep. */
export function deepJson(depth: number, kind: "array" | "object"): string {
  return kind === "array"
    ? `${"[".repeat(depth)}${"]".repeat(depth)}`
    : `${'{"a":'.repeat(depth)}1${"}".repeat(depth)}`;
}
