/**
 * Finding 08 (issue 26): the per-user limit and cache key followed the wrong field.
 *
 * - OpenMemory `/memory/query`: memgate keyed the user by `user_id ?? filters.user_id` while the server filters
 *   by `filters.user_id` first, so a rotating decoy `user_id` queried a victim (`filters.user_id`) with no limit
 *   and never hit the cache. A body whose two fields differ is now refused (400 `invalid_input` naming the field).
 * - The per-user bucket was keyed by the rule (`points/seconds`): picking another allowed policy with another rule
 *   reset it. It is now keyed by the user alone; each request is judged by its own policy's points.
 * - `/v1` user `graph:X` shared a bucket (and cache scope) with the Zep door's `graph_id: X` (and `thread:X` with
 *   a thread's context): door-made owners now live in a namespace no user id can name.
 *
 * Driven over HTTP with the real adapters against fake upstreams, in process and on Redis.
 */
import request from "supertest";
import { BACKEND_FACTORIES } from "../../src/server/services";
import { hashKey } from "../../src/tenants/keys";
import { FakeUpstreams } from "../helpers/fake-upstreams";
import { type Harness, type HarnessOptions, makeHarness } from "../helpers/harness";
import { REDIS_URL, redisSuite, testPrefix, waitFor } from "../redis/redis-helpers";

const KEY = "mg_test_finding08_0123456789";

function tenants(upstream: FakeUpstreams): string {
  return `tenants:
  - id: t8
    keys:
      - { name: app, sha256: ${hashKey(KEY)}, scopes: [retrieve, proxy] }
    policies: { allowed: ["*"], default: two }
    defaultBackend: zep
    backends:
      zep: { apiKeyEnv: T8_ZEP_KEY, baseUrl: "${upstream.zepBaseUrl}" }
      openmemory: { url: "${upstream.origin}", apiKeyEnv: T8_OM_KEY, userScoping: user_id }
`;
}

const policy = (name: string, points: number) =>
  `name: ${name}\nversion: 1\ntokenizer: approx\nretrieval: { minScore: 0 }\n` +
  `rateLimit: { perUser: { points: ${points}, durationSeconds: 60 } }\n`;

const FALLBACK = "x-memgate-fallback";

describe("Finding 08 — per-user limit and cache key follow the right field", () => {
  const { open } = redisSuite<Harness>(testPrefix("finding08"));
  let upstream: FakeUpstreams;

  beforeEach(async () => {
    upstream = await FakeUpstreams.start();
    upstream.seed("victim", [
      { id: "v-1", content: "The victim's PIN is 1234.", at: "2026-03-01T09:00:00Z" },
    ]);
  });

  afterEach(async () => {
    await upstream.close();
  });

  async function gateway(extra: HarnessOptions = {}): Promise<Harness> {
    const h = await makeHarness({
      tenants: tenants(upstream),
      factories: BACKEND_FACTORIES,
      policies: { two: policy("two", 2), three: policy("three", 3) },
      ...extra,
      env: { T8_ZEP_KEY: "zep-secret-t8", T8_OM_KEY: "om-secret-t8", ...extra.env },
    });
    open.push(h);
    return h;
  }

  const retrieve = (h: Harness, userId: string, policyName = "two") =>
    request(h.app)
      .post("/v1/retrieve")
      .set("x-api-key", KEY)
      .send({ userId, sessionId: "s-9", query: `PIN ${Math.random()}`, useMemory: true, policy: policyName })
      .expect(200);

  test("OpenMemory: a decoy user_id beside filters.user_id is refused, naming the field", async () => {
    const h = await gateway();
    for (let i = 0; i < 4; i++) {
      const res = await request(h.app)
        .post("/memory/query")
        .set("x-api-key", KEY)
        .send({ query: "PIN", user_id: `decoy-${i}`, filters: { user_id: "victim" } });
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({ error: "invalid_input" });
      expect(JSON.stringify(res.body.details)).toContain("user_id");
    }
    expect(upstream.searches.openmemory).toBe(0);
  });

  test("OpenMemory: filters.user_id alone (or both equal) is limited as that user", async () => {
    const h = await gateway();
    const ask = (body: Record<string, unknown>) =>
      request(h.app).post("/memory/query").set("x-api-key", KEY).send(body).expect(200);
    expect((await ask({ query: "PIN a", filters: { user_id: "victim" } })).headers[FALLBACK]).toBeUndefined();
    expect(
      (await ask({ query: "PIN b", user_id: "victim", filters: { user_id: "victim" } })).headers[FALLBACK],
    ).toBeUndefined();
    expect((await ask({ query: "PIN c", filters: { user_id: "victim" } })).headers[FALLBACK]).toMatch(
      /^RATE_LIMITED/,
    );
  });

  test.each([
    ["in process", false],
    ["on Redis", true],
  ])("%s: picking another allowed policy does not reset the user's bucket", async (_name, redis) => {
    const h = await gateway(
      redis ? { env: { REDIS_URL, MEMGATE_REDIS_PREFIX: testPrefix("finding08-bucket") } } : {},
    );
    if (redis) await waitFor("redis ready", () => h.services.redis?.ready() === true);
    upstream.seed("u-1", [{ id: "m-1", content: "PIN notes", at: "2026-03-01T09:00:00Z" }]);
    expect((await retrieve(h, "u-1")).body.metadata.fallback).toBeNull();
    expect((await retrieve(h, "u-1")).body.metadata.fallback).toBeNull();
    expect((await retrieve(h, "u-1")).body.metadata.fallback?.code).toBe("RATE_LIMITED");
    // Four requests in the window: more than `three` allows too.
    expect((await retrieve(h, "u-1", "three")).body.metadata.fallback?.code).toBe("RATE_LIMITED");
  });

  test("/v1 user graph:X does not spend the Zep door's graph X bucket", async () => {
    const h = await gateway();
    for (let i = 0; i < 3; i++) await retrieve(h, "graph:acme-kb");
    const door = await request(h.app)
      .post("/api/v2/graph/search")
      .set("x-api-key", KEY)
      .send({ query: "PIN", graph_id: "acme-kb" })
      .expect(200);
    expect(door.headers[FALLBACK]).toBeUndefined();
  });

  test("a door refuses a user id in the reserved namespace, naming the field", async () => {
    const h = await gateway();
    const zep = await request(h.app)
      .post("/api/v2/graph/search")
      .set("x-api-key", KEY)
      .send({ query: "PIN", user_id: "\u0000graph:acme-kb" })
      .expect(400);
    expect(zep.body.detail).toContain("user_id");
    const om = await request(h.app)
      .post("/memory/query")
      .set("x-api-key", KEY)
      .send({ query: "PIN", filters: { user_id: "\u0000thread:t-1" } })
      .expect(400);
    expect(JSON.stringify(om.body.details)).toContain("filters.user_id");
  });

  test("/v1 user thread:X does not spend thread X's context bucket", async () => {
    const h = await gateway();
    for (let i = 0; i < 3; i++) await retrieve(h, "thread:t-1");
    const door = await request(h.app).get("/api/v2/threads/t-1/context").set("x-api-key", KEY);
    expect(String(door.headers[FALLBACK] ?? "")).not.toMatch(/^RATE_LIMITED/);
  });
});
