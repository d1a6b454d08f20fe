/**
 * Finding 07 (issue 26, privacy): a deletion through the gateway did not end cached answers. After
 * `DELETE /users/{id}/memories` (local store) or a proxied Zep `DELETE /api/v2/users/{id}`, the same query
 * answered the deleted content as a hit until the TTL, then as `stale` (the `cache` fallback) for up to
 * `staleSeconds`. Now a write or delete through the gateway ends that user's cached answers, on every replica
 * sharing the Redis (a per-user generation every entry is checked against), and an answer produced before the
 * deletion is never stored after it.
 *
 * Driven through HTTP with the real wiring: the local store, and the real Zep adapter against a fake Zep server,
 * two gateways (replicas) sharing one Redis.
 */
import request from "supertest";
import { payloadCacheKey } from "../../src/cache/key";
import { MemoryPayloadCache } from "../../src/cache/memory";
import { RedisPayloadCache } from "../../src/cache/redis";
import type { CachedPayload, PayloadCache } from "../../src/cache/types";
import type { RedisConnection } from "../../src/redis/connection";
import { BACKEND_FACTORIES } from "../../src/server/services";
import { hashKey } from "../../src/tenants/keys";
import { FakeUpstreams } from "../helpers/fake-upstreams";
import { type Harness, type HarnessOptions, makeHarness } from "../helpers/harness";
import { REDIS_URL, readyConnection, redisSuite, testPrefix, waitFor } from "../redis/redis-helpers";

const KEY = "mg_test_finding07_0123456789";
const OM_KEY = "mg_test_finding07_om_0123456789";
const SECRET = "Ana's new door code is 7719.";

function tenants(zepBaseUrl: string): string {
  return `tenants:
  - id: t7
    keys:
      - { name: app, sha256: ${hashKey(KEY)}, scopes: [retrieve, proxy] }
    policies: { allowed: ["*"], default: default }
    defaultBackend: local
    backends:
      local: { dataFile: globex.jsonl }
      zep: { apiKeyEnv: T7_ZEP_KEY, baseUrl: "${zepBaseUrl}" }
  - id: t7om
    keys:
      - { name: app, sha256: ${hashKey(OM_KEY)}, scopes: [retrieve, proxy] }
    policies: { allowed: ["*"], default: keep }
    backends:
      openmemory: { url: "${zepBaseUrl.replace(/\/api\/v2$/, "")}", userScoping: user_id }
`;
}

/** Fresh 60 s, then stale for an hour; a failing Zep answers from the cache (the `cache` fallback). */
const POLICY =
  "name: keep\nversion: 1\ntokenizer: approx\nretrieval: { minScore: 0 }\n" +
  "cache: { ttlSeconds: 60, staleSeconds: 3600 }\nfallbacks: { ZEP_UNAVAILABLE: cache }\n";

const LOCAL = [
  {
    id: "door-1",
    userId: "ana",
    content: SECRET,
    type: "fact",
    timestamp: "2026-03-01T09:00:00Z",
    sessionId: "s-1",
  },
];

interface Answer {
  cache: string;
  fallback: string | null;
  text: string;
}

async function ask(h: Harness, backend: "local" | "zep", query = "door code"): Promise<Answer> {
  const res = await request(h.app)
    .post("/v1/retrieve")
    .set("x-api-key", KEY)
    .send({ userId: "ana", sessionId: "s-9", query, useMemory: true, policy: "keep", backend })
    .expect(200);
  return {
    cache: res.body.metadata.cache,
    fallback: res.body.metadata.fallback?.code ?? null,
    text: JSON.stringify(res.body.memories),
  };
}

describe("Finding 07 — a write or delete through the gateway ends that user's cached answers", () => {
  const { open } = redisSuite<Harness>(testPrefix("finding07"));
  let upstream: FakeUpstreams;

  beforeEach(async () => {
    upstream = await FakeUpstreams.start();
    upstream.seed("ana", [{ id: "z-1", content: SECRET, at: "2026-03-01T09:00:00Z" }]);
  });

  afterEach(async () => {
    await upstream.close();
  });

  async function gateway(extra: HarnessOptions = {}): Promise<Harness> {
    const h = await makeHarness({
      tenants: tenants(upstream.zepBaseUrl),
      localRecords: LOCAL,
      factories: BACKEND_FACTORIES,
      policies: { keep: POLICY },
      ...extra,
      env: { T7_ZEP_KEY: "zep-secret-t7", ...extra.env },
    });
    open.push(h);
    return h;
  }

  async function replicas(prefix: string): Promise<[Harness, Harness]> {
    const env = { REDIS_URL, MEMGATE_REDIS_PREFIX: prefix };
    const pair: [Harness, Harness] = [await gateway({ env }), await gateway({ env })];
    for (const h of pair) await waitFor("redis ready", () => h.services.redis?.ready() === true);
    return pair;
  }

  test("local store, in-process cache: DELETE /users/{id}/memories ends the cached hit", async () => {
    const h = await gateway();
    expect(await ask(h, "local")).toMatchObject({ cache: "miss" });
    const hit = await ask(h, "local");
    expect(hit.cache).toBe("hit");
    expect(hit.text).toContain("7719");

    await request(h.app).delete("/users/ana/memories").set("x-api-key", KEY).expect(200);
    const after = await ask(h, "local");
    expect(after.cache).not.toBe("hit");
    expect(after.text).not.toContain("7719");
  });

  test("local store: DELETE /memory/{id} and POST /memory/add end the cached answer", async () => {
    const h = await gateway();
    await ask(h, "local");
    expect((await ask(h, "local")).cache).toBe("hit");
    await request(h.app).delete("/memory/door-1").set("x-api-key", KEY).expect(200);
    expect((await ask(h, "local")).text).not.toContain("7719");

    // A write is seen at once too: the entry cached without it no longer answers.
    expect((await ask(h, "local")).cache).toBe("hit");
    await request(h.app)
      .post("/memory/add")
      .set("x-api-key", KEY)
      .send({ content: "Ana's new door code is 2044.", user_id: "ana" })
      .expect(200);
    const written = await ask(h, "local");
    expect(written.cache).toBe("miss");
    expect(written.text).toContain("2044");
  });

  test("local store on Redis: the deleted content is not a hit", async () => {
    const [h] = await replicas(testPrefix("finding07-local"));
    await ask(h, "local");
    expect((await ask(h, "local")).cache).toBe("hit");
    await request(h.app).delete("/users/ana/memories").set("x-api-key", KEY).expect(200);
    const after = await ask(h, "local");
    expect(after.cache).not.toBe("hit");
    expect(after.text).not.toContain("7719");
  });

  test("Zep, two replicas on one Redis: a proxied DELETE /api/v2/users/{id} on one ends the hit and the stale answer on the other", async () => {
    const [one, two] = await replicas(testPrefix("finding07-zep"));
    expect(await ask(one, "zep")).toMatchObject({ cache: "miss" });
    const shared = await ask(two, "zep");
    expect(shared.cache).toBe("hit");
    expect(shared.text).toContain("7719");

    await request(one.app).delete("/api/v2/users/ana").set("x-api-key", KEY).expect(200);

    // Fresh entry: no longer a hit on the other replica.
    const after = await ask(two, "zep");
    expect(after.cache).not.toBe("hit");
    expect(after.text).not.toContain("7719");

    // Zep failing: the `cache` fallback must not bring the deleted answer back as stale, on either replica.
    upstream.fail(500);
    for (const h of [one, two]) {
      const stale = await ask(h, "zep", "what is the door code");
      expect(stale.text).not.toContain("7719");
      expect(stale.cache).not.toBe("stale");
    }
  });

  test("OpenMemory upstream: a proxied DELETE /users/{id}/memories ends the cached query answer", async () => {
    const h = await gateway();
    const query = () =>
      request(h.app)
        .post("/memory/query")
        .set("x-api-key", OM_KEY)
        .send({ query: "door code", filters: { user_id: "ana" } })
        .expect(200);
    await query();
    const hit = await query();
    expect(hit.headers["x-memgate-cache"]).toBe("hit");
    expect(JSON.stringify(hit.body)).toContain("7719");
    await request(h.app).delete("/users/ana/memories").set("x-api-key", OM_KEY).expect(200);
    const after = await query();
    expect(after.headers["x-memgate-cache"]).not.toBe("hit");
    expect(JSON.stringify(after.body)).not.toContain("7719");
  });

  test("Zep, in-process cache: the stale answer of a deleted user is not served by the cache fallback", async () => {
    const h = await gateway();
    await ask(h, "zep");
    await request(h.app).delete("/api/v2/users/ana").set("x-api-key", KEY).expect(200);
    upstream.fail(500);
    const stale = await ask(h, "zep");
    expect(stale.fallback).toBe("ZEP_UNAVAILABLE");
    expect(stale.cache).not.toBe("stale");
    expect(stale.text).not.toContain("7719");
  });
});

/** An answer produced before a deletion is never stored after it (the race the per-user generation closes). */
describe("Finding 07 — both caches: a write started before an invalidation is not stored", () => {
  const prefix = testPrefix("finding07-cache");
  const { open } = redisSuite<RedisConnection>(prefix);
  const entry = (text: string): CachedPayload =>
    ({ memories: [], metadata: { note: text }, systemPrompt: text }) as unknown as CachedPayload;
  const key = (userId: string) =>
    payloadCacheKey({ tenantId: "t7", backend: "zep", userId, query: "door code", policyHash: "h" });

  async function raceOn(cache: PayloadCache): Promise<void> {
    const before = await cache.generation(key("ana"));
    expect(before).toBeDefined();
    await cache.invalidateUser("t7", "ana");
    await cache.set(key("ana"), entry("old"), 60, 3600, before);
    expect(await cache.get(key("ana"))).toBeUndefined();
    // Another user of the tenant is untouched; a production started after the invalidation is stored.
    await cache.set(key("bo"), entry("bo"), 60, 3600, await cache.generation(key("bo")));
    await cache.set(key("ana"), entry("new"), 60, 3600, await cache.generation(key("ana")));
    await cache.invalidateUser("t7", "someone-else");
    expect((await cache.get(key("ana")))?.payload.systemPrompt).toBe("new");
    expect((await cache.get(key("bo")))?.payload.systemPrompt).toBe("bo");
    await cache.invalidateUser("t7", "ana");
    expect(await cache.get(key("ana"))).toBeUndefined();
    expect((await cache.get(key("bo")))?.payload.systemPrompt).toBe("bo");
  }

  test("in process", async () => {
    await raceOn(new MemoryPayloadCache());
  });

  test("Redis", async () => {
    await raceOn(new RedisPayloadCache(await readyConnection(open, prefix)));
  });
});
