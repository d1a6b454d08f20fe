/**
 * memgate's own CLIENT span for every upstream call (src/telemetry/http-client.ts, made in src/backends/upstream.ts
 * `callUpstream`; issue 29 round 8: the OpenTelemetry undici instrumentation is no longer installed), through real
 * requests to the gateway on the Zep backend against the fake Zep: the span's semantic-convention attributes (URLs
 * as templates, no key), its place in the trace, the `traceparent` the fake received (one, naming it), an error
 * status on a failed call, and the `http.client.request.duration` metric.
 */
import { SpanKind, SpanStatusCode } from "@opentelemetry/api";
import type { ReadableSpan } from "@opentelemetry/sdk-trace-node";
import request from "supertest";
import { BACKEND_FACTORIES } from "../../src/server/services";
import { hashKey } from "../../src/tenants/keys";
import { createZepFakeServer, ZEP_FAKE_API_KEY, type ZepFakeServer } from "../backends/fakes/zep-server";
import { type Harness, makeHarness } from "../helpers/harness";
import { attributeTexts, installTelemetry, spanNamed, type TestTelemetry } from "./setup";

const KEY = "mg_test_client_span_0123456789";
const TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736";
const CALLER_SPAN = "00f067aa0ba902b7";
const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-01$/;

describe("memgate's own client span for each upstream call (Zep, through the gateway)", () => {
  let tel: TestTelemetry;
  let zep: ZepFakeServer;
  let h: Harness;
  let port: number;

  beforeAll(() => {
    tel = installTelemetry();
  });
  afterAll(() => tel.close());
  beforeEach(async () => {
    zep = await createZepFakeServer();
    port = Number(new URL(zep.baseUrl).port);
    await zep.seed("ana", [
      {
        id: "e1",
        content: "Ana takes her coffee as an oat milk flat white.",
        type: "fact",
        timestamp: "2026-03-01T09:00:00.000Z",
        sessionId: "s-1",
      },
      {
        id: "q1",
        content: "Tom: Which coffee do you drink in the morning?",
        type: "message",
        role: "assistant",
        timestamp: "2026-03-01T09:00:00.000Z",
        sessionId: "thread-ana-7",
      },
      {
        id: "a1",
        content: "Ana: A flat white, always.",
        type: "message",
        role: "user",
        timestamp: "2026-03-01T09:01:00.000Z",
        sessionId: "thread-ana-7",
      },
    ]);
    h = await makeHarness({
      factories: BACKEND_FACTORIES,
      env: { T_ZEP_KEY: ZEP_FAKE_API_KEY },
      policies: {
        open: "name: open\nversion: 1\nretrieval: { minScore: 0, replies: true }\nzep: { scopes: [edges, episodes] }\n",
      },
      tenants: `tenants:
  - id: t
    keys:
      - { name: app, sha256: ${hashKey(KEY)}, scopes: [retrieve] }
    policies: { allowed: ["*"], default: open }
    defaultBackend: zep
    backends:
      zep: { apiKeyEnv: T_ZEP_KEY, baseUrl: "${zep.baseUrl}" }
`,
    });
    tel.reset();
  });
  afterEach(async () => {
    await h.close();
    await zep.close();
  });

  const retrieve = () =>
    request(h.app)
      .post("/v1/retrieve")
      .set("x-api-key", KEY)
      .set("traceparent", `00-${TRACE_ID}-${CALLER_SPAN}-01`)
      .send({ userId: "ana", sessionId: "s-9", query: "coffee", useMemory: true })
      .expect(200);

  /** The client span a request the fake received names in its (one) traceparent. */
  function clientSpanOf(headers: Record<string, string>): ReadableSpan {
    const match = TRACEPARENT.exec(headers.traceparent ?? "");
    expect(match?.[1]).toBe(TRACE_ID);
    const span = tel.spans().find((s) => s.spanContext().spanId === match?.[2]);
    if (span === undefined) throw new Error(`no span ${match?.[2]} for traceparent ${headers.traceparent}`);
    // memgate's own span (the undici instrumentation's scope was "@opentelemetry/instrumentation-undici").
    expect(span.instrumentationScope.name).toBe("memgate");
    return span;
  }

  test("every Zep call has memgate's CLIENT span: conventions' attributes, under the backend span, named by the traceparent Zep received", async () => {
    const res = await retrieve();
    expect(res.body.metadata.fallback).toBeNull();
    const spans = tel.spans().filter((s) => s.spanContext().traceId === TRACE_ID);
    const search = spanNamed(spans, "memgate.backend.search");
    const retrieveSpan = spanNamed(spans, "memgate.retrieve");
    const byId = new Map(spans.map((s) => [s.spanContext().spanId, s]));
    const underRetrieve = (s: ReadableSpan): boolean => {
      for (let p = s.parentSpanContext?.spanId; p !== undefined; p = byId.get(p)?.parentSpanContext?.spanId)
        if (p === retrieveSpan.spanContext().spanId) return true;
      return false;
    };

    const searches = zep.requestsTo("/graph/search");
    expect(searches.length).toBe(2); // edges and episodes
    const thread = zep.requests.filter((r) => r.path.startsWith("/threads/thread-ana-7"));
    expect(thread.length).toBeGreaterThan(0); // the reply thread read (retrieval.replies)
    const users = zep.requestsTo("/users/ana");
    expect(users.length).toBe(1); // the existence check, through the Zep SDK

    for (const sent of [...searches, ...thread, ...users]) {
      const client = clientSpanOf(sent.headers);
      expect(client.kind).toBe(SpanKind.CLIENT);
      expect(client.name).toBe(sent.method);
      expect(underRetrieve(client)).toBe(true);
      expect(client.status.code).toBe(SpanStatusCode.UNSET);
      expect(client.attributes).toMatchObject({
        "http.request.method": sent.method,
        "server.address": "127.0.0.1",
        "server.port": port,
        "url.scheme": "http",
        "http.response.status_code": 200,
        "user_agent.original": "memgate",
      });
      expect(client.attributes["error.type"]).toBeUndefined();
    }
    // One span per call: as many client spans in the trace as calls Zep received.
    expect(spans.filter((s) => s.kind === SpanKind.CLIENT).length).toBe(searches.length + thread.length + 1);
    for (const sent of searches) {
      const client = clientSpanOf(sent.headers);
      expect(client.parentSpanContext?.spanId).toBe(search.spanContext().spanId);
      expect(client.attributes["url.full"]).toBe(`${zep.baseUrl}/graph/search`);
      expect(client.attributes["url.path"]).toBe("/api/v2/graph/search");
    }
    // Ids in the path are templated and query values redacted; the tenant's key is nowhere.
    const threadSpan = clientSpanOf(thread[0]?.headers ?? {});
    expect(threadSpan.attributes["url.full"]).toBe(`${zep.baseUrl}/threads/{id}?lastn=REDACTED`);
    expect(threadSpan.attributes["url.path"]).toBe("/api/v2/threads/{id}");
    expect(threadSpan.attributes["url.query"]).toBe("lastn=REDACTED");
    const userSpan = clientSpanOf(users[0]?.headers ?? {});
    expect(userSpan.attributes["url.full"]).toBe(`${zep.baseUrl}/users/{id}`);
    expect(userSpan.parentSpanContext?.spanId).toBe(
      spanNamed(spans, "memgate.backend.user_exists").spanContext().spanId,
    );
    const texts = attributeTexts(tel.spans()).join("\n");
    expect(texts).not.toContain("ana");
    expect(texts).not.toContain("thread-ana-7");
    expect(texts).not.toContain(ZEP_FAKE_API_KEY);
  });

  test("the calls' durations are recorded as http.client.request.duration by method, server and status", async () => {
    await retrieve();
    const collected = await tel.metrics();
    const scope = collected.scopeMetrics.find((s) =>
      s.metrics.some((m) => m.descriptor.name === "http.client.request.duration"),
    );
    expect(scope?.scope.name).toBe("memgate"); // memgate's own histogram, one series per label set
    const metric = scope?.metrics.find((m) => m.descriptor.name === "http.client.request.duration");
    expect(metric?.descriptor.unit).toBe("s");
    const points = (metric?.dataPoints ?? []) as Array<{
      attributes: Record<string, unknown>;
      value: unknown;
    }>;
    const post = points.find(
      (p) =>
        p.attributes["http.request.method"] === "POST" &&
        p.attributes["server.port"] === port &&
        p.attributes["http.response.status_code"] === 200,
    );
    expect(post?.attributes).toEqual({
      "http.request.method": "POST",
      "server.address": "127.0.0.1",
      "server.port": port,
      "url.scheme": "http",
      "network.protocol.version": "1.1",
      "http.response.status_code": 200,
    });
    expect((post?.value as { count: number } | undefined)?.count).toBeGreaterThanOrEqual(2);
  });

  test("a Zep search answering 500: its client span has the status, error.type and status ERROR", async () => {
    zep.route("POST", "/graph/search", () => [
      500,
      '{"message":"boom"}',
      { "content-type": "application/json" },
    ]);
    const res = await retrieve();
    expect(res.body.metadata.fallback).not.toBeNull();
    const searches = zep.requestsTo("/graph/search");
    expect(searches.length).toBeGreaterThan(0);
    const clients = searches.map((sent) => clientSpanOf(sent.headers));
    // The first to fail cancels its sibling (a cancellation is not an error); at least one was answered 500.
    const answered = clients.filter((s) => s.attributes["http.response.status_code"] !== undefined);
    expect(answered.length).toBeGreaterThan(0);
    for (const client of clients) {
      expect(client.kind).toBe(SpanKind.CLIENT);
      if (answered.includes(client)) {
        expect(client.attributes["http.response.status_code"]).toBe(500);
        expect(client.attributes["error.type"]).toBe("500");
        expect(client.status.code).toBe(SpanStatusCode.ERROR);
      } else {
        expect(client.attributes["error.type"]).toBeUndefined();
        expect(client.status.code).toBe(SpanStatusCode.UNSET);
      }
    }
  });

  test("a Zep search whose connection drops without an answer: error.type, the exception, status ERROR", async () => {
    zep.route("POST", "/graph/search", () => "hang-up");
    const res = await retrieve();
    expect(res.body.metadata.fallback).not.toBeNull();
    const searches = zep.requestsTo("/graph/search");
    expect(searches.length).toBeGreaterThan(0);
    const failed = searches
      .map((sent) => clientSpanOf(sent.headers))
      .filter((s) => s.status.code === SpanStatusCode.ERROR);
    // The first to fail cancels its sibling (a cancellation is not an error); at least one failed on its own.
    expect(failed.length).toBeGreaterThan(0);
    for (const client of failed) {
      expect(client.attributes["http.response.status_code"]).toBeUndefined();
      expect(typeof client.attributes["error.type"]).toBe("string");
      expect(client.attributes["error.type"]).not.toBe("");
      expect(client.events.map((e) => e.name)).toContain("exception");
    }
  });
});
