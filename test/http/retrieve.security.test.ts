import request from "supertest";
import { type Harness, KEYS, makeHarness } from "../helpers/harness";
import { makeCandidate } from "../helpers/items";

const QUERY = "secret-query-about-coffee";
const CONTENT = "Ana's card is 4111 1111 1111 1111 and she likes flat whites.";
const body = (patch: Record<string, unknown> = {}) => ({
  userId: "u-123",
  sessionId: "s-9",
  query: QUERY,
  useMemory: true,
  ...patch,
});

describe("POST /v1/retrieve — security", () => {
  let h: Harness;
  beforeEach(async () => {
    h = await makeHarness();
    h.zep.acme?.setUser("u-123", [makeCandidate({ id: "f1", content: CONTENT, score: 0.9 })]);
  });
  afterEach(() => h.close());

  test("401 without a key, with an unknown key, or with a malformed header", async () => {
    for (const headers of [
      {},
      { "x-api-key": "mg_not_a_real_key" },
      { authorization: "Bearer" },
      { authorization: `Basic ${Buffer.from("a:b").toString("base64")}` },
    ] as Array<Record<string, string>>) {
      const res = await request(h.app).post("/v1/retrieve").set(headers).send(body());
      expect(res.status).toBe(401);
      expect(res.body.code).toBe("UNAUTHORIZED");
    }
    expect(h.zep.acme?.searchCalls).toBe(0);
  });

  test("a tenant never reaches another tenant's backend or data", async () => {
    // globex has its own Zep project (its own fake): acme's user is unknown there.
    const res = await request(h.app)
      .post("/v1/retrieve")
      .set("x-api-key", KEYS.globex)
      .send(body({ backend: "zep" }));
    expect(res.status).toBe(200);
    expect(res.body.memories).toEqual([]);
    expect(res.body.metadata.fallback.code).toBe("COLLECTION_NOT_FOUND");
    expect(h.zep.acme?.searchCalls).toBe(0);
    expect(h.zep.acme?.existsCalls).toBe(0);
    expect(h.zep.globex?.existsCalls).toBe(1);
  });

  test("403 for a backend the tenant does not have", async () => {
    const res = await request(h.app)
      .post("/v1/retrieve")
      .set("x-api-key", KEYS.globex)
      .send(body({ backend: "openmemory" }));
    expect(res.status).toBe(403);
    expect(res.body.detail).toBe('backend: this tenant has no "openmemory" backend');
  });

  test("403 for a policy the tenant is not allowed", async () => {
    const res = await request(h.app)
      .post("/v1/retrieve")
      .set("x-api-key", KEYS.globex)
      .send(body({ policy: "fast" }));
    expect(res.status).toBe(403);
    expect(res.body.detail).toBe('policy: "fast" is not allowed for this tenant');
  });

  test("no scope escalation: overrides and explain need the admin scope", async () => {
    const o = await request(h.app)
      .post("/v1/retrieve")
      .set("x-api-key", KEYS.acmeChat)
      .send(body({ overrides: { minScore: 0 } }));
    expect(o.status).toBe(403);
    expect(o.body.detail).toBe("overrides: needs the 'admin' scope");
    const e = await request(h.app)
      .post("/v1/retrieve")
      .set("x-api-key", KEYS.acmeChat)
      .send(body({ explain: true }));
    expect(e.status).toBe(403);
    expect(e.body.detail).toBe("explain: needs the 'admin' scope");
    expect(h.zep.acme?.searchCalls).toBe(0);
  });

  test("GET /v1/policies needs admin", async () => {
    await request(h.app).get("/v1/policies").set("x-api-key", KEYS.acmeChat).expect(403);
    await request(h.app).get("/v1/policies").expect(401);
    const res = await request(h.app).get("/v1/policies").set("x-api-key", KEYS.acmeOps).expect(200);
    expect(res.body.policies.map((p: { name: string }) => p.name)).toContain("default");
  });

  test("an unsafe x-request-id is not echoed (no header injection)", async () => {
    const res = await request(h.app)
      .post("/v1/retrieve")
      .set("x-api-key", KEYS.acmeChat)
      .set("x-request-id", "abc def<script>")
      .send(body());
    expect(res.headers["x-request-id"]).not.toContain("<script>");
    const ok = await request(h.app)
      .post("/v1/retrieve")
      .set("x-api-key", KEYS.acmeChat)
      .set("x-request-id", "req-42")
      .send(body());
    expect(ok.headers["x-request-id"]).toBe("req-42");
  });

  test("no key, query, memory content or backend secret in any log line or error body", async () => {
    await request(h.app).post("/v1/retrieve").set("x-api-key", KEYS.acmeChat).send(body()).expect(200);
    await request(h.app).post("/v1/retrieve").set("x-api-key", "mg_wrong_key_value").send(body()).expect(401);
    h.zep.acme?.fail("unavailable", { status: 500 });
    const failed = await request(h.app)
      .post("/v1/retrieve")
      .set("x-api-key", KEYS.acmeChat)
      .send(body({ query: `${QUERY} 2` }));
    expect(JSON.stringify(failed.body)).not.toContain("zep-secret");
    const all = h.logs.join("\n");
    expect(h.logs.length).toBeGreaterThan(0);
    for (const secret of [
      KEYS.acmeChat,
      "mg_wrong_key_value",
      QUERY,
      "4111",
      "flat whites",
      "zep-secret-acme",
    ]) {
      expect(all).not.toContain(secret);
    }
  });
});

describe("POST /v1/retrieve — security: escalation and injection attempts", () => {
  let h: Harness;
  beforeEach(async () => {
    h = await makeHarness();
    h.zep.acme?.setUser("u-123", [makeCandidate({ id: "f1", content: CONTENT, score: 0.9 })]);
  });
  afterEach(() => h.close());

  const raw = (key: string, text: string) =>
    request(h.app)
      .post("/v1/retrieve")
      .set("x-api-key", key)
      .set("content-type", "application/json")
      .send(text);

  test("overrides need admin whatever their shape: empty, prototype keys, nested", async () => {
    for (const text of [
      JSON.stringify(body({ overrides: {} })),
      `{"userId":"u-123","sessionId":"s-9","query":"q","useMemory":true,"overrides":{"__proto__":{"admin":true}}}`,
      `{"userId":"u-123","sessionId":"s-9","query":"q","useMemory":true,"__proto__":{"explain":true},"overrides":{}}`,
      JSON.stringify(body({ overrides: { constructor: { prototype: { topK: 20 } } } })),
    ]) {
      const res = await raw(KEYS.acmeChat, text);
      // 403 (needs admin), or 400 when a stray top-level `__proto__` key is refused first: never applied.
      expect([400, 403]).toContain(res.status);
      expect(res.body.detail).toMatch(/overrides: needs the 'admin' scope|__proto__: unknown field/);
    }
    expect(h.zep.acme?.searchCalls).toBe(0);
  });

  test("explain: only a real `true` needs admin; look-alikes are refused as invalid, not run", async () => {
    await request(h.app)
      .post("/v1/retrieve")
      .set("x-api-key", KEYS.acmeChat)
      .send(body({ explain: false }))
      .expect(200);
    for (const patch of [{ explain: "true" }, { explain: 1 }, { Explain: true }, { trace: true }]) {
      const res = await request(h.app).post("/v1/retrieve").set("x-api-key", KEYS.acmeChat).send(body(patch));
      expect(res.status).toBe(400);
      expect(res.body.trace).toBeUndefined();
    }
  });

  test("policy and backend names cannot be bent: traversal, case, NUL, another tenant's backend", async () => {
    for (const patch of [
      { policy: "../default" },
      { policy: "DEFAULT" },
      { policy: "default\u0000" },
      { policy: "default\r\nx-admin: 1" },
      { backend: "ZEP" },
      { backend: "zep " },
      { backend: ["zep", "openmemory"] },
    ]) {
      const res = await request(h.app).post("/v1/retrieve").set("x-api-key", KEYS.globex).send(body(patch));
      expect(res.status).toBe(400);
      expect(Object.keys(res.headers)).not.toContain("x-admin");
    }
    // globex may not name acme-only things even when they exist.
    await request(h.app)
      .post("/v1/retrieve")
      .set("x-api-key", KEYS.globex)
      .send(body({ backend: "openmemory" }))
      .expect(403);
  });

  test("a key is only read from the documented headers (not the query string, a cookie or a body field)", async () => {
    for (const req of [
      request(h.app).post(`/v1/retrieve?api_key=${KEYS.acmeChat}`).send(body()),
      request(h.app).post("/v1/retrieve").set("cookie", `x-api-key=${KEYS.acmeChat}`).send(body()),
      request(h.app)
        .post("/v1/retrieve")
        .send(body({ apiKey: KEYS.acmeChat })),
      request(h.app).post("/v1/retrieve").set("x-api_key", KEYS.acmeChat).send(body()),
    ]) {
      expect((await req).status).toBe(401);
    }
    expect(h.logs.join("")).not.toContain(KEYS.acmeChat);
  });
});
