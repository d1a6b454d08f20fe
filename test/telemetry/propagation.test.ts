/**
 * W3C context out to the backends: the real OpenMemory and Zep adapters against local fake servers (which
 * record request headers), with the production telemetry setup. The outbound call carries the caller's trace
 * (`traceparent` naming memgate's own client span under `memgate.backend.search`, src/telemetry/http-client.ts) and
 * baggage. The client span's attributes (URL templates, errors): ./client-span.test.ts.
 */
import { SpanKind } from "@opentelemetry/api";
import request from "supertest";
import { BACKEND_FACTORIES } from "../../src/server/services";
import { hashKey } from "../../src/tenants/keys";
import { FakeOpenMemoryServer } from "../backends/fakes/openmemory-server";
import { createZepFakeServer, ZEP_FAKE_API_KEY, type ZepFakeServer } from "../backends/fakes/zep-server";
import { type Harness, makeHarness } from "../helpers/harness";
import { installTelemetry, spanNamed, type TestTelemetry } from "./setup";

const KEY = "mg_test_propagation_0123456789";
const TRACE_ID = "0af7651916cd43dd8448eb211c80319c";
const CALLER_SPAN = "b7ad6b7169203331";

describe("trace context propagated to the backends", () => {
  let tel: TestTelemetry;
  let om: FakeOpenMemoryServer;
  let h: Harness;

  beforeAll(() => {
    tel = installTelemetry();
  });
  afterAll(() => tel.close());
  beforeEach(async () => {
    om = await FakeOpenMemoryServer.start({ apiKeys: ["om-key"] });
    await om.seed("ana", [
      {
        id: "m1",
        content: "Ana takes her coffee as an oat milk flat white.",
        type: "fact",
        timestamp: "2026-03-01T09:00:00.000Z",
        sessionId: "s-1",
      },
    ]);
    h = await makeHarness({
      factories: BACKEND_FACTORIES,
      env: { T_OM_KEY: "om-key" },
      policies: { open: "name: open\nversion: 1\nretrieval: { minScore: 0 }\n" },
      tenants: `tenants:
  - id: t
    keys:
      - { name: app, sha256: ${hashKey(KEY)}, scopes: [retrieve] }
    policies: { allowed: ["*"], default: open }
    defaultBackend: openmemory
    backends:
      openmemory: { url: "${om.baseUrl}", apiKeyEnv: T_OM_KEY, userScoping: user_id }
`,
    });
    tel.reset();
  });
  afterEach(async () => {
    await h.close();
    await om.close();
  });

  test("the OpenMemory query carries traceparent (caller's trace, the client span) and the caller's baggage", async () => {
    const res = await request(h.app)
      .post("/v1/retrieve")
      .set("x-api-key", KEY)
      .set("traceparent", `00-${TRACE_ID}-${CALLER_SPAN}-01`)
      .set("baggage", "deployment=canary")
      .send({ userId: "ana", sessionId: "s-9", query: "coffee", useMemory: true })
      .expect(200);
    expect(res.body.metadata.fallback).toBeNull();
    expect(res.body.memories.length).toBeGreaterThan(0);

    const query = om.requests.find((r) => r.path === "/memory/query");
    const header = query?.headers.traceparent ?? "";
    const [version, traceId, parentSpanId, flags] = header.split("-");
    expect(version).toBe("00");
    expect(traceId).toBe(TRACE_ID);
    expect(flags).toBe("01");
    expect(query?.headers.baggage).toContain("deployment=canary");

    const spans = tel.spans().filter((s) => s.spanContext().traceId === TRACE_ID);
    const client = spans.find((s) => s.spanContext().spanId === parentSpanId);
    expect(client?.kind).toBe(SpanKind.CLIENT);
    const search = spanNamed(spans, "memgate.backend.search");
    expect(client?.parentSpanContext?.spanId).toBe(search.spanContext().spanId);
    expect(search.parentSpanContext?.spanId).toBe(spanNamed(spans, "memgate.retrieve").spanContext().spanId);
    expect(client?.attributes["url.full"]).toBe(`${om.baseUrl}/memory/query`);
    expect(client?.attributes["http.response.status_code"]).toBe(200);
  });
});

describe("trace context propagated to Zep (graph.search over undici.request, user.get through the SDK's fetcher)", () => {
  let tel: TestTelemetry;
  let zep: ZepFakeServer;
  let h: Harness;

  beforeAll(() => {
    tel = installTelemetry();
  });
  afterAll(() => tel.close());
  beforeEach(async () => {
    zep = await createZepFakeServer();
    await zep.seed("ana", [
      {
        id: "e1",
        content: "Ana takes her coffee as an oat milk flat white.",
        type: "fact",
        timestamp: "2026-03-01T09:00:00.000Z",
        sessionId: "s-1",
      },
    ]);
    h = await makeHarness({
      factories: BACKEND_FACTORIES,
      env: { T_ZEP_KEY: ZEP_FAKE_API_KEY },
      policies: { open: "name: open\nversion: 1\nretrieval: { minScore: 0 }\n" },
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

  test("every Zep call carries traceparent (the caller's trace, its own client span) and the caller's baggage", async () => {
    const res = await request(h.app)
      .post("/v1/retrieve")
      .set("x-api-key", KEY)
      .set("traceparent", `00-${TRACE_ID}-${CALLER_SPAN}-01`)
      .set("baggage", "deployment=canary")
      .send({ userId: "ana", sessionId: "s-9", query: "coffee", useMemory: true })
      .expect(200);
    expect(res.body.metadata.fallback).toBeNull();
    expect(res.body.memories.length).toBeGreaterThan(0);

    const spans = tel.spans().filter((s) => s.spanContext().traceId === TRACE_ID);
    const searchSpan = spanNamed(spans, "memgate.backend.search");
    const searches = zep.requestsTo("/graph/search");
    expect(searches.length).toBeGreaterThan(0);
    for (const sent of [...searches, ...zep.requestsTo("/users/ana")]) {
      const [version, traceId, parentSpanId, flags] = (sent.headers.traceparent ?? "").split("-");
      expect([version, traceId, flags]).toEqual(["00", TRACE_ID, "01"]);
      expect(sent.headers.baggage).toContain("deployment=canary");
      const client = spans.find((s) => s.spanContext().spanId === parentSpanId);
      expect(client?.kind).toBe(SpanKind.CLIENT);
      expect(client?.attributes["http.response.status_code"]).toBe(200);
      if (sent.path === "/graph/search") {
        expect(client?.parentSpanContext?.spanId).toBe(searchSpan.spanContext().spanId);
        expect(client?.attributes["url.full"]).toBe(`${zep.baseUrl}/graph/search`);
      } else {
        expect(client?.attributes["url.full"]).toBe(`${zep.baseUrl}/users/{id}`);
      }
    }
  });
});
