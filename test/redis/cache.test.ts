import type Redis from "ioredis";
import { payloadCacheKey } from "../../src/cache/key";
import { RedisPayloadCache } from "../../src/cache/redis";
import type { CachedPayload } from "../../src/cache/types";
import { silentLogger } from "../../src/logging/logger";
import { RedisConnection } from "../../src/redis/connection";
import {
  deleteKeys,
  freePort,
  keysUnder,
  REDIS_URL,
  requireRedis,
  testPrefix,
  waitFor,
} from "./redis-helpers";

const PREFIX = testPrefix("cache");

function payload(id: string): CachedPayload {
  return {
    memories: [
      {
        id,
        content: "Ana orders an oat milk flat white.",
        score: 0.9,
        timestamp: "2026-03-01T09:00:00.000Z",
        sessionId: "s-1",
        type: "fact",
        provenance: { collection: "user:u-1", searchType: "hybrid", originalLength: 34, wasRedacted: false },
      },
    ],
    metadata: {
      queryTime: 1,
      totalResults: 1,
      includedResults: 1,
      totalTokens: 9,
      appliedFilters: ["token_budget"],
      config: { topK: 8, clipSentences: 2, maxTokens: 1500, searchType: "hybrid", minScore: 0.3 },
      policy: { name: "default", version: 1, hash: "h" },
      backend: "zep",
      cache: "miss",
      fallback: null,
    },
    systemPrompt: "## Relevant Context from Previous Conversations",
  };
}

describe("RedisPayloadCache (real Redis)", () => {
  let admin: Redis;
  let conn: RedisConnection;
  let clock = 1_000_000;
  let cache: RedisPayloadCache;

  beforeAll(async () => {
    admin = await requireRedis();
    conn = new RedisConnection({ url: REDIS_URL, prefix: PREFIX, logger: silentLogger() });
    await waitFor("the gateway's redis connection", () => conn.ready());
    cache = new RedisPayloadCache(conn, () => clock);
  });
  afterAll(async () => {
    await deleteKeys(admin, PREFIX);
    await conn.close();
    admin.disconnect();
  });

  test("an entry is fresh for ttlSeconds, then stale until ttl + stale, under the configured prefix", async () => {
    await cache.set("v1:payload:acme:a", payload("a"), 60, 3600);
    expect(await keysUnder(admin, PREFIX)).toEqual([`${PREFIX}v1:payload:acme:a`]);
    const pttl = await admin.pttl(`${PREFIX}v1:payload:acme:a`);
    expect(pttl).toBeGreaterThan(3_650_000);
    expect(pttl).toBeLessThanOrEqual(3_660_000);
    const fresh = await cache.get("v1:payload:acme:a");
    expect(fresh).toEqual({ payload: payload("a"), fresh: true, storedAt: 1_000_000 });
    clock += 60_000;
    expect(await cache.get("v1:payload:acme:a")).toMatchObject({ fresh: false, storedAt: 1_000_000 });
    clock = 1_000_000;
  });

  test("Redis drops the entry after ttl + stale", async () => {
    await cache.set("v1:payload:acme:short", payload("s"), 0.05, 0.1);
    expect(await cache.get("v1:payload:acme:short")).toBeDefined();
    await new Promise((r) => setTimeout(r, 250));
    expect(await cache.get("v1:payload:acme:short")).toBeUndefined();
  });

  test("nothing is written when ttl + stale is 0", async () => {
    await cache.set("v1:payload:acme:none", payload("n"), 0, 0);
    expect(await admin.exists(`${PREFIX}v1:payload:acme:none`)).toBe(0);
  });

  test.each([
    ["not JSON", "{oops"],
    ["JSON of another shape", JSON.stringify({ hello: "world" })],
    ["a payload without timestamps", JSON.stringify({ payload: payload("x") })],
    ["a bare array", "[]"],
  ])("a value that is %s is a miss, not an error", async (_what, raw) => {
    await admin.set(`${PREFIX}v1:payload:acme:bad`, raw);
    expect(await cache.get("v1:payload:acme:bad")).toBeUndefined();
  });

  test("keys hold neither the user id nor the query in clear", () => {
    const key = payloadCacheKey({
      tenantId: "acme",
      backend: "zep",
      userId: "ana@example.com",
      query: "what do I order",
      policyHash: "h",
    });
    expect(key).toMatch(/^v2:payload:acme:\{[A-Za-z0-9_-]{32}\}:[0-9a-f]{64}$/);
  });

  test("an unreachable Redis: reads miss and writes are dropped, quickly, without throwing", async () => {
    const port = await freePort();
    const down = new RedisConnection({
      url: `redis://127.0.0.1:${port}`,
      prefix: PREFIX,
      logger: silentLogger(),
    });
    const offline = new RedisPayloadCache(down);
    try {
      const started = Date.now();
      expect(offline.available()).toBe(false);
      await expect(offline.set("k", payload("k"), 60, 60)).resolves.toBeUndefined();
      await expect(offline.get("k")).resolves.toBeUndefined();
      expect(Date.now() - started).toBeLessThan(100);
      expect(await down.check()).toMatchObject({ name: "redis", ok: false, degraded: true });
    } finally {
      await down.close();
    }
  });
});
