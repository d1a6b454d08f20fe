import { Writable } from "node:stream";
import request from "supertest";
import { BackendProvider } from "../../src/backends/registry";
import type { Backend } from "../../src/backends/types";
import { createLogger } from "../../src/logging/logger";
import type { PolicyRegistry } from "../../src/policy/registry-types";
import { DEFAULT_RESILIENCE, resilientBackends } from "../../src/resilience";
import { createReadiness } from "../../src/server/readiness";
import { tenantsFromText } from "../../src/tenants/file";
import { hashKey } from "../../src/tenants/keys";
import { FakeBackend } from "../helpers/fake-backend";
import { type Harness, KEYS, makeHarness } from "../helpers/harness";
import { makeCandidate } from "../helpers/items";

/**
 * /readyz answers "can this process serve?" (issue 13, point 5): 503 only while draining or without its
 * policies; a backend outage (circuit open) or a Redis outage is 200 "degraded", because every request is still
 * answered (fallbacks, cache bypass) and every replica shares the same backends. Backends are never called by
 * the probe: their state is what their circuit breakers learned from real traffic.
 */
const memories = [makeCandidate({ id: "f1", content: "Ana orders a flat white.", score: 0.9 })];
const body = (query: string) => ({ userId: "u-123", sessionId: "s-9", query, useMemory: true });

interface Check {
  name: string;
  ok: boolean;
  degraded?: boolean;
  detail?: string;
}

function zepOf(h: Harness, tenant: "acme" | "globex"): FakeBackend {
  const zep = h.zep[tenant];
  if (zep === undefined) throw new Error(`no fake Zep for ${tenant}`);
  return zep;
}

/** Every call the fakes received, pings included. */
function countCalls(h: Harness): () => number {
  const fakes = [...Object.values(h.zep), ...Object.values(h.openmemory)];
  let pings = 0;
  for (const fake of fakes) {
    fake.ping = async () => {
      pings++;
    };
  }
  return () => pings + fakes.reduce((n, f) => n + f.searchCalls + f.existsCalls, 0);
}

/** Fails acme's Zep and sends retrievals until its circuit opens (5 consecutive failures by default). */
async function openAcmeZep(h: Harness): Promise<void> {
  zepOf(h, "acme").setUser("u-123", memories).fail("unavailable", { status: 503 });
  for (let i = 0; i < 5; i++) {
    const res = await request(h.app)
      .post("/v1/retrieve")
      .set("x-api-key", KEYS.acmeChat)
      .send(body(`q${i}`))
      .expect(200);
    expect(res.body.metadata.fallback).toMatchObject({ code: "ZEP_UNAVAILABLE" });
  }
}

describe("/readyz: can this process serve", () => {
  let h: Harness | undefined;
  afterEach(async () => {
    await h?.close();
    h = undefined;
  });

  test("ready: policies loaded and every circuit in use closed", async () => {
    h = await makeHarness();
    const res = await request(h.app).get("/readyz").expect(200);
    expect(res.body.status).toBe("ready");
    const checks = res.body.checks as Check[];
    expect(checks).toContainEqual(expect.objectContaining({ name: "policies", ok: true }));
    // acme: zep + openmemory, globex: local + zep (the harness builds them all before the first request).
    expect(checks).toContainEqual({ name: "backends", ok: true, detail: "4 of 4 circuits closed" });
    expect(checks.filter((c) => c.name.startsWith("backend:"))).toEqual([]);
  });

  test("a backend outage (circuit opened by failing calls) is 200 degraded, naming the backend, not the tenant", async () => {
    h = await makeHarness({ env: { MEMGATE_BREAKER_HALF_OPEN_MS: "60000" } });
    await openAcmeZep(h);
    const res = await request(h.app).get("/readyz").expect(200);
    expect(res.body.status).toBe("degraded");
    const checks = res.body.checks as Check[];
    expect(checks).toContainEqual({
      name: "backend:zep",
      ok: false,
      degraded: true,
      detail: "1 of 2 zep circuits open",
    });
    expect(checks).toContainEqual({ name: "backends", ok: true, detail: "3 of 4 circuits closed" });
    // Counted by backend: globex's Zep has its own breaker, still closed; no tenant is named (issue 26, 12).
    expect(checks.filter((c) => !c.ok).map((c) => c.name)).toEqual(["backend:zep"]);
    expect(res.text).not.toContain("acme");
    // Nothing secret in the answer.
    for (const s of ["zep-secret-acme", "om-secret-acme", "zep-secret-globex", ...Object.values(KEYS)])
      expect(res.text).not.toContain(s);

    // The replica keeps answering through its fallback meanwhile.
    const answer = await request(h.app)
      .post("/v1/retrieve")
      .set("x-api-key", KEYS.acmeChat)
      .send(body("still there?"))
      .expect(200);
    expect(answer.body.metadata.fallback).toMatchObject({ code: "ZEP_UNAVAILABLE", action: "skip" });
  });

  test("a half-open circuit (its probe in flight) is degraded too; closed again, ready", async () => {
    h = await makeHarness({ env: { MEMGATE_BREAKER_HALF_OPEN_MS: "100", MEMGATE_RETRY_MAX: "0" } });
    await openAcmeZep(h);
    const zep = zepOf(h, "acme");
    zep.script = { kind: "ok" };
    // The probe is the existence check: slow, so that the circuit stays half-open while /readyz looks.
    zep.userExists = async () => {
      await new Promise((r) => setTimeout(r, 400));
      return true;
    };
    await new Promise((r) => setTimeout(r, 150));
    // The next call after the wait is the probe: while it is in flight the circuit is half-open.
    const probe = request(h.app)
      .post("/v1/retrieve")
      .set("x-api-key", KEYS.acmeChat)
      .send(body("probe"))
      .then((r) => r);
    await new Promise((r) => setTimeout(r, 100));
    const during = await request(h.app).get("/readyz").expect(200);
    expect(during.body.status).toBe("degraded");
    expect(during.body.checks).toContainEqual({
      name: "backend:zep",
      ok: false,
      degraded: true,
      detail: "1 of 2 zep circuits half-open (probing)",
    });
    expect((await probe).status).toBe(200);
    const after = await request(h.app).get("/readyz").expect(200);
    expect(after.body.status).toBe("ready");
  });

  test("the probe makes no backend call, closed or open, however often it comes", async () => {
    h = await makeHarness({ env: { MEMGATE_BREAKER_HALF_OPEN_MS: "100" } });
    const calls = countCalls(h);
    for (let i = 0; i < 20; i++) await request(h.app).get("/readyz").expect(200);
    expect(calls()).toBe(0);

    await openAcmeZep(h);
    const afterOutage = calls();
    // Past the half-open wait too: the probe is never the one that calls the backend.
    await new Promise((r) => setTimeout(r, 150));
    for (let i = 0; i < 20; i++) await request(h.app).get("/readyz").expect(200);
    expect(calls()).toBe(afterOutage);
    const last = await request(h.app).get("/readyz").expect(200);
    expect(last.body.checks).toContainEqual(expect.objectContaining({ name: "backend:zep", degraded: true }));
  });

  test("a Redis outage is 200 degraded", async () => {
    // Nothing listens on port 1: the connection is refused from the start (and retried in the background).
    h = await makeHarness({ env: { REDIS_URL: "redis://127.0.0.1:1" } });
    const res = await request(h.app).get("/readyz").expect(200);
    expect(res.body.status).toBe("degraded");
    expect(res.body.checks).toContainEqual(
      expect.objectContaining({ name: "redis", ok: false, degraded: true }),
    );
    // …and requests are answered meanwhile (cache bypassed).
    zepOf(h, "acme").setUser("u-123", memories);
    const answer = await request(h.app)
      .post("/v1/retrieve")
      .set("x-api-key", KEYS.acmeChat)
      .send(body("coffee"))
      .expect(200);
    expect(answer.body.metadata).toMatchObject({ cache: "bypass", fallback: null });
  });

  test("503 draining during graceful shutdown, while other requests get SHUTTING_DOWN", async () => {
    h = await makeHarness();
    h.services.lifecycle.shuttingDown = true;
    const res = await request(h.app).get("/readyz").expect(503);
    expect(res.headers["content-type"]).toMatch(/^application\/json/);
    expect(res.headers.connection).toBe("close");
    expect(res.body).toEqual({
      status: "draining",
      checks: [{ name: "lifecycle", ok: false, detail: "shutting down: finishing in-flight requests" }],
    });
    const refused = await request(h.app)
      .post("/v1/retrieve")
      .set("x-api-key", KEYS.acmeChat)
      .send(body("late"))
      .expect(503);
    expect(refused.body).toMatchObject({ code: "SHUTTING_DOWN" });
    // Other methods on /readyz are refused like any other request.
    await request(h.app).post("/readyz").send({}).expect(503);
  });

  test("503 not_ready when a tenant's default policy is missing", async () => {
    h = await makeHarness();
    const policies = h.services.policies;
    const get = policies.get.bind(policies);
    policies.get = (name) => (name === "default" ? undefined : get(name));
    const res = await request(h.app).get("/readyz").expect(503);
    expect(res.body.status).toBe("not_ready");
    expect(res.body.checks).toContainEqual({ name: "policies", ok: false, detail: "missing: default" });
  });
});

describe("createReadiness", () => {
  const tenants = tenantsFromText(
    `tenants:
  - id: acme
    keys: [{ name: app, sha256: ${hashKey("mg_key_acme_0123456789")}, scopes: [retrieve] }]
    policies: { allowed: ["*"], default: default }
    defaultBackend: zep
    backends:
      zep: { apiKeyEnv: ACME_ZEP_KEY }
      openmemory: { url: "http://openmemory.acme.test", userScoping: user_id }
`,
    "t.yaml",
    { ACME_ZEP_KEY: "zep-secret" },
  );
  const policies = (names: string[]): PolicyRegistry => ({
    get: (name) => (names.includes(name) ? ({} as ReturnType<PolicyRegistry["get"]>) : undefined),
    retired: () => undefined,
    list: () => ({
      policies: names.map((name) => ({
        name,
        file: `${name}.yaml`,
        version: 1,
        hash: "0".repeat(64),
        status: "active",
        loadedAt: "2026-01-01T00:00:00.000Z",
        lastError: null,
        rejectedChanges: 0,
      })),
      rejected: [],
    }),
    reload: async () => undefined,
    close: () => undefined,
  });
  const logger = createLogger(
    "silent",
    new Writable({
      write(_c, _e, cb) {
        cb();
      },
    }),
  );

  test("backends never used are neither built nor listed", async () => {
    const built: string[] = [];
    const make = (name: "zep" | "openmemory"): Backend => {
      built.push(name);
      return new FakeBackend(name);
    };
    const backends = new BackendProvider(
      {
        zep: () => make("zep"),
        openmemory: () => make("openmemory"),
        local: () => {
          throw new Error("no local store here");
        },
      },
      resilientBackends(DEFAULT_RESILIENCE, logger),
    );
    const readiness = createReadiness({ tenants, policies: policies(["default"]), backends });
    expect(await readiness()).toEqual([
      { name: "policies", ok: true, detail: "1 loaded" },
      { name: "backends", ok: true, detail: "0 of 0 circuits closed" },
    ]);
    expect(built).toEqual([]);
    const [acme] = tenants.tenants();
    if (acme === undefined) throw new Error("no tenant");
    await backends.get(acme, "zep");
    expect(await readiness()).toContainEqual({
      name: "backends",
      ok: true,
      detail: "1 of 1 circuits closed",
    });
    expect(built).toEqual(["zep"]);
  });

  test("extra checks (Redis) are reused for cacheMs; policies and circuits are read on every probe", async () => {
    let t = 0;
    let redisChecks = 0;
    const backends = new BackendProvider({
      zep: () => new FakeBackend("zep"),
      openmemory: () => new FakeBackend("openmemory"),
      local: () => new FakeBackend("local"),
    });
    let loaded = ["default"];
    const registry = policies(["default"]);
    registry.get = (name) => (loaded.includes(name) ? ({} as ReturnType<PolicyRegistry["get"]>) : undefined);
    const readiness = createReadiness({
      tenants,
      policies: registry,
      backends,
      cacheMs: 2000,
      now: () => t,
      extra: [
        async () => {
          redisChecks++;
          return { name: "redis", ok: true };
        },
      ],
    });
    await readiness();
    t = 1000;
    loaded = [];
    expect(await readiness()).toContainEqual({ name: "policies", ok: false, detail: "missing: default" });
    expect(redisChecks).toBe(1);
    t = 2500;
    await readiness();
    expect(redisChecks).toBe(2);
  });
});
