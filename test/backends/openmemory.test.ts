import { createOpenMemoryBackend, type OpenMemoryBackendConfig } from "../../src/backends/openmemory";
import { normalizeZScore } from "../../src/backends/openmemory/map";
import { type Backend, BackendError } from "../../src/backends/types";
import { policySchema } from "../../src/policy/schema";
import { CONTRACT_MEMORIES, CONTRACT_USER, type ContractUpstream, runBackendContract } from "./contract";
import { FakeOpenMemoryServer, tenantOf } from "./fakes/openmemory-server";

const TIMEOUT_MS = 300;
const KEY = "om-secret-key-0123";
const keyFor = (userId: string) => `om-key-for-${userId}`;
const policy = policySchema.parse({ name: "om-test", version: 1 });

function backendFor(fake: FakeOpenMemoryServer, cfg: Partial<OpenMemoryBackendConfig> = {}): Backend {
  return createOpenMemoryBackend({ baseUrl: fake.baseUrl, apiKey: KEY, userScoping: "user_id", ...cfg });
}

function asFake(u: ContractUpstream): FakeOpenMemoryServer {
  if (u instanceof FakeOpenMemoryServer) return u;
  if (u instanceof TenantUpstream) return u.fake;
  throw new Error("unexpected upstream");
}

/** The api_key style: each user's memories live in the tenant of that user's key. */
class TenantUpstream implements ContractUpstream {
  constructor(readonly fake: FakeOpenMemoryServer) {}
  seed: ContractUpstream["seed"] = (userId, memories) => this.fake.seed(tenantOf(keyFor(userId)), memories);
  fail: ContractUpstream["fail"] = (fault) => this.fake.fail(fault);
  reset = () => this.fake.reset();
  close = () => this.fake.close();
}

const faults = ["server_error", "rate_limited", "slow", "network", "bad_request"] as const;

runBackendContract({
  name: "openmemory (user_id scoping)",
  makeUpstream: () => FakeOpenMemoryServer.start({ apiKeys: [KEY], slowMs: TIMEOUT_MS + 1200 }),
  makeBackend: async (u) => backendFor(asFake(u)),
  faults,
  hasUserRegistry: false,
  timeoutMs: TIMEOUT_MS,
});

runBackendContract({
  name: "openmemory (api_key scoping, tenant check on)",
  makeUpstream: async () => {
    const apiKeys = [keyFor(CONTRACT_USER), keyFor("nobody-here")];
    return new TenantUpstream(await FakeOpenMemoryServer.start({ apiKeys, tenantCheck: true, slowMs: 1500 }));
  },
  makeBackend: async (u) =>
    backendFor(asFake(u), {
      apiKey: undefined,
      userScoping: "api_key",
      apiKeyForUser: keyFor,
      authStyle: "bearer",
    }),
  faults,
  hasUserRegistry: false,
  timeoutMs: TIMEOUT_MS,
});

describe("openmemory adapter", () => {
  let fake: FakeOpenMemoryServer;

  beforeEach(async () => {
    fake = await FakeOpenMemoryServer.start({ apiKeys: [KEY] });
    await fake.seed(CONTRACT_USER, CONTRACT_MEMORIES);
  });
  afterEach(() => fake.close());

  const search = (backend: Backend, limit = 16, userId = CONTRACT_USER, signal = AbortSignal.timeout(2000)) =>
    backend.search({ userId, query: "coffee order", limit, searchType: "hybrid", policy, signal });

  async function searchError(backend: Backend, limit = 16): Promise<BackendError> {
    const err = await search(backend, limit).then(
      () => new Error("search unexpectedly succeeded"),
      (e: unknown) => e,
    );
    if (!(err instanceof BackendError)) throw err;
    expect(err.backend).toBe("openmemory");
    expect(err.message).not.toContain(KEY);
    expect(err.message).not.toContain("coffee");
    return err;
  }

  const matches = (...ms: { id: string; score: number; sector?: string; seen?: number }[]) => ({
    status: 200,
    body: {
      query: "coffee order",
      matches: ms.map((m) => ({
        id: m.id,
        content: `memory ${m.id}`,
        score: m.score,
        sectors: [m.sector ?? "semantic"],
        primary_sector: m.sector ?? "semantic",
        path: [m.id],
        salience: 0.5,
        last_seen_at: m.seen ?? 1_772_355_600_000,
      })),
    },
  });

  test("user_id style sends user_id in body and filters, with x-api-key", async () => {
    await search(backendFor(fake), 16);
    expect(fake.requests).toHaveLength(1);
    const [req] = fake.requests;
    expect(req?.method).toBe("POST");
    expect(req?.path).toBe("/memory/query");
    expect(req?.headers["x-api-key"]).toBe(KEY);
    expect(req?.headers.authorization).toBeUndefined();
    expect(req?.headers["content-type"]).toBe("application/json");
    expect(req?.body).toEqual({
      query: "coffee order",
      k: 16,
      user_id: CONTRACT_USER,
      filters: { user_id: CONTRACT_USER },
    });
  });

  test("bearer auth style sends Authorization: Bearer and no x-api-key", async () => {
    await search(backendFor(fake, { authStyle: "bearer" }));
    expect(fake.requests[0]?.headers.authorization).toBe(`Bearer ${KEY}`);
    expect(fake.requests[0]?.headers["x-api-key"]).toBeUndefined();
  });

  test("api_key style sends no user_id and uses the user's own key (tenant check on)", async () => {
    await fake.close();
    fake = await FakeOpenMemoryServer.start({ apiKeys: [keyFor(CONTRACT_USER)], tenantCheck: true });
    await fake.seed(tenantOf(keyFor(CONTRACT_USER)), CONTRACT_MEMORIES);
    const other = { id: "other", content: "coffee order elsewhere", type: "fact" as const };
    await fake.seed("someone-else", [{ ...other, timestamp: "2026-03-01T09:00:00.000Z", sessionId: "s-9" }]);
    const backend = backendFor(fake, { userScoping: "api_key", apiKeyForUser: keyFor });
    const results = await search(backend);
    expect(results.map((c) => c.id).sort()).toEqual(["m1", "m2", "m3"]);
    expect(fake.requests[0]?.body).toEqual({ query: "coffee order", k: 16, filters: {} });
    expect(fake.requests[0]?.headers["x-api-key"]).toBe(keyFor(CONTRACT_USER));
  });

  test("api_key style: a user without a key is not_found, with no request", async () => {
    const backend = backendFor(fake, { userScoping: "api_key", apiKeyForUser: () => undefined });
    await expect(search(backend)).rejects.toMatchObject({ kind: "not_found" });
    expect(fake.requests).toHaveLength(0);
  });

  test("api_key style without a per-user resolver uses the shared key", async () => {
    await search(backendFor(fake, { userScoping: "api_key" }));
    expect(fake.requests[0]?.headers["x-api-key"]).toBe(KEY);
    expect(fake.requests[0]?.body).toEqual({ query: "coffee order", k: 16, filters: {} });
  });

  test("user_id style against a tenant-checking server: 403 tenant_mismatch → unavailable", async () => {
    fake.tenantCheck = true;
    const err = await searchError(backendFor(fake));
    expect(err).toMatchObject({ kind: "unavailable", status: 403, retryable: true });
    expect(err.message).toContain("tenant_mismatch");
  });

  test("401 (no key) and 403 invalid_api_key → unavailable", async () => {
    expect(await searchError(backendFor(fake, { apiKey: undefined }))).toMatchObject({
      kind: "unavailable",
      status: 401,
    });
    const err = await searchError(backendFor(fake, { apiKey: "wrong-key" }));
    expect(err).toMatchObject({ kind: "unavailable", status: 403 });
    expect(err.message).not.toContain("wrong-key");
  });

  test("z-scores (negative, zero, above 1) normalize monotonically into [0,1]; ties by id", async () => {
    fake.respondWith(
      matches(
        { id: "neg", score: -1.9 },
        { id: "zero-b", score: 0 },
        { id: "big", score: 2.5 },
        { id: "zero-a", score: 0 },
      ),
    );
    const results = await search(backendFor(fake));
    expect(results.map((c) => c.id)).toEqual(["big", "zero-a", "zero-b", "neg"]);
    expect(results.map((c) => c.score)).toEqual([normalizeZScore(2.5), 0.5, 0.5, normalizeZScore(-1.9)]);
    for (const c of results) expect(c.score).toBeGreaterThanOrEqual(0);
    expect(results[0]?.score).toBeLessThan(1);
    expect(results[3]?.score).toBeGreaterThan(0);
  });

  test("normalization: 0.5 at z=0, minScore 0.3 ≈ z −0.5, strictly increasing and unsaturated for |z| ≤ 15", () => {
    expect(normalizeZScore(0)).toBe(0.5);
    expect(normalizeZScore(-0.4978)).toBeCloseTo(0.3, 3);
    expect(normalizeZScore(1)).toBeCloseTo(0.846, 3);
    let prev = -1;
    for (let z = -15; z <= 15; z += 0.01) {
      const s = normalizeZScore(z);
      expect(s).toBeGreaterThan(prev);
      expect(s).toBeLessThan(1);
      prev = s;
    }
  });

  test("a single match (z = 0 from the server) scores 0.5", async () => {
    fake.setRelevance("m2", 0);
    fake.setRelevance("m3", 0);
    const results = await search(backendFor(fake));
    expect(results).toHaveLength(1);
    expect(results[0]).toMatchObject({ id: "m1", score: 0.5 });
  });

  test("maps fields: ISO timestamp of last_seen_at, type and sessionId from the sector", async () => {
    const seen = Date.UTC(2026, 2, 3, 7, 45);
    fake.respondWith(
      matches(
        { id: "e", score: 1, sector: "episodic", seen },
        { id: "p", score: 0.5, sector: "procedural" },
        { id: "r", score: 0, sector: "reflective" },
        { id: "x", score: -1, sector: "mystery" },
      ),
    );
    const results = await search(backendFor(fake));
    expect(results[0]).toEqual({
      id: "e",
      content: "memory e",
      score: normalizeZScore(1),
      timestamp: "2026-03-03T07:45:00.000Z",
      sessionId: "openmemory:episodic",
      type: "message",
      backend: "openmemory",
      sourceId: "e",
      backendScore: 1,
    });
    expect(results.map((c) => c.type)).toEqual(["message", "fact", "summary", "fact"]);
    expect(results[3]?.sessionId).toBe("openmemory:mystery");
  });

  test("k is capped at 200 and the output at limit", async () => {
    await search(backendFor(fake), 500);
    expect(fake.requests[0]?.body).toMatchObject({ k: 200 });
    fake.respondWith(matches(...Array.from({ length: 6 }, (_, i) => ({ id: `id${i}`, score: 1 - i / 2 }))));
    const results = await search(backendFor(fake), 4);
    expect(results.map((c) => c.id)).toEqual(["id0", "id1", "id2", "id3"]);
  });

  test("overload 500 (query_failed: active queries) → rate_limited, retry after 1 s, not retryable", async () => {
    fake.fail("overload");
    const err = await searchError(backendFor(fake));
    expect(err).toMatchObject({ kind: "rate_limited", status: 500, retryAfterMs: 1000, retryable: false });
  });

  test("429 takes retry_after from the body, else the Retry-After header", async () => {
    fake.fail("rate_limited", 1);
    expect(await searchError(backendFor(fake))).toMatchObject({ kind: "rate_limited", retryAfterMs: 60_000 });
    fake.respondWith({
      status: 429,
      body: { error: "rate_limit_exceeded" },
      headers: { "Retry-After": "7" },
    });
    expect(await searchError(backendFor(fake))).toMatchObject({ kind: "rate_limited", retryAfterMs: 7000 });
  });

  test("404 {err: nf} → not_found; 404 unknown route (wrong base URL) → unavailable", async () => {
    fake.respondWith({ status: 404, body: { err: "nf" } });
    expect(await searchError(backendFor(fake))).toMatchObject({ kind: "not_found", status: 404 });
    const wrongBase = createOpenMemoryBackend({
      baseUrl: `${fake.baseUrl}/api/`,
      apiKey: KEY,
      userScoping: "user_id",
    });
    expect(await searchError(wrongBase)).toMatchObject({ kind: "unavailable", status: 404 });
  });

  test("400 from the server and over-long queries → invalid_query", async () => {
    fake.respondWith({ status: 400, body: { error: "invalid_input", details: ["query: length < 1"] } });
    expect(await searchError(backendFor(fake))).toMatchObject({ kind: "invalid_query", status: 400 });
    const long = backendFor(fake).search({
      userId: CONTRACT_USER,
      query: "x".repeat(8193),
      limit: 4,
      searchType: "hybrid",
      policy,
      signal: AbortSignal.timeout(1000),
    });
    await expect(long).rejects.toMatchObject({ kind: "invalid_query" });
    expect(fake.requests).toHaveLength(1);
  });

  test.each([
    ["non-JSON text", "<html>proxy error</html>"],
    ["JSON without matches", { items: [] }],
    [
      "a match with a string score",
      { matches: [{ id: "a", content: "coffee", score: "0.9", last_seen_at: 1 }] },
    ],
    ["a match without last_seen_at", { matches: [{ id: "a", content: "coffee", score: 0.9 }] }],
  ])("a malformed 200 body (%s) → unavailable", async (_name, body) => {
    fake.respondWith({ status: 200, body });
    expect(await searchError(backendFor(fake))).toMatchObject({ kind: "unavailable", status: 200 });
  });

  test("a caller abort and a closed server → unavailable", async () => {
    const ctl = new AbortController();
    ctl.abort();
    const aborted = await search(backendFor(fake), 16, CONTRACT_USER, ctl.signal).catch((e: unknown) => e);
    expect(aborted).toBeInstanceOf(BackendError);
    expect(aborted).toMatchObject({ kind: "unavailable", message: "OpenMemory query aborted" });
    const backend = backendFor(fake);
    await fake.close();
    await expect(backend.ping({ signal: AbortSignal.timeout(1000) })).rejects.toMatchObject({
      kind: "unavailable",
    });
    fake = await FakeOpenMemoryServer.start();
  });

  test("ping calls GET /health; userExists is true without a request", async () => {
    const backend = backendFor(fake);
    await expect(backend.userExists("anyone", { signal: AbortSignal.timeout(1000) })).resolves.toBe(true);
    expect(fake.requests).toHaveLength(0);
    await backend.ping({ signal: AbortSignal.timeout(1000) });
    expect(fake.requests.map((r) => `${r.method} ${r.path}`)).toEqual(["GET /health"]);
    fake.respondWith({ status: 200, body: "OK" });
    await expect(backend.ping({ signal: AbortSignal.timeout(1000) })).rejects.toMatchObject({
      kind: "unavailable",
    });
  });
});

describe("fake OpenMemory server speaks the reference wire format", () => {
  let fake: FakeOpenMemoryServer;
  beforeEach(async () => {
    fake = await FakeOpenMemoryServer.start({ apiKeys: [KEY] });
  });
  afterEach(() => fake.close());

  async function call(method: string, path: string, body?: unknown, key: string | null = KEY) {
    const headers: Record<string, string> = { "content-type": "application/json" };
    if (key !== null) headers["x-api-key"] = key;
    const payload = body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body);
    const res = await fetch(`${fake.baseUrl}${path}`, { method, headers, body: payload });
    const text = await res.text();
    let json: unknown = text;
    try {
      json = JSON.parse(text);
    } catch {
      // text body
    }
    return { status: res.status, body: json };
  }

  test("auth, validation and unknown routes", async () => {
    expect(await call("GET", "/health", undefined, null)).toMatchObject({
      status: 200,
      body: { ok: true },
    });
    expect(await call("POST", "/memory/query", { query: "x" }, null)).toEqual({
      status: 401,
      body: { error: "authentication_required", message: "API key required" },
    });
    expect(await call("POST", "/memory/query", { query: "x" }, "nope")).toEqual({
      status: 403,
      body: { error: "invalid_api_key" },
    });
    expect(await call("POST", "/memory/query", { query: "", k: 500 })).toEqual({
      status: 400,
      body: { error: "invalid_input", details: ["query: length < 1", "k: expected integer 1–200"] },
    });
    expect(await call("POST", "/memory/query", "{not json")).toEqual({
      status: 400,
      body: { error: "invalid_json" },
    });
    expect(await call("GET", "/nowhere")).toEqual({ status: 404, body: "404: Not Found" });
    expect(await call("GET", "/memory/missing")).toEqual({ status: 404, body: { err: "nf" } });
  });

  test("add, dedup, list, get, query (z-scores, no tags/metadata), delete", async () => {
    const added = await call("POST", "/memory/add", {
      content: "Ana likes oat milk",
      tags: ["t"],
      user_id: "ana",
    });
    expect(added).toMatchObject({ status: 200, body: { primary_sector: "semantic", chunks: 1 } });
    const id = (added.body as { id: string }).id;
    const again = await call("POST", "/memory/add", { content: "ana likes  OAT milk", user_id: "ana" });
    expect(again.body).toMatchObject({ id, deduplicated: true });
    await call("POST", "/memory/add", { content: "Ana likes oat tea", user_id: "ana" });
    expect(await call("GET", "/users/ana/memories")).toMatchObject({
      body: { user_id: "ana", items: [{}, {}] },
    });
    expect((await call("GET", "/memory/all?l=1")).body).toMatchObject({ items: [{ user_id: "ana" }] });
    expect((await call("GET", `/memory/${id}`)).body).toMatchObject({
      id,
      tags: ["t"],
      sectors: ["semantic"],
    });
    const q = await call("POST", "/memory/query", { query: "oat milk", k: 5, filters: { user_id: "ana" } });
    const ms = (q.body as { matches: Record<string, unknown>[] }).matches;
    expect(ms.map((m) => m.score)).toEqual([1, -1]);
    expect(Object.keys(ms[0] ?? {}).sort()).toEqual(
      ["content", "id", "last_seen_at", "path", "primary_sector", "salience", "score", "sectors"].sort(),
    );
    expect(await call("DELETE", `/memory/${id}`)).toEqual({ status: 200, body: { ok: true } });
    expect(fake.requests.map((r) => r.method)).toContain("DELETE");
  });

  test("tenant check: the key's tenant owns writes; a differing user_id is refused", async () => {
    fake.tenantCheck = true;
    const tenant = tenantOf(KEY);
    expect(tenant).toMatch(/^[0-9a-f]{16}$/);
    await call("POST", "/memory/add", { content: "tenant memory" });
    expect(fake.memories()[0]?.user_id).toBe(tenant);
    expect(await call("POST", "/memory/query", { query: "tenant", user_id: "ana" })).toMatchObject({
      status: 403,
      body: { error: "tenant_mismatch" },
    });
    expect(await call("GET", `/users/${tenant}/memories`)).toMatchObject({ status: 200 });
    expect(await call("GET", "/users/ana/memories")).toMatchObject({ status: 403 });
  });
});
