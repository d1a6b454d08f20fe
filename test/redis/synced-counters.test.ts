/**
 * The batched per-key limit's Redis side (src/limits/synced.ts, RedisSharedCounters) against a real Redis: it counts
 * in the exact limiter's counter and window (a fleet half on MEMGATE_KEY_LIMIT_SYNC_MS=0 counts with it), and a
 * report that fails hands the request to the insurance limiter, as the exact limiter does.
 */
import { RedisRateLimiter } from "../../src/limits/redis";
import { RedisSharedCounters, SyncedRateLimiter } from "../../src/limits/synced";
import type { RedisConnection } from "../../src/redis/connection";
import { readyConnection, redisSuite, testPrefix } from "./redis-helpers";

const PREFIX = testPrefix("synced");
const RULE = { points: 5, durationSeconds: 60 };

describe("SyncedRateLimiter on RedisSharedCounters (real Redis)", () => {
  const suite = redisSuite<RedisConnection>(PREFIX);

  test("reports into RateLimiterRedis' own counter and window; the exact limiter continues the same count", async () => {
    const conn = await readyConnection(suite.open, PREFIX);
    const exact = new RedisRateLimiter(conn, "key");
    const synced = new SyncedRateLimiter(new RedisSharedCounters(conn, exact), 50, Date.now, false);
    for (let i = 0; i < 3; i++)
      expect(await synced.consume("acme:chat", RULE)).toMatchObject({ allowed: true });
    const counter = exact.prepare("acme:chat", RULE).redisKey;
    // The first request opened the window (count 0); the admissions are reported by the next flush.
    expect(await suite.admin().get(counter)).toBe("0");
    await synced.flush();
    expect(await suite.admin().get(counter)).toBe("3");
    const ttl = await suite.admin().pttl(counter);
    expect(ttl).toBeGreaterThan(55_000);
    expect(ttl).toBeLessThanOrEqual(60_000);
    // A replica with MEMGATE_KEY_LIMIT_SYNC_MS=0 counts on: 4th and 5th allowed, then refused.
    expect(await exact.consume("acme:chat", RULE)).toMatchObject({ allowed: true, remaining: 1 });
    expect(await exact.consume("acme:chat", RULE)).toMatchObject({ allowed: true, remaining: 0 });
    expect((await exact.consume("acme:chat", RULE)).allowed).toBe(false);
    // And the batched replica, once its view is older than the interval, reads that and refuses.
    await new Promise((r) => setTimeout(r, 60));
    expect((await synced.consume("acme:chat", RULE)).allowed).toBe(false);
    await synced.close();
  });

  test("a report Redis refuses (a key of the wrong type): the insurance limiter answers, the failure is reported", async () => {
    const conn = await readyConnection(suite.open, PREFIX);
    const exact = new RedisRateLimiter(conn, "key");
    const failures: string[] = [];
    const failed = conn.failed.bind(conn);
    conn.failed = (what, err) => {
      failures.push(what);
      failed(what, err);
    };
    await suite.admin().hset(exact.prepare("acme:ops", RULE).redisKey, "x", "1");
    const synced = new SyncedRateLimiter(new RedisSharedCounters(conn, exact), 50, Date.now, false);
    const decisions = [];
    for (let i = 0; i < 6; i++) decisions.push(await synced.consume("acme:ops", RULE));
    // The insurance counts on its own: 5 allowed, then refused.
    expect(decisions.map((d) => d.allowed)).toEqual([true, true, true, true, true, false]);
    expect(failures).toContain("rate limit (key report)");
    await synced.close();
  });
});
