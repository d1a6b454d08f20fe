import fc from "fast-check";
import request from "supertest";
import { type Harness, KEYS, makeHarness } from "../helpers/harness";
import { makeCandidate } from "../helpers/items";
import { deepJson, retrieveBody, withProtoKeys } from "./arbitraries";

/**
 * Fuzzing POST /v1/retrieve bodies (docs/api.md#errors): whatever arrives, the answer is a 200 or a problem+json 4xx
 * naming the problem — never a 5xx, never a crash, never prototype pollution.
 */
const OK_STATUSES = new Set([200, 400, 403, 413, 415]);
const PROTO_BEFORE = Object.getOwnPropertyNames(Object.prototype).sort();

function expectCleanAnswer(res: request.Response): void {
  if (!OK_STATUSES.has(res.status)) throw new Error(`status ${res.status}: ${res.text.slice(0, 300)}`);
  if (res.status === 200) {
    expect(Array.isArray(res.body.memories)).toBe(true);
    expect(typeof res.body.systemPrompt).toBe("string");
    return;
  }
  expect(res.headers["content-type"]).toMatch(/^application\/problem\+json/);
  expect(res.body).toMatchObject({
    status: res.status,
    code: expect.any(String),
    requestId: expect.any(String),
  });
  expect(typeof res.body.detail).toBe("string");
  expect(res.body.detail.length).toBeGreaterThan(0);
  expect(res.body.detail.length).toBeLessThan(4000);
}

function expectNoPollution(): void {
  expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  expect(({} as Record<string, unknown>).isAdmin).toBeUndefined();
  expect(Object.getOwnPropertyNames(Object.prototype).sort()).toEqual(PROTO_BEFORE);
}

describe("fuzz: POST /v1/retrieve bodies", () => {
  let h: Harness;
  beforeAll(async () => {
    h = await makeHarness({ env: { MEMGATE_KEY_RATE_LIMIT: "1000000/60" } });
    h.zep.acme?.setUser("u-123", [makeCandidate({ id: "f1", content: "Ana likes tea.", score: 0.9 })]);
  });
  afterAll(() => h.close());
  afterEach(() => {
    expectNoPollution();
    expect(h.logs.join("")).not.toContain("unhandled error");
  });

  const send = (text: string, key: string) =>
    request(h.app)
      .post("/v1/retrieve")
      .set("x-api-key", key)
      .set("content-type", "application/json")
      .send(text);

  test("structured bodies with hostile values, as the admin and as a plain key", async () => {
    const seen = new Map<string, number>();
    await fc.assert(
      fc.asyncProperty(
        retrieveBody,
        fc.constantFrom(KEYS.acmeOps, KEYS.acmeChat, KEYS.globex),
        async (b, key) => {
          const res = await send(JSON.stringify(b), key);
          expectCleanAnswer(res);
          const fallback = res.status === 200 ? (res.body.metadata.fallback?.code ?? "none") : "";
          const outcome = `${res.status}${fallback ? `:${fallback}` : ""}`;
          seen.set(outcome, (seen.get(outcome) ?? 0) + 1);
        },
      ),
      { numRuns: 300 },
    );
    // The fuzzer got past the schema into eligibility, policy resolution and the backend, not only 400s.
    for (const outcome of ["400", "403", "200:MEMORY_DISABLED", "200:none"])
      expect([...seen.keys()]).toContain(outcome);
    expect([...seen.keys()].filter((k) => k.startsWith("200:")).length).toBeGreaterThanOrEqual(3);
  });

  test("`__proto__` / `constructor` keys at the top level and in overrides never pollute or escalate", async () => {
    await fc.assert(
      fc.asyncProperty(
        retrieveBody,
        fc.constantFrom("top" as const, "overrides" as const),
        async (b, where) => {
          const text = withProtoKeys(JSON.stringify({ ...b, overrides: { topK: 3 } }), where);
          const res = await send(text, KEYS.acmeChat);
          expectCleanAnswer(res);
          // A key without admin never gets overrides applied, whatever the prototype games.
          expect(res.status).not.toBe(200);
        },
      ),
      { numRuns: 100 },
    );
  });

  test("any JSON value, and arbitrary text, as the body", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          fc.jsonValue().map((v) => JSON.stringify(v) ?? "null"),
          fc.string({ maxLength: 200 }),
          fc.string({ unit: "binary", maxLength: 200 }),
        ),
        async (text) => {
          expectCleanAnswer(await send(text, KEYS.acmeOps));
        },
      ),
      { numRuns: 200 },
    );
  });

  test("deeply nested JSON (20,000 levels) is refused cleanly with a 400", async () => {
    for (const text of [
      deepJson(20_000, "array"),
      deepJson(10_000, "object"),
      `{"userId":"u-123","overrides":${deepJson(10_000, "object")}}`,
      `{"userId":${deepJson(20_000, "array")}}`,
    ]) {
      const res = await send(text, KEYS.acmeOps);
      expectCleanAnswer(res);
      expect([400, 413]).toContain(res.status);
    }
  });

  test("a deeply nested sessionId is an ineligible session, not a crash", async () => {
    const text = `{"userId":"u-123","sessionId":${deepJson(5_000, "array")},"query":"tea","useMemory":true}`;
    const res = await send(text, KEYS.acmeChat).expect(200);
    expect(res.body.metadata.fallback.code).toBe("SESSION_INVALID");
  });
});
