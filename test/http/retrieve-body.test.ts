/**
 * POST /v1/retrieve's body check without zod for a plain body (`parseRetrieveBody`, src/retrieval/request.ts):
 * for every body, the same verdict, the same data and the same error text as `retrieveBodySchema.safeParse`.
 */
import fc from "fast-check";
import { describeZodError } from "../../src/http/validation";
import { parseRetrieveBody, retrieveBodySchema } from "../../src/retrieval/request";

const ok = { userId: "u-1", sessionId: "s-1", query: "what do I order?", useMemory: true };

const bodies: Array<[string, unknown]> = [
  ["the usual body", ok],
  ["only a user", { userId: "u-1" }],
  ["every plain field", { ...ok, policy: "default", backend: "zep", explain: false, detail: "index" }],
  ["detail full", { ...ok, detail: "full" }],
  ["sessionId and useMemory of any type", { ...ok, sessionId: 12, useMemory: "yes" }],
  ["null sessionId", { ...ok, sessionId: null, useMemory: null }],
  ["empty query", { ...ok, query: "" }],
  ["a query at the limit", { ...ok, query: "x".repeat(65_536) }],
  ["a query over the limit", { ...ok, query: "x".repeat(65_537) }],
  ["no body", undefined],
  ["null", null],
  ["an array", [ok]],
  ["a string", "u-1"],
  ["no userId", { query: "q" }],
  ["a numeric userId", { ...ok, userId: 7 }],
  ["a bad userId", { ...ok, userId: "a b" }],
  ["a dot userId", { ...ok, userId: ".." }],
  ["a long userId", { ...ok, userId: "u".repeat(129) }],
  ["a numeric query", { ...ok, query: 3 }],
  ["a bad policy", { ...ok, policy: "Default!" }],
  ["a numeric policy", { ...ok, policy: 1 }],
  ["an unknown backend", { ...ok, backend: "mem0" }],
  ["a string explain", { ...ok, explain: "true" }],
  ["an unknown detail", { ...ok, detail: "summary" }],
  ["an unknown field", { ...ok, topK: 3 }],
  ["two unknown fields", { ...ok, a: 1, b: 2 }],
  ["overrides", { ...ok, overrides: { retrieval: { topK: 3 } } }],
  ["bad overrides", { ...ok, overrides: [1] }],
  ["turnTime", { ...ok, turnTime: "2024-06-20T10:00:00Z" }],
  ["a bad turnTime", { ...ok, turnTime: "yesterday" }],
  ["a __proto__ field", JSON.parse('{"userId":"u-1","__proto__":{"x":1}}')],
  ["an object without prototype", Object.assign(Object.create(null), ok)],
  ["several problems", { userId: 1, query: 2, policy: "!", extra: true }],
];

describe("parseRetrieveBody", () => {
  it.each(bodies)("answers as zod does: %s", (_name, body) => {
    const ours = parseRetrieveBody(body);
    const zods = retrieveBodySchema.safeParse(body);
    expect(ours.success).toBe(zods.success);
    if (ours.success && zods.success) expect(ours.data).toEqual(zods.data);
    if (!ours.success && !zods.success)
      expect(describeZodError(ours.error)).toBe(describeZodError(zods.error));
  });
});

/**
 * Bodies near the fast path's edges: a body the schema accepts (any of its plain fields present), then, most of the
 * time, one field (or a field the schema does not have) set to a value of another type or form.
 */
const validBody = fc.record(
  {
    userId: fc.constantFrom("u-1", "a:b@c.d_e", "u".repeat(128)),
    sessionId: fc.oneof(fc.string(), fc.integer(), fc.constant(null)),
    query: fc.string(),
    useMemory: fc.oneof(fc.constant(true), fc.string()),
    policy: fc.constantFrom("default", "a.b-c_1", "p".repeat(64)),
    backend: fc.constantFrom("local", "zep", "openmemory"),
    explain: fc.boolean(),
    detail: fc.constantFrom("index", "full"),
  },
  { requiredKeys: ["userId"] },
);
const otherValue = fc.oneof(
  fc.constantFrom(undefined, null, true, "", "true", ".", "..", "a b", "u".repeat(129), "Default", "-x"),
  fc.constantFrom("p".repeat(65), "mem0", "summary", "yesterday", "2024-06-20T10:00:00Z"),
  fc.constant("x".repeat(65_537)),
  fc.integer(),
  fc.string(),
  fc.constant({}),
);
const fieldName = fc.constantFrom(
  ..."userId sessionId query useMemory policy backend explain detail turnTime overrides topK".split(" "),
);
const bodyArb = fc
  .tuple(validBody, fc.option(fc.tuple(fieldName, otherValue), { freq: 5 }))
  .map(([body, change]) => (change === null ? body : { ...body, [change[0]]: change[1] }));

describe("parseRetrieveBody (property)", () => {
  it("answers as zod does for any body near the fast path's edges", () => {
    fc.assert(
      fc.property(bodyArb, (body) => {
        const ours = parseRetrieveBody(body);
        const zods = retrieveBodySchema.safeParse(body);
        expect(ours.success).toBe(zods.success);
        if (ours.success && zods.success) expect(ours.data).toEqual(zods.data);
        if (!ours.success && !zods.success)
          expect(describeZodError(ours.error)).toBe(describeZodError(zods.error));
      }),
      { numRuns: 1000 },
    );
  });
});
