/**
 * The span tree and attributes of a retrieval: a success (one memgate.pipeline span, an event per stage), a cache
 * hit, MEMGATE_TRACE_STAGES=spans, each fallback code, and a caller's W3C trace continued through the gateway.
 */
import { SpanKind } from "@opentelemetry/api";
import type { ReadableSpan } from "@opentelemetry/sdk-trace-node";
import request from "supertest";
import type { Candidate } from "../../src/pipeline/types";
import { hashUser } from "../../src/telemetry/redact";
import { FakeBackend } from "../helpers/fake-backend";
import { type Harness, KEYS, makeHarness } from "../helpers/harness";
import { makeCandidate } from "../helpers/items";
import { childrenOf, eventNamed, installTelemetry, spanNamed, type TestTelemetry } from "./setup";

/**
 * A span time ([seconds, nanoseconds]) as one number: comparing the arrays themselves compares their texts
 * ("1764,99999999" > "1764,123456789"), which failed a run of this test.
 */
const nanos = ([seconds, ns]: readonly [number, number]): bigint =>
  BigInt(seconds) * BigInt(1e9) + BigInt(ns);

const body = (patch: Record<string, unknown> = {}) => ({
  userId: "u-123",
  sessionId: "s-9",
  query: "what do I usually order?",
  useMemory: true,
  ...patch,
});

const memories = [
  makeCandidate({ id: "f1", content: "Ana orders an oat milk flat white.", score: 0.92 }),
  makeCandidate({ id: "f2", content: "ana orders an oat milk flat white", score: 0.6 }),
  makeCandidate({ id: "m1", content: "Make it decaf today, please.", score: 0.55, type: "message" }),
  makeCandidate({ id: "low", content: "Unrelated note about parking.", score: 0.1 }),
];

const STAGES = ["score_threshold", "deduplication", "interleave", "clip", "token_budget"];

/** Every backend a fake this test controls, local included (the harness's local store cannot fail). */
function fakeFactories() {
  const fakes = {
    zep: new FakeBackend("zep"),
    openmemory: new FakeBackend("openmemory"),
    local: new FakeBackend("local"),
  };
  for (const f of Object.values(fakes)) f.setUser("u-123", memories);
  const factories = { zep: () => fakes.zep, openmemory: () => fakes.openmemory, local: () => fakes.local };
  return { fakes, factories };
}

describe("retrieval spans", () => {
  let tel: TestTelemetry;
  let h: Harness;
  let fakes: ReturnType<typeof fakeFactories>["fakes"];

  beforeAll(() => {
    tel = installTelemetry();
  });
  afterAll(() => tel.close());
  beforeEach(async () => {
    const made = fakeFactories();
    fakes = made.fakes;
    h = await makeHarness({
      factories: made.factories,
      policies: {
        tight: "name: tight\nversion: 1\nrateLimit: { perUser: { points: 1, durationSeconds: 60 } }\n",
      },
    });
    tel.reset();
  });
  afterEach(() => h.close());

  const post = (payload: object, key: string = KEYS.acmeChat) =>
    request(h.app).post("/v1/retrieve").set("x-api-key", key).send(payload).expect(200);

  /** The spans of the trace that contains the last `memgate.retrieve` span. */
  function lastRetrieval(): { retrieve: ReadableSpan; trace: ReadableSpan[] } {
    const all = tel.spans();
    const retrieve = all.filter((s) => s.name === "memgate.retrieve").at(-1);
    if (retrieve === undefined) throw new Error(`no memgate.retrieve among ${all.map((s) => s.name)}`);
    const traceId = retrieve.spanContext().traceId;
    return { retrieve, trace: all.filter((s) => s.spanContext().traceId === traceId) };
  }

  test("a success: one trace, HTTP span → memgate.retrieve → backend, one memgate.pipeline span with an event per stage", async () => {
    const res = await post(body());
    const { retrieve, trace } = lastRetrieval();

    const server = trace.find((s) => s.kind === SpanKind.SERVER);
    expect(server).toBeDefined();
    expect(retrieve.parentSpanContext?.spanId).toBe(server?.spanContext().spanId);
    expect(childrenOf(trace, retrieve).map((s) => s.name)).toEqual([
      "memgate.backend.user_exists",
      "memgate.backend.search",
      "memgate.pipeline",
    ]);
    // The HTTP span, memgate.retrieve and its three children: no span per step or stage.
    expect(trace.map((s) => s.name).filter((n) => n.startsWith("memgate."))).toHaveLength(4);
    // Eligibility and the cache lookup are events of memgate.retrieve, with their facts and duration.
    expect(retrieve.events.map((e) => e.name)).toEqual(["memgate.eligibility", "memgate.cache.lookup"]);
    expect(eventNamed(retrieve, "memgate.cache.lookup").attributes).toMatchObject({
      "memgate.cache.result": "miss",
      "memgate.cache.purpose": "serve",
    });
    for (const e of retrieve.events)
      expect(e.attributes?.["memgate.duration_us"]).toEqual(expect.any(Number));

    const meta = res.body.metadata;
    expect(retrieve.attributes).toMatchObject({
      "memgate.policy.name": "default",
      "memgate.policy.version": 2,
      "memgate.policy.hash": meta.policy.hash,
      "memgate.backend": "zep",
      "memgate.tenant": "acme",
      "memgate.user.hash": hashUser("acme", "u-123"),
      "memgate.cache": "miss",
      "memgate.results.total": 4,
      "memgate.results.count": meta.includedResults,
      "memgate.tokens": meta.totalTokens,
      "memgate.query.chars": body().query.length,
    });
    expect(retrieve.attributes["memgate.fallback.code"]).toBeUndefined();
    expect(spanNamed(trace, "memgate.backend.search").attributes).toMatchObject({
      "memgate.backend": "zep",
      "memgate.results.count": 4,
    });

    const pipeline = spanNamed(trace, "memgate.pipeline");
    expect(pipeline.attributes).toMatchObject({
      "memgate.policy.name": "default",
      "memgate.pipeline.in": 4,
      "memgate.pipeline.out": meta.includedResults,
      "memgate.pipeline.stages": STAGES.length,
      "memgate.pipeline.expanded": false,
      "memgate.tokens": meta.totalTokens,
    });
    // One event per stage, named by the stage, in order; counts chain from the backend's 4 to the answer.
    expect(pipeline.events.map((e) => e.name)).toEqual(STAGES);
    let expectedIn = 4;
    for (const stage of pipeline.events) {
      expect(stage.attributes?.["memgate.stage.in"]).toBe(expectedIn);
      expectedIn = Number(stage.attributes?.["memgate.stage.out"]);
      expect(stage.attributes?.["memgate.duration_us"]).toEqual(expect.any(Number));
      expect(nanos(stage.time) >= nanos(pipeline.startTime)).toBe(true);
      expect(nanos(stage.time) <= nanos(pipeline.endTime)).toBe(true);
    }
    expect(expectedIn).toBe(meta.includedResults);
    // Dropped counts by reason: the low score, the near-duplicate.
    expect(eventNamed(pipeline, "score_threshold").attributes).toMatchObject({
      "memgate.stage.changes": 1,
      "memgate.stage.reason.below_min_score": 1,
    });
    expect(eventNamed(pipeline, "deduplication").attributes).toMatchObject({
      "memgate.stage.duplicates": 1,
      "memgate.stage.reason.duplicate_of": 1,
    });
  });

  test("a cache hit: memgate.retrieve with no child span; the lookup event says hit", async () => {
    await post(body());
    tel.reset();
    await post(body());
    const { retrieve, trace } = lastRetrieval();
    expect(retrieve.attributes["memgate.cache"]).toBe("hit");
    expect(eventNamed(retrieve, "memgate.cache.lookup").attributes?.["memgate.cache.result"]).toBe("hit");
    // The HTTP server span and memgate.retrieve, nothing else (the in-process cache is no separate operation).
    expect(trace.map((s) => s.name).sort()).toEqual(["POST /v1/retrieve", "memgate.retrieve"]);
  });

  test("MEMGATE_TRACE_STAGES=spans: eligibility, the lookup and every stage are child spans again", async () => {
    await h.close();
    const made = fakeFactories();
    fakes = made.fakes;
    h = await makeHarness({ factories: made.factories, env: { MEMGATE_TRACE_STAGES: "spans" } });
    tel.reset();
    try {
      const res = await post(body());
      const { retrieve, trace } = lastRetrieval();
      expect(childrenOf(trace, retrieve).map((s) => s.name)).toEqual([
        "memgate.eligibility",
        "memgate.cache.lookup",
        "memgate.backend.user_exists",
        "memgate.backend.search",
        "memgate.pipeline",
      ]);
      expect(retrieve.events).toEqual([]);
      expect(spanNamed(trace, "memgate.cache.lookup").attributes["memgate.cache.result"]).toBe("miss");
      const pipeline = spanNamed(trace, "memgate.pipeline");
      expect(pipeline.events).toEqual([]);
      const stages = childrenOf(trace, pipeline);
      expect(stages.map((s) => s.name)).toEqual(STAGES.map((s) => `memgate.stage.${s}`));
      let expectedIn = 4;
      for (const stage of stages) {
        expect(stage.attributes["memgate.stage.in"]).toBe(expectedIn);
        expectedIn = Number(stage.attributes["memgate.stage.out"]);
        // Each span converts its own clock reading to wall time (to the millisecond): compared with memgate.retrieve.
        expect(nanos(stage.startTime) >= nanos(retrieve.startTime)).toBe(true);
      }
      expect(expectedIn).toBe(res.body.metadata.includedResults);
      expect(spanNamed(trace, "memgate.stage.deduplication").attributes).toMatchObject({
        "memgate.stage.duplicates": 1,
        "memgate.stage.reason.duplicate_of": 1,
      });
    } finally {
      await h.close();
      h = await makeHarness({ factories: fakeFactories().factories });
    }
  });

  const unavailable = (b: FakeBackend) => b.fail("unavailable", { status: 503 });
  const cases: Array<{
    code: string;
    action: string;
    payload?: Record<string, unknown>;
    key?: string;
    arrange?: (f: typeof fakes, post: (p: object) => Promise<unknown>) => unknown;
    failing?: { span: string; kind: string; status?: number };
    decidedIn?: string;
  }> = [
    {
      code: "MEMORY_DISABLED",
      action: "skip",
      payload: { useMemory: false },
      decidedIn: "memgate.eligibility",
    },
    {
      code: "SESSION_INVALID",
      action: "skip",
      payload: { sessionId: "bad id" },
      decidedIn: "memgate.eligibility",
    },
    { code: "INVALID_QUERY", action: "skip", payload: { query: "   " }, decidedIn: "memgate.eligibility" },
    {
      code: "INVALID_QUERY",
      action: "skip",
      arrange: (f) => f.zep.fail("invalid_query", { status: 400 }),
      failing: { span: "memgate.backend.user_exists", kind: "invalid_query", status: 400 },
    },
    { code: "COLLECTION_NOT_FOUND", action: "empty", payload: { userId: "nobody" } },
    {
      code: "RATE_LIMITED",
      action: "cache",
      payload: { policy: "tight" },
      arrange: (_f, post) => post(body({ policy: "tight" })),
      decidedIn: "memgate.eligibility",
    },
    {
      code: "RATE_LIMITED",
      action: "skip",
      arrange: (f) => f.zep.fail("rate_limited", { status: 429, retryAfterMs: 5_000 }),
      failing: { span: "memgate.backend.user_exists", kind: "rate_limited", status: 429 },
    },
    {
      code: "ZEP_UNAVAILABLE",
      action: "skip",
      arrange: (f) => unavailable(f.zep),
      failing: { span: "memgate.backend.user_exists", kind: "unavailable", status: 503 },
    },
    {
      code: "OPENMEMORY_UNAVAILABLE",
      action: "skip",
      payload: { backend: "openmemory" },
      arrange: (f) => unavailable(f.openmemory),
      failing: { span: "memgate.backend.user_exists", kind: "unavailable", status: 503 },
    },
    {
      code: "LOCAL_UNAVAILABLE",
      action: "skip",
      key: KEYS.globex,
      arrange: (f) => unavailable(f.local),
      failing: { span: "memgate.backend.user_exists", kind: "unavailable", status: 503 },
    },
    {
      code: "POLICY_FAILED",
      action: "skip",
      arrange: (f) => f.zep.setUser("u-123", [{ id: "broken", content: null } as unknown as Candidate]),
    },
  ];

  for (const c of cases) {
    const how = c.failing ? ` (${c.failing.kind} from the backend)` : c.decidedIn ? " (eligibility)" : "";
    test(`fallback ${c.code} → ${c.action}${how}: visible on the retrieve span`, async () => {
      const key = c.key ?? KEYS.acmeChat;
      await c.arrange?.(fakes, (p) => post(p, key));
      tel.reset();
      const res = await post(body(c.payload), key);
      expect(res.body.metadata.fallback).toMatchObject({ code: c.code, action: c.action });
      const { retrieve, trace } = lastRetrieval();
      expect(retrieve.attributes).toMatchObject({
        "memgate.fallback.code": c.code,
        "memgate.fallback.action": c.action,
        "memgate.policy.name": res.body.metadata.policy.name,
        "memgate.backend": res.body.metadata.backend,
        "memgate.cache": res.body.metadata.cache,
      });
      const eligibility = eventNamed(retrieve, "memgate.eligibility");
      if (c.decidedIn) {
        expect(eligibility.attributes?.["memgate.fallback.code"]).toBe(c.code);
        expect(trace.some((s) => s.name.startsWith("memgate.backend."))).toBe(false);
      } else {
        expect(eligibility.attributes?.["memgate.fallback.code"]).toBeUndefined();
      }
      if (c.failing) {
        const failed = spanNamed(trace, c.failing.span);
        expect(failed.status.code).toBe(2); // SpanStatusCode.ERROR
        expect(failed.attributes["memgate.backend.error.kind"]).toBe(c.failing.kind);
        expect(failed.attributes["memgate.backend.status"]).toBe(c.failing.status);
        expect(failed.parentSpanContext?.spanId).toBe(retrieve.spanContext().spanId);
      }
      if (c.action === "cache") {
        const lookups = retrieve.events.filter((e) => e.name === "memgate.cache.lookup");
        expect(lookups.map((e) => e.attributes?.["memgate.cache.purpose"])).toContain("fallback");
      }
      if (c.code === "POLICY_FAILED") {
        // The pipeline threw: its span failed, the retrieval answered with the fallback.
        const pipeline = spanNamed(trace, "memgate.pipeline");
        expect(pipeline.status.code).toBe(2);
        expect(pipeline.parentSpanContext?.spanId).toBe(retrieve.spanContext().spanId);
      }
      // A declared fallback is an answer, not an error of the retrieval.
      expect(retrieve.status.code).toBe(0);
    });
  }

  test("a backend call stuck past the policy timeout ends as unavailable (timeout) in its span", async () => {
    await h.close();
    const made = fakeFactories();
    fakes = made.fakes;
    h = await makeHarness({
      factories: made.factories,
      policies: { slow: "name: slow\nversion: 1\ntimeouts: { backendMs: 50 }\n" },
    });
    fakes.zep.script = { kind: "delay", ms: 2_000 };
    tel.reset();
    const res = await post(body({ policy: "slow" }));
    expect(res.body.metadata.fallback.code).toBe("ZEP_UNAVAILABLE");
    const search = spanNamed(lastRetrieval().trace, "memgate.backend.search");
    expect(search.attributes["memgate.backend.error.kind"]).toBe("unavailable");
  });

  test("the caller's traceparent is continued: the retrieve span is in the caller's trace", async () => {
    const traceId = "4bf92f3577b34da6a3ce929d0e0e4736";
    const parentId = "00f067aa0ba902b7";
    await request(h.app)
      .post("/v1/retrieve")
      .set("x-api-key", KEYS.acmeChat)
      .set("traceparent", `00-${traceId}-${parentId}-01`)
      .send(body())
      .expect(200);
    const { retrieve, trace } = lastRetrieval();
    expect(retrieve.spanContext().traceId).toBe(traceId);
    const server = trace.find((s) => s.kind === SpanKind.SERVER);
    expect(server?.parentSpanContext?.spanId).toBe(parentId);
    expect(retrieve.parentSpanContext?.spanId).toBe(server?.spanContext().spanId);
  });

  test("the HTTP span is named by its matched route, refused or not; an unmatched path names no route", async () => {
    await post(body());
    await request(h.app).post("/v1/retrieve").set("x-api-key", "mg_wrong").send(body()).expect(401);
    await request(h.app).post("/v1/nowhere/u-123").set("x-api-key", KEYS.acmeChat).send(body()).expect(404);
    const servers = tel.spans().filter((s) => s.kind === SpanKind.SERVER);
    expect(
      servers.map((s) => [s.name, s.attributes["http.route"], s.attributes["http.response.status_code"]]),
    ).toEqual([
      ["POST /v1/retrieve", "/v1/retrieve", 200],
      ["POST /v1/retrieve", "/v1/retrieve", 401],
      ["POST", undefined, 404],
    ]);
    // The same route is the `http_route` label of the instrumentation's request-duration histogram.
    const text = (await request(h.app).get("/metrics").expect(200)).text;
    const routes = [...text.matchAll(/^http_server_request_duration_seconds_count\{[^}]*\}/gm)].map(
      (m) => /http_route="([^"]*)"/.exec(m[0])?.[1] ?? "(none)",
    );
    expect(routes.sort()).toEqual(["(none)", "/v1/retrieve", "/v1/retrieve"]);
  });

  test("an HttpProblem (the caller's fault) marks the span with its code, not as a span error", async () => {
    await request(h.app)
      .post("/v1/retrieve")
      .set("x-api-key", KEYS.acmeChat)
      .send(body({ policy: "nope" }))
      .expect(400);
    const { retrieve } = lastRetrieval();
    expect(retrieve.attributes["memgate.error.code"]).toBe("VALIDATION_FAILED");
    expect(retrieve.status.code).toBe(0);
  });

  test("an adapter throwing a non-BackendError is an `error` outcome on the backend span", async () => {
    fakes.zep.script = { kind: "throw", error: new TypeError("boom") };
    const res = await post(body());
    expect(res.body.metadata.fallback.code).toBe("ZEP_UNAVAILABLE");
    const span = spanNamed(lastRetrieval().trace, "memgate.backend.user_exists");
    expect(span.attributes["memgate.backend.error.kind"]).toBe("error");
    expect(span.status.code).toBe(2);
  });
});
