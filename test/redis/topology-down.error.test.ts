import { RedisPayloadCache } from "../../src/cache/redis";
import { RedisRateLimiter } from "../../src/limits/redis";
import { silentLogger } from "../../src/logging/logger";
import { RedisConnection } from "../../src/redis/connection";
import type { RedisTarget } from "../../src/redis/topology";
import { freePort } from "./redis-helpers";

/**
 * A Cluster or Sentinel that cannot be reached at boot (nothing listens on the configured ports): the gateway's
 * Redis users degrade at once — reads miss, writes are dropped, limits fall back to the insurance limiter,
 * readiness says degraded — and nothing throws. The suites with real servers (cluster.test.ts, sentinel.test.ts)
 * cover a topology that fails while in use.
 */
describe.each([
  [
    "Cluster",
    async (): Promise<RedisTarget> => ({
      kind: "cluster",
      nodes: [{ host: "127.0.0.1", port: await freePort() }],
      tls: false,
    }),
  ],
  [
    "Sentinel",
    async (): Promise<RedisTarget> => ({
      kind: "sentinel",
      sentinels: [{ host: "127.0.0.1", port: await freePort() }],
      masterName: "mymaster",
      tls: false,
    }),
  ],
])("%s unreachable", (_name, target) => {
  test("reads miss, writes are dropped, limits hold in-process, readiness is degraded — quickly, without throwing", async () => {
    const conn = new RedisConnection({
      target: await target(),
      prefix: "memgate-test:down:",
      logger: silentLogger(),
    });
    try {
      const cache = new RedisPayloadCache(conn);
      const limiter = new RedisRateLimiter(conn, "user");
      const started = Date.now();
      expect(cache.available()).toBe(false);
      await expect(
        cache.set("k", { memories: [], systemPrompt: "", metadata: {} } as never, 60, 60),
      ).resolves.toBe(false);
      await expect(cache.get("k")).resolves.toBeUndefined();
      const rule = { points: 2, durationSeconds: 60 };
      const decisions = [];
      for (let i = 0; i < 3; i++) decisions.push((await limiter.consume("t:u", rule)).allowed);
      expect(decisions).toEqual([true, true, false]);
      expect(Date.now() - started).toBeLessThan(200);
      expect(await conn.check()).toMatchObject({ name: "redis", ok: false, degraded: true });
    } finally {
      await conn.close();
    }
  });
});
