/**
 * A retrieval's admission (per-user limit, backend cooldown, payload cache read) in one Redis round trip
 * (src/retrieval/admission-redis.ts), against a real Redis: the same keys and decisions as the separate calls,
 * the same degradation when the script cannot run, and — through the gateway — the commands a hit and a miss send.
 */
import { payloadCacheKey, userCacheKeys } from "../../src/cache/key";
import { RedisFlightLock } from "../../src/cache/lock-redis";
import { RedisPayloadCache, serializeEntry } from "../../src/cache/redis";
import { RedisBackendCooldown } from "../../src/limits/cooldown-redis";
import { RedisRateLimiter } from "../../src/limits/redis";
import type { RedisConnection } from "../../src/redis/connection";
import { RedisAdmission } from "../../src/retrieval/admission-redis";
import { PayloadText } from "../../src/retrieval/payload-text";
import { body, post, redisGatewaySuite, redisHarness } from "./gateway-helpers";
import { readyConnection, redisSuite, testPrefix, waitFor } from "./redis-helpers";

const PREFIX = testPrefix("admission");
const RULE = { points: 3, durationSeconds: 60 };

function replica(conn: RedisConnection) {
  const limiter = new RedisRateLimiter(conn, "user");
  const cooldown = new RedisBackendCooldown(conn);
  const cache = new RedisPayloadCache(conn);
  return { limiter, cooldown, cache, admission: new RedisAdmission(conn, { limiter, cooldown, cache }) };
}

const STORED = serializeEntry(
  PayloadText.of({ memories: [], metadata: { cache: "miss" }, systemPrompt: "" } as never),
  Date.now(),
  Date.now() + 60_000,
);

describe("RedisAdmission (real Redis)", () => {
  const suite = redisSuite<RedisConnection>(PREFIX);
  const connect = () => readyConnection(suite.open, PREFIX);

  test("counts in the same window as RedisRateLimiter.consume, then refuses without reading the cache", async () => {
    const a = replica(await connect());
    await suite.admin().set(`${PREFIX}cache-key`, STORED);
    const req = { rateKey: "acme:u-1", rule: RULE, cooldownKey: "acme:zep", cacheKey: "cache-key" };
    expect((await a.limiter.consume("acme:u-1", RULE)).remaining).toBe(2);

    const first = a.admission.check(req);
    expect(await first.limit).toMatchObject({ allowed: true, remaining: 1 });
    expect(await first.cooldownMs).toBe(0);
    expect((await first.cached)?.fresh).toBe(true);

    expect(await a.admission.check(req).limit).toMatchObject({ allowed: true, remaining: 0 });
    const refused = a.admission.check(req);
    const decision = await refused.limit;
    expect(decision.allowed).toBe(false);
    expect(decision.retryAfterMs).toBeGreaterThan(55_000);
    expect(decision.retryAfterMs).toBeLessThanOrEqual(60_000);
    expect(await refused.cached).toBeUndefined();
    // One counter, the one RateLimiterRedis itself uses.
    expect(await suite.admin().get(a.limiter.prepare("acme:u-1", RULE).redisKey)).toBe("4");
  });

  test("a cooldown started by another replica is seen, and the cache is not read behind it", async () => {
    const a = replica(await connect());
    const b = replica(await connect());
    await suite.admin().set(`${PREFIX}cache-key`, STORED);
    await b.cooldown.start("acme:zep", 5_000);
    const checks = a.admission.check({
      rateKey: "acme:u-1",
      rule: RULE,
      cooldownKey: "acme:zep",
      cacheKey: "cache-key",
    });
    expect(await checks.limit).toMatchObject({ allowed: true });
    const left = await checks.cooldownMs;
    expect(left).toBeGreaterThan(4_000);
    expect(left).toBeLessThanOrEqual(5_000);
    expect(await checks.cached).toBeUndefined();
  });

  test("no cache key (explain): nothing is read", async () => {
    const a = replica(await connect());
    const checks = a.admission.check({
      rateKey: "acme:u-1",
      rule: RULE,
      cooldownKey: "acme:zep",
      cacheKey: undefined,
    });
    expect(checks.cached).toBeUndefined();
    expect(await checks.limit).toMatchObject({ allowed: true, remaining: 2 });
  });

  test("the counter cannot be written: the insurance limiter decides; the shared cooldown and the cache still answer", async () => {
    const a = replica(await connect());
    const b = replica(await connect());
    // A counter of the wrong type makes INCRBY fail (as an out-of-memory or read-only Redis refuses the write).
    await suite.admin().rpush(a.limiter.prepare("acme:u-1", RULE).redisKey, "not a counter");
    await b.cooldown.start("acme:zep", 3_000); // another replica's: only Redis knows it
    await suite.admin().set(`${PREFIX}cache-key`, STORED);
    const req = { rateKey: "acme:u-1", rule: RULE, cooldownKey: "acme:zep", cacheKey: "cache-key" };
    const decisions = [];
    for (let i = 0; i < 4; i++) {
      const checks = a.admission.check(req);
      decisions.push(await checks.limit);
      expect(await checks.cooldownMs).toBeGreaterThan(2_000);
    }
    // The insurance limiter enforces the same rule in-process.
    expect(decisions.map((d) => d.allowed)).toEqual([true, true, true, false]);
    await suite.admin().del(`${PREFIX}cooldown:acme:zep`);
    const next = a.admission.check({ ...req, rateKey: "acme:u-2" });
    expect((await next.cached)?.fresh).toBe(true);
  });

  test("an unreadable cache entry is a miss; the limit and the cooldown still come from Redis", async () => {
    const a = replica(await connect());
    await suite.admin().rpush(`${PREFIX}cache-key`, "not an entry");
    const checks = a.admission.check({
      rateKey: "acme:u-1",
      rule: RULE,
      cooldownKey: "acme:zep",
      cacheKey: "cache-key",
    });
    expect(await checks.limit).toMatchObject({ allowed: true, remaining: 2 });
    expect(await checks.cached).toBeUndefined();
    expect(await suite.admin().get(a.limiter.prepare("acme:u-1", RULE).redisKey)).toBe("1");
  });

  test("a counter left without an expiry gets the window's again (rate-limiter-flexible's repair)", async () => {
    const a = replica(await connect());
    const key = a.limiter.prepare("acme:u-1", RULE).redisKey;
    await suite.admin().set(key, "1");
    const decision = await a.admission.check({
      rateKey: "acme:u-1",
      rule: RULE,
      cooldownKey: "acme:zep",
      cacheKey: undefined,
    }).limit;
    expect(decision).toMatchObject({ allowed: true, remaining: 1, resetMs: 60_000 });
    expect(await suite.admin().pttl(key)).toBeGreaterThan(55_000);
  });

  test("a miss takes the flight lock and reads the user's generation in the same script; a hit or a held lock does not", async () => {
    const conn = await connect();
    const limiter = new RedisRateLimiter(conn, "user");
    const cooldown = new RedisBackendCooldown(conn);
    const cache = new RedisPayloadCache(conn);
    const lock = new RedisFlightLock(conn, cache);
    const admission = new RedisAdmission(conn, { limiter, cooldown, cache, lock });
    const cacheKey = payloadCacheKey({
      tenantId: "acme",
      backend: "zep",
      userId: "u-1",
      query: "q",
      policyHash: "h",
    });
    await suite.admin().set(`${PREFIX}${userCacheKeys("acme", "u-1").generation}`, "7");
    const req = {
      rateKey: "acme:u-1",
      rule: RULE,
      cooldownKey: "acme:zep",
      cacheKey,
      flight: { lockMs: 2_500 },
    };

    const miss = admission.check(req);
    expect(await miss.cached).toBeUndefined();
    const pre = await miss.flight;
    expect(pre?.token).toEqual(expect.any(String));
    expect(pre?.generation).toBe(7);
    // The lock RedisFlightLock itself takes and releases: the same key, the same token.
    expect(await suite.admin().get(`${PREFIX}flight:${cacheKey}`)).toBe(pre?.token);
    const ttl = await suite.admin().pttl(`${PREFIX}flight:${cacheKey}`);
    expect(ttl).toBeGreaterThan(2_000);
    expect(ttl).toBeLessThanOrEqual(2_500);

    // Another request for the same entry meanwhile: held by another, nothing read but the miss.
    expect(await admission.check(req).flight).toEqual({ token: null });
    await lock.release(cacheKey, pre?.token ?? "");
    expect(await suite.admin().exists(`${PREFIX}flight:${cacheKey}`)).toBe(0);

    // A hit never takes it.
    await suite.admin().set(`${PREFIX}${cacheKey}`, STORED);
    const hit = admission.check(req);
    expect((await hit.cached)?.fresh).toBe(true);
    expect(await hit.flight).toBeUndefined();
    expect(await suite.admin().exists(`${PREFIX}flight:${cacheKey}`)).toBe(0);

    // Without `flight` (or without a lock) nothing is tried.
    await suite.admin().del(`${PREFIX}${cacheKey}`);
    expect(admission.check({ ...req, flight: undefined }).flight).toBeUndefined();
    expect(await suite.admin().exists(`${PREFIX}flight:${cacheKey}`)).toBe(0);
  });

  test("a refused request takes no lock", async () => {
    const conn = await connect();
    const limiter = new RedisRateLimiter(conn, "user");
    const cooldown = new RedisBackendCooldown(conn);
    const cache = new RedisPayloadCache(conn);
    const admission = new RedisAdmission(conn, {
      limiter,
      cooldown,
      cache,
      lock: new RedisFlightLock(conn, cache),
    });
    const req = {
      rateKey: "acme:u-1",
      rule: { points: 1, durationSeconds: 60 },
      cooldownKey: "acme:zep",
      cacheKey: "k",
    };
    const first = admission.check({ ...req, flight: { lockMs: 1_000 } });
    expect((await first.flight)?.token).toEqual(expect.any(String));
    const refused = admission.check({ ...req, cacheKey: "k2", flight: { lockMs: 1_000 } });
    expect((await refused.limit).allowed).toBe(false);
    expect(await refused.flight).toBeUndefined();
    expect(await suite.admin().exists(`${PREFIX}flight:k2`)).toBe(0);
  });

  test("Redis unusable: the separate in-process answers, without waiting", async () => {
    const conn = await connect();
    const a = replica(conn);
    await conn.close();
    const checks = a.admission.check({
      rateKey: "acme:u-9",
      rule: RULE,
      cooldownKey: "acme:zep",
      cacheKey: "k",
    });
    expect(await checks.limit).toMatchObject({ allowed: true, remaining: 2 });
    expect(await checks.cooldownMs).toBe(0);
    expect(await checks.cached).toBeUndefined();
  });
});

describe("Redis commands per retrieval (through the gateway)", () => {
  const { open, admin } = redisGatewaySuite(PREFIX);

  // The per-key limit batched (an interval longer than the test: its timer's report never lands in between) costs
  // no command per request; exact (MEMGATE_KEY_LIMIT_SYNC_MS=0) it is the first command of each.
  const MISS = ["evalsha", "evalsha"];
  test.each([
    ["batched", "60000", MISS, ["evalsha"]],
    ["exact", "0", ["evalsha", ...MISS], ["evalsha", "evalsha"]],
  ])(
    "per-key limit %s (MEMGATE_KEY_LIMIT_SYNC_MS=%s): the Redis commands of a miss and of a hit",
    async (_mode, syncMs, missCommands, hitCommands) => {
      const h = await redisHarness(PREFIX, { env: { MEMGATE_KEY_LIMIT_SYNC_MS: syncMs } });
      open.push(h);
      const monitor = await admin().monitor();
      const seen: string[][] = [];
      monitor.on("monitor", (_time: string, args: string[], source: string) => {
        // Commands a script runs are reported too, from "lua": only what the gateway sent counts.
        if (source !== "lua" && args.some((a) => a.startsWith(PREFIX))) seen.push(args);
      });
      try {
        // MONITOR reports commands from the moment it is on: wait until it sees ours.
        await waitFor("MONITOR on", async () => {
          await admin().get(`${PREFIX}probe`);
          return seen.length > 0;
        });
        // MONITOR's reports arrive on their own connection, after the gateway's answer: `settled` sends a marker
        // command and waits for its report, so every command Redis ran before it has been reported too.
        let markers = 0;
        const settled = async (atLeast: number) => {
          await waitFor(`${atLeast} commands reported`, () => seen.length >= atLeast);
          const marker = `${PREFIX}marker:${++markers}`;
          await admin().get(marker);
          await waitFor("the marker reported", () => seen.some((args) => args[1] === marker));
          return seen
            .splice(0)
            .filter((args) => !args[1]?.startsWith(`${PREFIX}marker:`) && args[1] !== `${PREFIX}probe`);
        };
        // Once around first: each script is sent whole (EVAL) the first time on a connection, by SHA after that.
        await post(h, body({ query: "warm-up" })).expect(200);
        await post(h, body({ query: "warm-up" })).expect(200);
        await settled(syncMs === "0" ? 6 : 4);

        const miss = await post(h, body({ query: "what do I usually order on Mondays?" })).expect(200);
        expect(miss.body.metadata.cache).toBe("miss");
        // (Exact: the per-key limit,) the admission (per-user limit + cooldown + cache read, and with the miss the
        // single-flight lock and the user's cache generation: one script, issue 29), then after the answer the cache
        // write and the lock's release (the store script: generation check, entry, the user's index, the lock).
        expect((await settled(missCommands.length)).map((args) => args[0]?.toLowerCase())).toEqual(
          missCommands,
        );

        const hit = await post(h, body({ query: "what do I usually order on Mondays?" })).expect(200);
        expect(hit.body.metadata.cache).toBe("hit");
        // The admission (and, exact, the per-key limit): nothing else.
        expect((await settled(hitCommands.length)).map((args) => args[0]?.toLowerCase())).toEqual(
          hitCommands,
        );
      } finally {
        monitor.disconnect();
      }
    },
  );
});
