import request from "supertest";
import { type Harness, KEYS, makeHarness } from "../helpers/harness";
import { makeCandidate } from "../helpers/items";

const body = (patch: Record<string, unknown> = {}) => ({
  userId: "u-123",
  sessionId: "s-9",
  query: "coffee order",
  useMemory: true,
  ...patch,
});

const memories = [makeCandidate({ id: "f1", content: "Ana orders a flat white.", score: 0.9 })];

function post(h: Harness, payload: unknown, key: string = KEYS.acmeChat) {
  return request(h.app)
    .post("/v1/retrieve")
    .set("x-api-key", key)
    .send(payload as object);
}

function expectSkip(res: request.Response, code: string) {
  expect(res.status).toBe(200);
  expect(res.body.memories).toEqual([]);
  expect(res.body.systemPrompt).toBe("");
  expect(res.body.metadata.fallback).toMatchObject({ code, action: "skip" });
  expect(typeof res.body.metadata.fallback.message).toBe("string");
}

describe("POST /v1/retrieve — fallbacks (docs/api.md#eligibility-and-fallbacks)", () => {
  let h: Harness;
  beforeEach(async () => {
    h = await makeHarness({
      policies: {
        remapped:
          "name: remapped\nversion: 1\nfallbacks: { ZEP_UNAVAILABLE: empty, COLLECTION_NOT_FOUND: skip, MEMORY_DISABLED: empty }\n",
        tight:
          "name: tight\nversion: 1\nrateLimit: { perUser: { points: 2, durationSeconds: 60 } }\ntimeouts: { backendMs: 100 }\n",
      },
    });
    h.zep.acme?.setUser("u-123", memories);
  });
  afterEach(() => h.close());

  test("MEMORY_DISABLED when useMemory is anything but true", async () => {
    for (const useMemory of [false, "true", 1, null, undefined]) {
      expectSkip(await post(h, body({ useMemory })), "MEMORY_DISABLED");
    }
    expect(h.zep.acme?.searchCalls).toBe(0);
  });

  test("SESSION_INVALID when sessionId is missing or not matching the pattern", async () => {
    for (const sessionId of [undefined, "", "has space", "x".repeat(129), 42]) {
      expectSkip(await post(h, body({ sessionId })), "SESSION_INVALID");
    }
  });

  test("INVALID_QUERY when the query is blank or longer than maxQueryChars", async () => {
    expectSkip(await post(h, body({ query: "   " })), "INVALID_QUERY");
    expectSkip(await post(h, body({ query: undefined })), "INVALID_QUERY");
    expectSkip(await post(h, body({ query: "x".repeat(4001) })), "INVALID_QUERY");
    expect(h.zep.acme?.searchCalls).toBe(0);
  });

  test("INVALID_QUERY when the backend rejects the query (400)", async () => {
    h.zep.acme?.fail("invalid_query", { status: 400 });
    expectSkip(await post(h, body()), "INVALID_QUERY");
  });

  test("COLLECTION_NOT_FOUND → empty: the payload of a successful retrieval with zero memories", async () => {
    const res = await post(h, body({ userId: "nobody" })).expect(200);
    expect(res.body.memories).toEqual([]);
    expect(res.body.systemPrompt).toBe("");
    expect(res.body.metadata.fallback).toMatchObject({ code: "COLLECTION_NOT_FOUND", action: "empty" });
    expect(res.body.metadata.appliedFilters).toContain("token_budget");
    expect(h.zep.acme?.searchCalls).toBe(0);
    expect(res.body.metadata.policy.name).toBe("default");
  });

  test("COLLECTION_NOT_FOUND from a backend 404 during search", async () => {
    h.zep.acme?.fail("not_found", { status: 404 });
    const res = await post(h, body({ userId: "fresh-user" })).expect(200);
    expect(res.body.metadata.fallback).toMatchObject({ code: "COLLECTION_NOT_FOUND", action: "empty" });
  });

  test("user existence is cached: a known user is not looked up again", async () => {
    await post(h, body({ query: "one" })).expect(200);
    await post(h, body({ query: "two" })).expect(200);
    expect(h.zep.acme?.existsCalls).toBe(1);
    expect(h.zep.acme?.searchCalls).toBe(2);
  });

  test("ZEP_UNAVAILABLE (5xx / network) → skip, never a 5xx", async () => {
    h.zep.acme?.fail("unavailable", { status: 500 });
    expectSkip(await post(h, body()), "ZEP_UNAVAILABLE");
  });

  test("ZEP_UNAVAILABLE when the backend is slower than the policy's timeout (100 ms)", async () => {
    await post(h, body({ policy: "tight", query: "first" })).expect(200); // existence now cached
    if (h.zep.acme) h.zep.acme.script = { kind: "delay", ms: 2000 };
    const started = Date.now();
    const res = await post(h, body({ policy: "tight" })).expect(200);
    expect(res.body.metadata.fallback.code).toBe("ZEP_UNAVAILABLE");
    expect(Date.now() - started).toBeLessThan(1000);
  });

  test("an adapter that ignores its abort signal cannot hold the request past the timeout", async () => {
    await post(h, body({ policy: "tight", query: "first" })).expect(200);
    if (h.zep.acme) h.zep.acme.script = { kind: "hang" };
    const started = Date.now();
    const res = await post(h, body({ policy: "tight" })).expect(200);
    expect(res.body.metadata.fallback.code).toBe("ZEP_UNAVAILABLE");
    expect(Date.now() - started).toBeLessThan(1000);
  });

  test("an adapter that throws something unexpected still degrades to *_UNAVAILABLE", async () => {
    if (h.zep.acme) h.zep.acme.script = { kind: "throw", error: new TypeError("bug") };
    expectSkip(await post(h, body()), "ZEP_UNAVAILABLE");
  });

  test("OPENMEMORY_UNAVAILABLE for the OpenMemory backend", async () => {
    h.openmemory.acme?.setUser("u-123", memories).fail("unavailable", { status: 503 });
    expectSkip(await post(h, body({ backend: "openmemory" })), "OPENMEMORY_UNAVAILABLE");
  });

  test("RATE_LIMITED (per-user rate) → cache: the last good payload is served", async () => {
    const ok1 = await post(h, body({ policy: "tight" })).expect(200);
    expect(ok1.body.metadata.fallback).toBeNull();
    await post(h, body({ policy: "tight", query: "other" })).expect(200);
    const limited = await post(h, body({ policy: "tight" })).expect(200);
    expect(limited.body.metadata.fallback).toMatchObject({ code: "RATE_LIMITED", action: "cache" });
    expect(limited.body.metadata.cache).toBe("hit");
    expect(limited.body.memories).toEqual(ok1.body.memories);
    // Nothing cached for this query: behaves as skip.
    const none = await post(h, body({ policy: "tight", query: "never asked" })).expect(200);
    expectSkip(none, "RATE_LIMITED");
    expect(none.body.metadata.fallback.message).toContain("no cached payload");
  });

  test("RATE_LIMITED from a backend 429: Retry-After is honoured, the backend is not called meanwhile", async () => {
    const first = await post(h, body({ query: "warm" })).expect(200);
    expect(first.body.metadata.fallback).toBeNull();
    h.zep.acme?.fail("rate_limited", { status: 429, retryAfterMs: 60_000 });
    const limited = await post(h, body({ query: "cold" })).expect(200);
    expect(limited.body.metadata.fallback.code).toBe("RATE_LIMITED");
    const calls = h.zep.acme?.searchCalls;
    if (h.zep.acme) h.zep.acme.script = { kind: "ok" };
    const during = await post(h, body({ query: "warm" })).expect(200);
    expect(during.body.metadata.fallback).toMatchObject({ code: "RATE_LIMITED", action: "cache" });
    expect(during.body.metadata.cache).toBe("hit");
    expect(h.zep.acme?.searchCalls).toBe(calls);
  });

  test("a stale cache entry is served by the cache fallback with cache: stale", async () => {
    await h.close();
    h = await makeHarness({
      policies: {
        brief: "name: brief\nversion: 1\ncache: { ttlSeconds: 0, staleSeconds: 60 }\n",
      },
    });
    h.zep.acme?.setUser("u-123", memories);
    const good = await post(h, body({ policy: "brief" })).expect(200);
    expect(good.body.metadata.cache).toBe("miss");
    h.zep.acme?.fail("rate_limited", { status: 429, retryAfterMs: 1000 });
    // ttl 0: never fresh, so the backend is asked; its 429 makes the fallback serve the entry as stale.
    const res = await post(h, body({ policy: "brief" })).expect(200);
    expect(res.body.metadata.fallback).toMatchObject({ code: "RATE_LIMITED", action: "cache" });
    expect(res.body.metadata.cache).toBe("stale");
    expect(res.body.memories).toEqual(good.body.memories);
  });

  test("a policy may remap any code to any action", async () => {
    const disabled = await post(h, body({ policy: "remapped", useMemory: false })).expect(200);
    expect(disabled.body.metadata.fallback).toMatchObject({ code: "MEMORY_DISABLED", action: "empty" });
    expect(disabled.body.metadata.appliedFilters.length).toBeGreaterThan(0);
    const unknown = await post(h, body({ policy: "remapped", userId: "nobody" })).expect(200);
    expectSkip(unknown, "COLLECTION_NOT_FOUND");
  });
});

describe("POST /v1/retrieve — caller errors are problem+json", () => {
  let h: Harness;
  beforeEach(async () => {
    h = await makeHarness();
  });
  afterEach(() => h.close());

  const expectProblem = (res: request.Response, status: number, code: string) => {
    expect(res.status).toBe(status);
    expect(res.headers["content-type"]).toMatch(/^application\/problem\+json/);
    expect(res.body).toMatchObject({ status, code });
    expect(typeof res.body.type).toBe("string");
    expect(typeof res.body.title).toBe("string");
    expect(typeof res.body.detail).toBe("string");
    expect(res.body.requestId).toBe(res.headers["x-request-id"]);
  };

  test("400 on malformed JSON", async () => {
    const res = await request(h.app)
      .post("/v1/retrieve")
      .set("x-api-key", KEYS.acmeChat)
      .set("content-type", "application/json")
      .send('{"userId": "u-1",');
    expectProblem(res, 400, "MALFORMED_JSON");
  });

  test("400 names the field path on schema violations", async () => {
    let res = await post(h, body({ userId: "bad user!" }));
    expectProblem(res, 400, "VALIDATION_FAILED");
    expect(res.body.detail).toMatch(/^userId: /);
    res = await post(h, { sessionId: "s" });
    expect(res.body.detail).toMatch(/userId: is required/);
    res = await post(h, body({ query: 42 }));
    expect(res.body.detail).toMatch(/^query: /);
    res = await post(h, body({ topK: 3 }));
    expect(res.body.detail).toBe("topK: unknown field");
    res = await request(h.app)
      .post("/v1/retrieve")
      .set("x-api-key", KEYS.acmeChat)
      .set("content-type", "application/json")
      .send("[1,2]");
    expectProblem(res, 400, "VALIDATION_FAILED");
    expect(res.body.detail).toBe("body: must be a JSON object");
  });

  test("400 names the override field and its range", async () => {
    const res = await post(h, body({ overrides: { topK: 50 } }), KEYS.acmeOps);
    expectProblem(res, 400, "VALIDATION_FAILED");
    expect(res.body.detail).toBe("overrides.topK: must be an integer from 1 to 20 (got 50)");
    const bad = await post(h, body({ overrides: { customRedactionPatterns: ["(a)\\1"] } }), KEYS.acmeOps);
    expectProblem(bad, 400, "VALIDATION_FAILED");
    expect(bad.body.detail).toMatch(/^overrides\.customRedactionPatterns\[0\]: /);
  });

  test("400 for an unknown policy name", async () => {
    await h.close();
    h = await makeHarness({ tenants: null });
    const res = await post(h, body({ policy: "nope" }));
    expectProblem(res, 400, "VALIDATION_FAILED");
    expect(res.body.detail).toBe('policy: no policy named "nope"');
  });

  test("413 for a body over 64 KiB, before it is parsed", async () => {
    const res = await post(h, body({ query: "x".repeat(70 * 1024) }));
    expectProblem(res, 413, "PAYLOAD_TOO_LARGE");
  });

  test("415 for a non-JSON body", async () => {
    const res = await request(h.app)
      .post("/v1/retrieve")
      .set("x-api-key", KEYS.acmeChat)
      .set("content-type", "text/plain")
      .send("userId=u-1");
    expectProblem(res, 415, "UNSUPPORTED_MEDIA_TYPE");
    const form = await request(h.app)
      .post("/v1/retrieve")
      .set("x-api-key", KEYS.acmeChat)
      .type("form")
      .send({ userId: "u" });
    expectProblem(form, 415, "UNSUPPORTED_MEDIA_TYPE");
  });

  test("404 problem for unknown routes", async () => {
    expectProblem(await request(h.app).get("/v1/nothing"), 404, "NOT_FOUND");
  });
});
