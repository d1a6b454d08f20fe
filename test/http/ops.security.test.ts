import request from "supertest";
import { BackendError } from "../../src/backends/types";
import { type Harness, KEYS, makeHarness } from "../helpers/harness";
import { makeCandidate } from "../helpers/items";

/**
 * Operations endpoints — security: /v1/policies needs an admin key (401/403 otherwise, nothing leaked in the
 * refusal); the unauthenticated /healthz, /readyz and /metrics leak no secret, key, user id, query or memory;
 * every answer carries the secure headers (helmet).
 */
const SECRETS = ["zep-secret-acme", "om-secret-acme", "zep-secret-globex"];
const QUERY = "secret-query-about-tea";
const CONTENT = "Ana's SSN is 123-45-6789 and she likes oolong.";

describe("operations endpoints — security", () => {
  let h: Harness;
  beforeEach(async () => {
    h = await makeHarness();
    h.zep.acme?.setUser("u-secret-user", [makeCandidate({ id: "f1", content: CONTENT, score: 0.9 })]);
  });
  afterEach(() => h.close());

  const retrieve = (key: string) =>
    request(h.app)
      .post("/v1/retrieve")
      .set("x-api-key", key)
      .send({ userId: "u-secret-user", sessionId: "s-1", query: QUERY, useMemory: true });

  test("GET /v1/policies: missing, malformed, unknown, other-tenant and non-admin keys are refused", async () => {
    for (const [headers, status] of [
      [{}, 401],
      [{ authorization: "Bearer" }, 401],
      [{ authorization: `Bearer ${KEYS.acmeOps}x` }, 401],
      [{ "x-api-key": "mg_unknown_0123456789" }, 401],
      [{ "x-api-key": KEYS.globex }, 403], // another tenant, retrieve scope only
      [{ "x-api-key": KEYS.acmeChat }, 403], // same tenant, no admin scope
      [{ authorization: `Bearer ${KEYS.acmeChat}`, "x-api-key": KEYS.acmeOps }, 401], // mixing keys to escalate
    ] as Array<[Record<string, string>, number]>) {
      const res = await request(h.app).get("/v1/policies").set(headers);
      expect(res.status).toBe(status);
      expect(res.headers["content-type"]).toMatch(/^application\/problem\+json/);
      expect(res.body.policies).toBeUndefined();
      if (status === 401) expect(res.headers["www-authenticate"]).toBe('Bearer realm="memgate"');
      const text = JSON.stringify(res.body);
      for (const k of Object.values(KEYS)) expect(text).not.toContain(k);
    }
    const ok = await request(h.app).get("/v1/policies").set("authorization", `Api-Key ${KEYS.acmeOps}`);
    expect(ok.status).toBe(200);
  });

  test("/v1/policies (admin) shows policies, not tenants, key hashes or backend credentials", async () => {
    const res = await request(h.app).get("/v1/policies").set("x-api-key", KEYS.acmeOps).expect(200);
    const text = JSON.stringify(res.body);
    for (const s of [...SECRETS, "sha256", "apiKeyEnv", "ACME_ZEP_KEY", "globex"])
      expect(text).not.toContain(s);
  });

  test("/readyz names a degraded backend without leaking secrets, keys, tenants or upstream answers", async () => {
    const zep = h.zep.acme;
    if (zep === undefined) throw new Error("no fake Zep");
    const failure = new BackendError({
      kind: "unavailable",
      backend: "zep",
      status: 401,
      message: "Zep failed: HTTP 401 upstream said: bad key zep-secret-acme",
      cause: new Error("upstream said: bad key zep-secret-acme"),
    });
    zep.script = { kind: "error", error: failure };
    for (let i = 0; i < 5; i++) await retrieve(KEYS.acmeChat).expect(200); // opens acme's Zep circuit
    const res = await request(h.app).get("/readyz");
    expect(res.status).toBe(200);
    expect(res.body.status).toBe("degraded");
    expect(res.body.checks).toContainEqual({
      name: "backend:zep",
      ok: false,
      degraded: true,
      detail: "1 of 2 zep circuits open",
    });
    const text = res.text;
    for (const s of [
      ...SECRETS,
      ...Object.values(KEYS),
      "upstream said",
      "u-secret-user",
      QUERY,
      "acme",
      "globex",
    ])
      expect(text).not.toContain(s);
    // Only the documented fields: name, ok, degraded, detail.
    for (const check of res.body.checks) {
      for (const field of Object.keys(check)) expect(["name", "ok", "degraded", "detail"]).toContain(field);
    }
  });

  test("/metrics and /healthz carry no key, user id, query or memory content after traffic", async () => {
    await retrieve(KEYS.acmeChat).expect(200);
    await retrieve("mg_wrong_key_0123456789").expect(401);
    for (const path of ["/metrics", "/healthz"]) {
      const res = await request(h.app).get(path);
      expect(res.status).toBeLessThan(500);
      for (const s of [
        ...SECRETS,
        ...Object.values(KEYS),
        "mg_wrong_key",
        "u-secret-user",
        QUERY,
        "123-45-6789",
        "oolong",
      ]) {
        expect(res.text).not.toContain(s);
      }
    }
  });

  test("no secret or PII in any log line of all of the above", async () => {
    await retrieve(KEYS.acmeChat).expect(200);
    await retrieve("mg_wrong_key_0123456789").expect(401);
    await request(h.app).get("/v1/policies").set("x-api-key", KEYS.acmeChat).expect(403);
    await request(h.app).get("/v1/policies").set("authorization", `Bearer ${KEYS.acmeOps}`).expect(200);
    await request(h.app).get("/readyz");
    const all = h.logs.join("\n");
    expect(h.logs.length).toBeGreaterThan(0);
    for (const s of [
      ...SECRETS,
      ...Object.values(KEYS),
      "mg_wrong_key",
      "u-secret-user",
      QUERY,
      "123-45-6789",
      "oolong",
    ]) {
      expect(all).not.toContain(s);
    }
  });

  test("secure response headers (helmet) on every kind of answer", async () => {
    const answers = [
      await request(h.app).get("/healthz"),
      await request(h.app).get("/readyz"),
      await request(h.app).get("/v1/policies"),
      await request(h.app).get("/no/such/route"),
      await retrieve(KEYS.acmeChat),
      await request(h.app)
        .post("/v1/retrieve")
        .set("x-api-key", KEYS.acmeChat)
        .set("content-type", "text/plain")
        .send("x"),
    ];
    for (const res of answers) {
      expect(res.headers).toMatchObject({
        "x-content-type-options": "nosniff",
        "x-frame-options": "DENY",
        "content-security-policy": "default-src 'none';frame-ancestors 'none'",
        "referrer-policy": "no-referrer",
        "cross-origin-resource-policy": "same-origin",
        "strict-transport-security": expect.stringMatching(/^max-age=\d+/),
      });
      expect(res.headers["x-powered-by"]).toBeUndefined();
    }
  });
});
