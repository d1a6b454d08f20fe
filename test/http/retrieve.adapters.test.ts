/**
 * The same request through the real Zep adapter (upstream: a local fake server from the wire reference) and the real
 * OpenMemory adapter (upstream: a local fake server speaking its wire format) returns the shapes of docs/api.md#the-retrieval-response.
 */
import request from "supertest";
import { BACKEND_FACTORIES } from "../../src/server/services";
import { hashKey } from "../../src/tenants/keys";
import type { SeedMemory } from "../backends/contract";
import { FakeOpenMemoryServer } from "../backends/fakes/openmemory-server";
import { createZepFakeServer, ZEP_FAKE_API_KEY, type ZepFakeServer } from "../backends/fakes/zep-server";
import { type Harness, makeHarness } from "../helpers/harness";

const KEY = "mg_test_adapters_0123456789";
const seed: SeedMemory[] = [
  {
    id: "e1",
    content:
      "Ana pays for her coffee with card 4111 1111 1111 1111. She orders an oat milk flat white. Always extra hot.",
    type: "fact",
    timestamp: "2026-03-01T09:00:00.000Z",
    sessionId: "s-1",
  },
  {
    id: "e2",
    content:
      "ana pays for her coffee with card 4111 1111 1111 1111.  she orders an oat milk flat white. always extra hot",
    type: "fact",
    timestamp: "2026-03-02T09:00:00.000Z",
    sessionId: "s-1",
  },
  {
    id: "e3",
    content: "I'd like my usual coffee order, but decaf today.",
    type: "message",
    timestamp: "2026-03-05T08:30:00.000Z",
    sessionId: "s-2",
    role: "user",
  },
];

const body = (backend: "zep" | "openmemory") => ({
  userId: "ana",
  sessionId: "s-9",
  query: "coffee order",
  useMemory: true,
  backend,
  policy: "pii-open",
});

/** Redaction on, every score kept (OpenMemory's scores are relative to their own result set), tight budget. */
const PII_OPEN =
  "name: pii-open\nversion: 1\nretrieval: { minScore: 0, maxTokens: 100, clipSentences: 1 }\n" +
  "redaction: { enabled: true, detectors: [email, credit_card, phone] }\n";

describe("POST /v1/retrieve through the real adapters", () => {
  let h: Harness;
  let zep: ZepFakeServer;
  let om: FakeOpenMemoryServer;

  beforeEach(async () => {
    zep = await createZepFakeServer();
    await zep.seed("ana", seed);
    om = await FakeOpenMemoryServer.start({ apiKeys: ["om-key"] });
    await om.seed("ana", seed);
    h = await makeHarness({
      policies: { "pii-open": PII_OPEN },
      factories: BACKEND_FACTORIES,
      env: { T_ZEP_KEY: ZEP_FAKE_API_KEY, T_OM_KEY: "om-key" },
      tenants: `tenants:
  - id: t
    keys:
      - { name: app, sha256: ${hashKey(KEY)}, scopes: [retrieve] }
    policies: { allowed: ["*"], default: default }
    defaultBackend: zep
    backends:
      zep: { apiKeyEnv: T_ZEP_KEY, baseUrl: "${zep.baseUrl}" }
      openmemory: { url: "${om.baseUrl}", apiKeyEnv: T_OM_KEY, userScoping: user_id }
`,
    });
  });

  afterEach(async () => {
    await h.close();
    await zep.close();
    await om.close();
  });

  for (const backend of ["zep", "openmemory"] as const) {
    test(`${backend}: shaped memories — duplicate removed, card redacted, budget held`, async () => {
      const res = await request(h.app)
        .post("/v1/retrieve")
        .set("x-api-key", KEY)
        .send(body(backend))
        .expect(200);
      expect(res.body.metadata.fallback).toBeNull();
      expect(res.body.metadata.backend).toBe(backend);
      expect(res.body.metadata.appliedFilters[0]).toBe("redaction");
      const ids = res.body.memories.map((m: { id: string }) => m.id);
      expect(ids.filter((id: string) => id === "e1" || id === "e2")).toHaveLength(1);
      const text = JSON.stringify(res.body);
      expect(text).not.toContain("4111");
      expect(text).toContain("[REDACTED]");
      expect(res.body.metadata.totalTokens).toBeLessThanOrEqual(100);
      expect(
        res.body.memories.some((m: { provenance: { wasRedacted: boolean } }) => m.provenance.wasRedacted),
      ).toBe(true);
      for (const m of res.body.memories) {
        expect(m.score).toBeGreaterThanOrEqual(0);
        expect(m.score).toBeLessThanOrEqual(1);
        expect(m.provenance.backend).toBe(backend);
        expect(Number.isNaN(Date.parse(m.timestamp))).toBe(false);
      }
    });
  }

  test("zep: the tenant's Zep key is sent, with Zep's limit cap and scopes", async () => {
    await request(h.app).post("/v1/retrieve").set("x-api-key", KEY).send(body("zep")).expect(200);
    const searches = zep.requestsTo("/graph/search");
    expect(searches.length).toBeGreaterThan(0);
    expect(searches[0]?.headers.authorization).toBe(`Api-Key ${ZEP_FAKE_API_KEY}`);
    expect(searches.map((r) => (r.body as { scope: string }).scope).sort()).toEqual(["edges", "episodes"]);
    for (const r of searches) expect((r.body as { user_id: string; limit: number }).user_id).toBe("ana");
  });

  test("zep: an upstream 500 is a ZEP_UNAVAILABLE fallback, not a 5xx", async () => {
    zep.fail("server_error");
    const res = await request(h.app).post("/v1/retrieve").set("x-api-key", KEY).send(body("zep")).expect(200);
    expect(res.body.metadata.fallback).toMatchObject({ code: "ZEP_UNAVAILABLE", action: "skip" });
  });

  test("zep: a 404 user is COLLECTION_NOT_FOUND → empty", async () => {
    const res = await request(h.app)
      .post("/v1/retrieve")
      .set("x-api-key", KEY)
      .send({ ...body("zep"), userId: "nobody" })
      .expect(200);
    expect(res.body.metadata.fallback).toMatchObject({ code: "COLLECTION_NOT_FOUND", action: "empty" });
  });

  test("openmemory: the overload 500 is RATE_LIMITED; a plain 500 is OPENMEMORY_UNAVAILABLE", async () => {
    om.fail("overload", 1);
    const limited = await request(h.app)
      .post("/v1/retrieve")
      .set("x-api-key", KEY)
      .send(body("openmemory"))
      .expect(200);
    expect(limited.body.metadata.fallback.code).toBe("RATE_LIMITED");
    await h.close();
    h = await makeHarness({
      policies: { "pii-open": PII_OPEN },
      factories: BACKEND_FACTORIES,
      env: { T_OM_KEY: "om-key" },
      tenants: `tenants:
  - id: t
    keys:
      - { name: app, sha256: ${hashKey(KEY)}, scopes: [retrieve] }
    policies: { allowed: ["*"], default: default }
    backends:
      openmemory: { url: "${om.baseUrl}", apiKeyEnv: T_OM_KEY, userScoping: user_id }
`,
    });
    om.fail("server_error");
    const down = await request(h.app)
      .post("/v1/retrieve")
      .set("x-api-key", KEY)
      .send(body("openmemory"))
      .expect(200);
    expect(down.body.metadata.fallback.code).toBe("OPENMEMORY_UNAVAILABLE");
  });
});
