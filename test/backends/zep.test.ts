import { brotliCompressSync, deflateSync, gzipSync } from "node:zlib";
import { type Backend, BackendError, type BackendErrorKind } from "../../src/backends/types";
import { createZepBackend } from "../../src/backends/zep";
import { parseRetryAfterMs } from "../../src/backends/zep/errors";
import { type PolicyInput, policySchema } from "../../src/policy/schema";
import { CONTRACT_MEMORIES, runBackendContract } from "./contract";
import { createZepFakeServer, ZEP_FAKE_API_KEY, ZepFakeServer, zepWire } from "./fakes/zep-server";

const TIMEOUT_MS = 300;
const JSON_HEADERS = { "Content-Type": "application/json" };
const QUERY = "what does Ana drink";
const USER = "ana.lopez";

/** The Zep the tests below script route by route (the contract suite starts its own). */
let upstream: ZepFakeServer;
beforeAll(async () => {
  upstream = await createZepFakeServer();
});
afterEach(() => upstream.clearRoutes());
afterAll(async () => {
  await shared?.close?.();
  await upstream.close();
});

runBackendContract({
  name: "zep",
  makeUpstream: () => createZepFakeServer({ slowMs: TIMEOUT_MS + 2000 }),
  makeBackend: async (fake) => {
    if (!(fake instanceof ZepFakeServer)) throw new Error("expected the Zep fake server");
    return createZepBackend({ apiKey: fake.apiKey, baseUrl: fake.baseUrl });
  },
  faults: ["server_error", "rate_limited", "slow", "network", "bad_request"],
  hasUserRegistry: true,
  timeoutMs: TIMEOUT_MS,
});

/** One instance for the tests below, as a tenant has in the gateway (its connection pool stays warm between tests). */
let shared: Backend | undefined;
const newBackend = () => createZepBackend({ apiKey: ZEP_FAKE_API_KEY, baseUrl: upstream.baseUrl });
const backend = () => {
  shared ??= newBackend();
  return shared;
};
const policy = (zep: PolicyInput["zep"]) => policySchema.parse({ name: "t", version: 1, zep });
const signal = () => AbortSignal.timeout(TIMEOUT_MS);
const search = (zep: PolicyInput["zep"], limit = 10) =>
  backend().search({
    userId: USER,
    query: QUERY,
    limit,
    searchType: "hybrid",
    policy: policy(zep),
    signal: signal(),
  });

/** A search answer per scope, counted, so tests can prove there was exactly one call per scope. */
function answerSearch(byScope: Record<string, unknown>): { calls: () => number } {
  return upstream.route("POST", "/graph/search", ({ body }) => {
    const scope = (body as { scope: string }).scope;
    return [200, JSON.stringify(byScope[scope] ?? {}), JSON_HEADERS];
  });
}

/** Every call to `path` answers this; counts the calls. */
function failing(
  method: "get" | "post",
  path: string,
  status: number,
  body: string,
  headers: Record<string, string> = JSON_HEADERS,
) {
  return upstream.route(method === "get" ? "GET" : "POST", path, () => [status, body, headers]);
}

async function expectBackendError(p: Promise<unknown>, kind: BackendErrorKind): Promise<BackendError> {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(BackendError);
  const be = err as BackendError;
  expect(be.kind).toBe(kind);
  expect(be.backend).toBe("zep");
  for (const secret of [ZEP_FAKE_API_KEY, QUERY, "Ana", "FREE plan"])
    expect(be.message).not.toContain(secret);
  expect(JSON.stringify(be.cause)).not.toContain(ZEP_FAKE_API_KEY);
  return be;
}

const ALL_SCOPES = ["edges", "episodes", "nodes", "thread_summaries"] as const;

describe("zep adapter: what is sent to Zep", () => {
  async function sentBodies(zep: PolicyInput["zep"], limit: number) {
    const fake = await createZepFakeServer();
    await fake.seed(USER, CONTRACT_MEMORIES);
    const b = createZepBackend({ apiKey: fake.apiKey, baseUrl: fake.baseUrl });
    await b.search({
      userId: USER,
      query: QUERY,
      limit,
      searchType: "hybrid",
      policy: policy(zep),
      signal: signal(),
    });
    await fake.close();
    return fake.requestsTo("/graph/search");
  }

  test("one graph.search per scope: user_id, query, limit capped at 50, scope, reranker, Api-Key", async () => {
    const sent = await sentBodies({ scopes: [...ALL_SCOPES], reranker: "rrf" }, 80);
    expect(sent.map((r) => (r.body as { scope: string }).scope).sort()).toEqual([...ALL_SCOPES].sort());
    for (const r of sent) {
      expect(r.method).toBe("POST");
      expect(r.body).toEqual({
        user_id: USER,
        query: QUERY,
        limit: 50,
        scope: expect.any(String),
        reranker: "rrf",
      });
      expect(r.headers.authorization).toBe(`Api-Key ${ZEP_FAKE_API_KEY}`);
      expect(r.headers["content-type"]).toBe("application/json");
    }
  });

  test("a scope listed twice is searched once; mmr also sends mmr_lambda", async () => {
    const sent = await sentBodies({ scopes: ["edges", "edges"], reranker: "mmr" }, 5);
    expect(sent.map((r) => r.body)).toEqual([
      { user_id: USER, query: QUERY, limit: 5, scope: "edges", reranker: "mmr", mmr_lambda: 0.5 },
    ]);
  });

  test("a limit below 1 sends nothing", async () => {
    const zep = answerSearch({});
    await expect(search({ scopes: ["edges"], reranker: "rrf" }, 0)).resolves.toEqual([]);
    expect(zep.calls()).toBe(0);
  });
});

describe("zep adapter: mapping", () => {
  const T1 = "2026-03-01T09:00:00Z";
  const T2 = "2026-03-02T08:30:00.123456Z";
  const ISO1 = "2026-03-01T09:00:00.000Z";
  const ISO2 = "2026-03-02T08:30:00.123Z";
  const answers = {
    edges: {
      edges: [
        zepWire.edge("e1", "Ana drinks oat flat whites", {
          created_at: T1,
          valid_at: T2,
          episodes: ["x", "ep1"],
          score: 0.9,
        }),
        zepWire.edge("e2", "Ana lives in Lisbon", {
          created_at: T1,
          valid_at: "0001-01-01T00:00:00Z",
          score: 0.6,
        }),
        zepWire.edge("e3", "   ", { score: 0.5 }),
      ],
    },
    episodes: {
      episodes: [
        zepWire.episode("ep1", "I'll have the usual", {
          created_at: T1,
          role_type: "user",
          role: "Ana",
          thread_id: "t-7",
          score: 0.8,
        }),
        zepWire.episode("ep2", "Noted!", {
          created_at: T2,
          role_type: "norole",
          role: "Barista",
          score: 0.4,
        }),
      ],
    },
    nodes: {
      nodes: [zepWire.node("n1", "Ana is a coffee lover", { created_at: T1, episodes: ["ep1"], score: 0.7 })],
    },
    thread_summaries: {
      thread_summaries: [
        zepWire.threadSummary("s1", "Ordering coffee", {
          created_at: T1,
          last_summarized_at: T2,
          score: 0.3,
        }),
      ],
    },
  };
  const c = (
    id: string,
    type: string,
    content: string,
    score: number,
    timestamp: string,
    sessionId: string,
  ) => ({
    id,
    sourceId: id,
    backend: "zep",
    type,
    content,
    score,
    timestamp,
    sessionId,
    // cross_encoder: Zep's relevance is the score, and it is carried as sent.
    backendScore: score,
  });

  test("each scope becomes its type, with timestamps, roles and sessionIds as documented", async () => {
    answerSearch(answers);
    const got = await search({ scopes: [...ALL_SCOPES], reranker: "cross_encoder" });
    const u = `user:${USER}`;
    expect(got).toEqual([
      // A fact's `valid_at` is also its validity's start (`validAt`).
      { ...c("e1", "fact", "Ana drinks oat flat whites", 0.9, ISO2, "t-7"), validAt: ISO2 },
      { ...c("ep1", "message", "I'll have the usual", 0.8, ISO1, "t-7"), messageId: "ep1", role: "user" },
      c("n1", "summary", "Ana is a coffee lover", 0.7, ISO1, "t-7"),
      c("e2", "fact", "Ana lives in Lisbon", 0.6, ISO1, u),
      { ...c("ep2", "message", "Noted!", 0.4, ISO2, u), messageId: "ep2" },
      c("s1", "summary", "Ordering coffee", 0.3, ISO2, u),
    ]);
  });

  test("without the episodes scope a fact's thread is unknown: user:<userId>", async () => {
    answerSearch(answers);
    const [fact] = await search({ scopes: ["edges"], reranker: "cross_encoder" });
    expect(fact).toMatchObject({ id: "e1", sessionId: `user:${USER}` });
  });

  test.each([
    ["an item without uuid", { edges: [{ fact: "no uuid", created_at: T1 }] }],
    ["an item without a valid timestamp", { edges: [zepWire.edge("e9", "x", { created_at: "yesterday" })] }],
    ["a scope list that is not a list", { edges: { uuid: "e9" } }],
  ])("a 200 answer with %s is reported unavailable", async (_what, answer) => {
    answerSearch({ edges: answer });
    const be = await expectBackendError(search({ scopes: ["edges"], reranker: "rrf" }), "unavailable");
    expect(be.message).toBe("Zep graph.search failed: malformed response");
  });
});

describe("zep adapter: score normalization", () => {
  const edges = (...items: Array<[string, Record<string, unknown>]>) => ({
    edges: items.map(([id, extra]) => zepWire.edge(id, `fact ${id}`, extra)),
  });
  const scores = (got: Array<{ id: string; score: number }>) => got.map((x) => [x.id, x.score]);

  test("cross_encoder keeps the sigmoid score (or relevance), clamped to [0,1]", async () => {
    answerSearch({
      edges: edges(
        ["a", { score: 1.2 }],
        ["b", { score: 0.42, relevance: 0.9 }],
        ["c", { relevance: 0.2 }],
        ["d", { score: -0.1 }],
      ),
    });
    const got = await search({ scopes: ["edges"], reranker: "cross_encoder" });
    expect(scores(got)).toEqual([
      ["a", 1],
      ["b", 0.42],
      ["c", 0.2],
      ["d", 0],
    ]);
  });

  test("rrf reads Zep's RRF values (raw / (raw + 1)); scopes interleave by that score, ties by id", async () => {
    answerSearch({
      edges: edges(["z", { score: 2 }], ["y", { score: 1.5 }], ["x", { score: 0.25 }]),
      episodes: {
        episodes: [zepWire.episode("b", "m b", { score: 1 }), zepWire.episode("a", "m a", { score: 0.5 })],
      },
    });
    const got = await search({ scopes: ["edges", "episodes"], reranker: "rrf" }, 10);
    expect(scores(got)).toEqual([
      ["z", 2 / 3],
      ["y", 0.6],
      ["b", 0.5],
      ["a", 1 / 3],
      ["x", 0.2],
    ]);
    expect(got.map((c) => c.backendScore)).toEqual([2, 1.5, 1, 0.5, 0.25]);
  });

  test("rrf values that do not look like Zep's RRF (first below 1, or rising) are scored by rank, 1 / (rank + 2)", async () => {
    answerSearch({
      edges: edges(["z", { score: 0.0164 }], ["y", { score: 0.0161 }], ["x", { score: 0.0159 }]),
      episodes: {
        episodes: [zepWire.episode("b", "m b", { score: 3 }), zepWire.episode("a", "m a", { score: 7 })],
      },
    });
    const got = await search({ scopes: ["edges", "episodes"], reranker: "rrf" }, 10);
    expect(scores(got)).toEqual([
      ["b", 0.5],
      ["z", 0.5],
      ["a", 1 / 3],
      ["y", 1 / 3],
      ["x", 0.25],
    ]);
  });

  test("cross_encoder falls back to rank scores for a scope with a missing score; output is cut to limit", async () => {
    answerSearch({ edges: edges(["a", { score: 0.2 }], ["b", {}], ["c", { score: 0.9 }]) });
    const got = await search({ scopes: ["edges"], reranker: "cross_encoder" }, 2);
    expect(scores(got)).toEqual([
      ["a", 0.5],
      ["b", 1 / 3],
    ]);
    expect(got.map((c) => c.backendScore)).toEqual([0.2, undefined]);
  });

  test("a cross_encoder answer out of order keeps Zep's order: a score never exceeds the one above it", async () => {
    answerSearch({ edges: edges(["a", { score: 0.4 }], ["b", { score: 0.7 }], ["c", { score: 0.1 }]) });
    const got = await search({ scopes: ["edges"], reranker: "cross_encoder" });
    expect(scores(got)).toEqual([
      ["a", 0.4],
      ["b", 0.4],
      ["c", 0.1],
    ]);
  });
});

describe("zep adapter: errors", () => {
  const rrf: PolicyInput["zep"] = { scopes: ["edges", "episodes"], reranker: "rrf" };

  test("userExists: a 404 user is false, a 500 is unavailable; no retry", async () => {
    const missing = failing("get", "/users/nobody", 404, JSON.stringify({ message: "user not found" }));
    await expect(backend().userExists("nobody", { signal: signal() })).resolves.toBe(false);
    expect(missing.calls()).toBe(1);
    const broken = failing("get", `/users/${USER}`, 500, JSON.stringify({ message: "boom" }));
    const be = await expectBackendError(backend().userExists(USER, { signal: signal() }), "unavailable");
    expect(be.status).toBe(500);
    expect(broken.calls()).toBe(1);
  });

  test("a text/plain 429 with retry-after: 60 is rate_limited with retryAfterMs 60000, not retried", async () => {
    const zep = failing("post", "/graph/search", 429, "Rate limit exceeded for FREE plan", {
      "Content-Type": "text/plain",
      "retry-after": "60",
      "x-ratelimit-limit": "5",
      "x-ratelimit-remaining": "0",
    });
    // One scope: with two, the first 429 aborts its sibling, which may or may not have reached the fake yet.
    const be = await expectBackendError(search({ scopes: ["edges"], reranker: "rrf" }), "rate_limited");
    expect(be.retryAfterMs).toBe(60_000);
    expect(be.retryable).toBe(false);
    expect(zep.calls()).toBe(1);
  });

  test("a 429 with only x-ratelimit-reset (epoch seconds) gives the time left", async () => {
    const reset = String(Math.floor(Date.now() / 1000) + 30);
    failing("post", "/graph/search", 429, "Rate limit exceeded for FREE plan", {
      "Content-Type": "text/plain",
      "x-ratelimit-reset": reset,
    });
    const be = await expectBackendError(search(rrf), "rate_limited");
    expect(be.retryAfterMs).toBeGreaterThan(25_000);
    expect(be.retryAfterMs).toBeLessThanOrEqual(30_000);
  });

  test("retry-after as an HTTP date, delta x-ratelimit-reset, and none", () => {
    const now = Date.parse("2026-03-01T09:00:00Z");
    const h = (o: Record<string, string>) => new Headers(o);
    expect(parseRetryAfterMs(h({ "retry-after": "Sun, 01 Mar 2026 09:00:42 GMT" }), now)).toBe(42_000);
    expect(parseRetryAfterMs(h({ "retry-after": "Sun, 01 Mar 2026 08:00:00 GMT" }), now)).toBe(0);
    expect(parseRetryAfterMs(h({ "x-ratelimit-reset": "12" }), now)).toBe(12_000);
    expect(parseRetryAfterMs(h({ "x-ratelimit-reset": String(now + 5000) }), now)).toBe(5000);
    expect(parseRetryAfterMs(h({}), now)).toBeUndefined();
  });

  test.each([
    [500, "unavailable"],
    [503, "unavailable"],
    [400, "invalid_query"],
    [401, "unavailable"],
    [403, "unavailable"],
    [404, "not_found"],
  ] as const)("search: HTTP %i is %s, one call per scope", async (status, kind) => {
    const zep = failing("post", "/graph/search", status, JSON.stringify({ message: `${QUERY} failed` }));
    const be = await expectBackendError(search(rrf), kind);
    expect(be.status).toBe(status);
    expect(be.message).toBe(`Zep graph.search failed: HTTP ${status}`);
    expect(zep.calls()).toBe(2);
  });

  test("an answer slower than the caller's deadline is unavailable at the deadline", async () => {
    const scope = upstream.route("POST", "/graph/search", () => [200, "{}", JSON_HEADERS], {
      delayMs: TIMEOUT_MS + 2000,
      once: true,
    });
    const started = Date.now();
    const be = await expectBackendError(search({ scopes: ["edges"], reranker: "rrf" }), "unavailable");
    expect(Date.now() - started).toBeLessThan(TIMEOUT_MS + 500);
    expect(be.message).toBe("Zep graph.search failed: aborted");
    expect(scope.calls()).toBe(1);
  });

  test("the SDK's own timeout (safety net) is unavailable too", async () => {
    upstream.route("POST", "/graph/search", () => [200, "{}", JSON_HEADERS], { delayMs: 1500, once: true });
    const b = createZepBackend({
      apiKey: ZEP_FAKE_API_KEY,
      baseUrl: upstream.baseUrl,
      timeoutInSeconds: 0.2,
    });
    const p = policy({ scopes: ["edges"], reranker: "rrf" });
    const req = {
      userId: USER,
      query: QUERY,
      limit: 5,
      searchType: "hybrid" as const,
      policy: p,
      signal: AbortSignal.timeout(5000),
    };
    const be = await expectBackendError(b.search(req), "unavailable");
    expect(be.message).toBe("Zep graph.search failed: timeout");
  });

  test("a network error is unavailable; an already-aborted signal sends nothing", async () => {
    const scope = upstream.route("POST", "/graph/search", () => "hang-up", { once: true });
    const be = await expectBackendError(search({ scopes: ["edges"], reranker: "rrf" }), "unavailable");
    expect(be.message).toBe("Zep graph.search failed: network error");
    expect(scope.calls()).toBe(1);
    const zep = answerSearch({});
    const p = policy({ scopes: ["edges"], reranker: "rrf" });
    const req = {
      userId: USER,
      query: QUERY,
      limit: 5,
      searchType: "hybrid" as const,
      policy: p,
      signal: AbortSignal.abort(),
    };
    await expectBackendError(backend().search(req), "unavailable");
    expect(zep.calls()).toBe(0);
  });

  test("close() ends the instance's own connection pool: later calls are unavailable and send nothing", async () => {
    const zep = answerSearch({});
    const b = newBackend();
    const req = {
      userId: USER,
      query: QUERY,
      limit: 5,
      searchType: "hybrid" as const,
      policy: policy({ scopes: ["edges"], reranker: "rrf" }),
    };
    await b.search({ ...req, signal: signal() });
    expect(zep.calls()).toBe(1);
    await b.close?.();
    await expectBackendError(b.search({ ...req, signal: signal() }), "unavailable");
    expect(zep.calls()).toBe(1);
    // Another instance has its own pool: closing one does not close the others.
    const other = newBackend();
    await other.search({ ...req, signal: signal() });
    expect(zep.calls()).toBe(2);
    await other.close?.();
  });

  test("a failed call leaves no timer armed (the 30 s safety net does not hold the process open)", async () => {
    const armed = () => process.getActiveResourcesInfo().filter((r) => r === "Timeout").length;
    upstream.route("POST", "/graph/search", () => "hang-up", { once: true });
    const p = policy({ scopes: ["edges"], reranker: "rrf" });
    const before = armed();
    const req = { userId: USER, query: QUERY, limit: 5, searchType: "hybrid" as const, policy: p };
    await expectBackendError(
      backend().search({ ...req, signal: new AbortController().signal }),
      "unavailable",
    );
    expect(armed()).toBeLessThanOrEqual(before);
  });

  test("a compressed answer (gzip, deflate, br) is decoded, as fetch did; the request says it accepts them", async () => {
    const edge = zepWire.edge("e1", "Ana drinks oat flat whites", { score: 0.9 });
    const text = JSON.stringify({ edges: [edge] });
    for (const [encoding, compress] of [
      ["gzip", gzipSync],
      ["deflate", deflateSync],
      ["br", brotliCompressSync],
    ] as const) {
      const sent = upstream.route(
        "POST",
        "/graph/search",
        () => [200, compress(Buffer.from(text)), { ...JSON_HEADERS, "Content-Encoding": encoding }],
        { match: (req) => req.headers["accept-encoding"] === "gzip, deflate, br", once: true },
      );
      const got = await search({ scopes: ["edges"], reranker: "cross_encoder" });
      expect(sent.calls()).toBe(1);
      expect(got.map((m) => [m.id, m.content])).toEqual([["e1", "Ana drinks oat flat whites"]]);
    }
    // A body that does not decode is no answer: unavailable.
    upstream.route(
      "POST",
      "/graph/search",
      () => [200, "not gzip", { ...JSON_HEADERS, "Content-Encoding": "gzip" }],
      {
        once: true,
      },
    );
    await expectBackendError(search({ scopes: ["edges"], reranker: "cross_encoder" }), "unavailable");
  });

  test("one failing scope fails the whole search", async () => {
    const scopeIs = (scope: string) => (req: { body: unknown }) =>
      (req.body as { scope: string }).scope === scope;
    upstream.route("POST", "/graph/search", () => [200, JSON.stringify({ edges: [] }), JSON_HEADERS], {
      match: scopeIs("edges"),
    });
    upstream.route("POST", "/graph/search", () => [500, JSON.stringify({ message: "boom" }), JSON_HEADERS], {
      match: scopeIs("episodes"),
    });
    await expectBackendError(search(rrf), "unavailable");
  });

  test("ping calls GET /projects/info; a 401 is unavailable", async () => {
    const ok = upstream.route(
      "GET",
      "/projects/info",
      () => [200, JSON.stringify({ project: { uuid: "p" } }), JSON_HEADERS],
      {
        match: (req) => req.headers.authorization === `Api-Key ${ZEP_FAKE_API_KEY}`,
        once: true,
      },
    );
    await expect(backend().ping({ signal: signal() })).resolves.toBeUndefined();
    expect(ok.calls()).toBe(1);
    const denied = failing("get", "/projects/info", 401, JSON.stringify({ message: "unauthorized" }));
    const be = await expectBackendError(backend().ping({ signal: signal() }), "unavailable");
    expect(be.status).toBe(401);
    expect(denied.calls()).toBe(1);
  });

  test("a bad config is refused at construction", () => {
    expect(() => createZepBackend({ apiKey: "k", baseUrl: "https://api.getzep.com" })).toThrow("/api/v2");
    expect(() => createZepBackend({ apiKey: " ", baseUrl: upstream.baseUrl })).toThrow("apiKey");
  });
});
