/**
 * The expansion round with the missing words (policy `sufficiency.expandWith`) through POST /v1/retrieve (dev mode,
 * the real local store): the second search goes through the core's own search with the question's missing words,
 * finds a memory the first did not, and `metadata.sufficiency.expansion` and the explain trace say what it
 * searched for; no second search once half the backend deadline is spent. The same through the Zep and
 * OpenMemory backends (fake upstreams): the core's search with the other query, not a door's native call.
 */
import request from "supertest";
import type { Backend, SearchRequest } from "../../src/backends/types";
import { BACKEND_FACTORIES } from "../../src/server/services";
import { METRICS } from "../../src/telemetry/catalogue";
import { hashKey } from "../../src/tenants/keys";
import { EXPANSION_QUERY as QUERY, EXPANSION_RECORDS as records } from "../helpers/expansion-conversation";
import { FakeUpstreams } from "../helpers/fake-upstreams";
import { type Harness, makeHarness } from "../helpers/harness";
import { points, total } from "../telemetry/points";
import { installTelemetry, type TestTelemetry } from "../telemetry/setup";

const policy = (name: string, extra = "", backendMs = 10_000) => `name: ${name}
version: 1
retrieval: { topK: 2, overfetch: 1, clipSentences: 2, maxTokens: 300, minScore: 0 }
ranking: { enabled: true }
budget: { fill: true, maxMemories: 5 }
sufficiency: { enabled: true, expand: true, threshold: 0.99${extra} }
timeouts: { backendMs: ${backendMs} }
`;

async function retrieve(h: Harness, body: Record<string, unknown>) {
  const res = await request(h.app)
    .post("/v1/retrieve")
    .send({ userId: "maya", sessionId: "s-1", useMemory: true, query: QUERY, ...body });
  expect(res.status).toBe(200);
  return res.body;
}

async function localBackend(h: Harness): Promise<Backend> {
  const tenant = h.services.tenants.tenants()[0] ?? ({} as never);
  const backend = await h.services.backends.get(tenant, "local");
  if (backend === undefined) throw new Error("no local backend");
  return backend;
}

describe("POST /v1/retrieve: the expansion round with the missing words", () => {
  let h: Harness;
  beforeEach(async () => {
    h = await makeHarness({
      tenants: null,
      localRecords: records,
      policies: {
        more: policy("more"),
        missing: policy("missing", ", expandWith: missing"),
        both: policy("both", ", expandWith: both"),
        hurried: policy("hurried", ", expandWith: missing", 1000),
      },
    });
  });
  afterEach(() => h.close());

  test("the first search does not find the Lisbon turn; the missing-words search does, and it is kept", async () => {
    const backend = await localBackend(h);
    const search = jest.spyOn(backend, "search");
    const body = await retrieve(h, { policy: "missing" });
    expect(search).toHaveBeenCalledTimes(2);
    const [first, second] = search.mock.calls.map((c) => c[0] as SearchRequest);
    expect(first?.query).toBe(QUERY);
    expect(first?.limit).toBe(2);
    // The second search carries the words no kept memory held, for as many candidates as the first.
    expect(second?.query).toBe("Lisbon");
    expect(second?.limit).toBe(2);
    expect(second?.userId).toBe("maya");
    const firstResult = (await search.mock.results[0]?.value) as Array<{ id: string }> | undefined;
    expect(firstResult?.map((c) => c.id)).not.toContain("t3");
    expect(body.memories.map((m: { id: string }) => m.id)).toContain("t3");
    expect(body.metadata.sufficiency).toMatchObject({
      expanded: true,
      expansion: { with: "missing", query: "Lisbon", limit: 2, added: 1, kept: true },
    });
    expect(body.metadata.sufficiency.missing).not.toContain("Lisbon");
  });

  test("explain: the fetch stage says what the expansion searched for", async () => {
    const body = await retrieve(h, { policy: "missing", explain: true });
    const fetch = body.trace.find((t: { stage: string }) => t.stage === "fetch");
    expect(fetch.detail).toMatchObject({ expandedWith: "missing", searched: "Lisbon", added: 1, asked: 2 });
  });

  test("more (unset expandWith): the question again with more candidates, reported the same way", async () => {
    const backend = await localBackend(h);
    const search = jest.spyOn(backend, "search");
    const body = await retrieve(h, { policy: "more" });
    expect(search.mock.calls.map((c) => [c[0].query, c[0].limit])).toEqual([
      [QUERY, 2],
      [QUERY, 4],
    ]);
    expect(body.metadata.sufficiency.expansion).toMatchObject({ with: "more", query: QUERY, limit: 4 });
  });

  test("both: the missing words for expandFactor × the candidates", async () => {
    const backend = await localBackend(h);
    const search = jest.spyOn(backend, "search");
    await retrieve(h, { policy: "both" });
    expect(search.mock.calls.map((c) => [c[0].query, c[0].limit])).toEqual([
      [QUERY, 2],
      ["Lisbon", 4],
    ]);
  });

  test("the deadline rule: no second search once half the backend deadline is spent", async () => {
    const backend = await localBackend(h);
    const real = backend.search.bind(backend);
    const search = jest.spyOn(backend, "search").mockImplementation(async (req) => {
      // 600 ms of the policy's 1,000: less than half is left.
      await new Promise((resolve) => setTimeout(resolve, 600));
      return real(req);
    });
    const body = await retrieve(h, { policy: "hurried" });
    expect(search).toHaveBeenCalledTimes(1);
    expect(body.metadata.sufficiency.expanded).toBe(false);
    expect(body.metadata.sufficiency).not.toHaveProperty("expansion");
    expect(body.metadata.sufficiency.missing).toContain("Lisbon");
  });
});

describe("POST /v1/retrieve: the missing-words search on the Zep and OpenMemory backends", () => {
  const KEY = "mg_test_expand_app_0123456789";
  let upstream: FakeUpstreams;
  let h: Harness;
  beforeEach(async () => {
    upstream = await FakeUpstreams.start();
    upstream.seed("maya", [
      // Only a search for the missing word finds it, first (the upstream ranks it low for the question).
      {
        id: "f3",
        content: "Maya's cousin Inès lives in Lisbon now.",
        at: "2024-04-02T09:00:00Z",
        onlyFor: "Lisbon",
      },
      { id: "f1", content: "Tom cooked a huge paella for the neighbours.", at: "2024-03-09T18:00:00Z" },
      { id: "f2", content: "The neighbours loved the paella Tom cooked twice.", at: "2024-03-10T18:00:00Z" },
    ]);
    h = await makeHarness({
      policies: { missing: policy("missing", ", expandWith: missing") },
      factories: BACKEND_FACTORIES,
      tenants: `tenants:
  - id: t
    keys:
      - { name: app, sha256: ${hashKey(KEY)}, scopes: [retrieve] }
    policies: { allowed: ["*"], default: missing }
    defaultBackend: zep
    backends:
      zep: { apiKeyEnv: T_ZEP_KEY, baseUrl: "${upstream.zepBaseUrl}" }
      openmemory: { url: "${upstream.origin}", apiKeyEnv: T_OM_KEY, userScoping: user_id }
`,
      env: { T_ZEP_KEY: "zep-tenant-key", T_OM_KEY: "om-tenant-key", MEMGATE_RETRY_MAX: "0" },
    });
  });
  afterEach(async () => {
    await h.close();
    await upstream.close();
  });

  test.each(["zep", "openmemory"] as const)(
    "%s: the second search carries the missing words and finds f3",
    async (backend) => {
      const res = await request(h.app)
        .post("/v1/retrieve")
        .set("x-api-key", KEY)
        .send({ userId: "maya", sessionId: "s-1", useMemory: true, query: QUERY, backend });
      expect(res.status).toBe(200);
      const queries = upstream.queries[backend];
      expect(queries[0]).toBe(QUERY);
      // The first search (Zep: one call per scope) carries the question, the second one the missing word.
      const second = queries.indexOf("Lisbon");
      expect(second).toBeGreaterThan(0);
      expect(queries.slice(0, second).every((q) => q === QUERY)).toBe(true);
      expect(queries.slice(second).every((q) => q === "Lisbon")).toBe(true);
      expect(res.body.memories.map((m: { id: string }) => m.id)).toContain("f3");
      expect(res.body.metadata.sufficiency.expansion).toMatchObject({
        with: "missing",
        query: "Lisbon",
        kept: true,
      });
    },
  );
});

describe("the expansion round's spans", () => {
  let tel: TestTelemetry;
  let h: Harness;
  beforeAll(() => {
    tel = installTelemetry();
  });
  afterAll(() => tel.close());
  beforeEach(async () => {
    h = await makeHarness({
      tenants: null,
      localRecords: records,
      policies: { missing: policy("missing", ", expandWith: missing") },
    });
    tel.reset();
  });
  afterEach(() => h.close());

  test("a second backend search, then a second memgate.pipeline span saying what it searched with", async () => {
    await retrieve(h, { policy: "missing" });
    const names = tel.spans().map((s) => s.name);
    expect(names.filter((n) => n === "memgate.backend.search")).toHaveLength(2);
    const pipelines = tel.spans().filter((s) => s.name === "memgate.pipeline");
    expect(pipelines.map((s) => s.attributes["memgate.pipeline.expanded"])).toEqual([false, true]);
    expect(pipelines[0]?.attributes).not.toHaveProperty(["memgate.pipeline.expanded_with"]);
    expect(pipelines[1]?.attributes["memgate.pipeline.expanded_with"]).toBe("missing");
    // The query's words are never span attributes (they are only in explain).
    expect(JSON.stringify(tel.spans().map((s) => s.attributes))).not.toMatch(/Lisbon/);
  });

  test("the sufficiency metric says what the round searched with (with: missing), beside the verdict", async () => {
    const name = METRICS.sufficiency.otel;
    const before = await tel.metrics();
    const body = await retrieve(h, { policy: "missing" });
    const after = await tel.metrics();
    const { verdict } = body.metadata.sufficiency;
    const delta = (match: Record<string, string>) => total(after, name, match) - total(before, name, match);
    expect(delta({ verdict, expanded: "true", with: "missing" })).toBe(1);
    expect(delta({})).toBe(1);
    // Every series starts at 0, a round that ran and was not kept included (expanded false, with its search).
    const series = points(after, name).map((p) => `${p.attributes.expanded}/${p.attributes.with}`);
    expect(new Set(series)).toEqual(
      new Set(["false/none", "false/more", "false/missing", "true/more", "true/missing"]),
    );
  });
});
