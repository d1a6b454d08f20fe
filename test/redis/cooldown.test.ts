import { KEYS } from "../helpers/harness";
import { body, fakeZep, post, redisGatewaySuite, redisHarness } from "./gateway-helpers";
import { testPrefix } from "./redis-helpers";

const PREFIX = testPrefix("cooldown");

describe("backend 429 cooldown shared through Redis", () => {
  const { open, admin } = redisGatewaySuite(PREFIX);

  test("a 429 seen by one gateway pauses that tenant's backend on the other, which serves RATE_LIMITED", async () => {
    const a = await redisHarness(PREFIX);
    const b = await redisHarness(PREFIX);
    open.push(a, b);
    const warm = await post(b, body({ query: "warm" })).expect(200);
    expect(fakeZep(b).searchCalls).toBe(1);

    fakeZep(a).fail("rate_limited", { status: 429, retryAfterMs: 30_000 });
    const limited = await post(a, body({ query: "cold" })).expect(200);
    expect(limited.body.metadata.fallback.code).toBe("RATE_LIMITED");
    const pttl = await admin().pttl(`${PREFIX}cooldown:acme:zep`);
    expect(pttl).toBeGreaterThan(29_000);

    // Gateway b never saw the 429, yet does not call its backend: cached query → cache fallback; new one → skip.
    const fromCache = await post(b, body({ query: "warm" })).expect(200);
    expect(fromCache.body.metadata.cache).toBe("hit");
    expect(fromCache.body.memories).toEqual(warm.body.memories);
    const fresh = await post(b, body({ query: "never asked" })).expect(200);
    expect(fresh.body.metadata.fallback).toMatchObject({ code: "RATE_LIMITED", action: "skip" });
    expect(fresh.body.metadata.fallback.message).toMatch(/zep asked to wait (29|30) s/);
    expect(fakeZep(b).searchCalls).toBe(1);
    expect(warm.body.metadata.fallback).toBeNull();
  });

  test("the cooldown ends when the backend said; another tenant is not paused", async () => {
    const a = await redisHarness(PREFIX);
    const b = await redisHarness(PREFIX);
    open.push(a, b);
    fakeZep(a).fail("rate_limited", { status: 429, retryAfterMs: 400 });
    await post(a, body({ query: "q1" })).expect(200);
    const during = await post(b, body({ query: "q2" })).expect(200);
    expect(during.body.metadata.fallback.code).toBe("RATE_LIMITED");
    expect(fakeZep(b).searchCalls).toBe(0);
    // globex's Zep is another tenant's backend: not paused.
    const globexZep = b.zep.globex;
    if (globexZep === undefined) throw new Error("no fake Zep for globex");
    globexZep.setUser("u-123", []);
    const globex = await post(b, body({ policy: "default", backend: "zep" }), KEYS.globex).expect(200);
    expect(globex.body.metadata.fallback).toBeNull();
    expect(globexZep.searchCalls).toBe(1);
    await new Promise((r) => setTimeout(r, 450));
    const after = await post(b, body({ query: "q2" })).expect(200);
    expect(after.body.metadata.fallback).toBeNull();
    expect(fakeZep(b).searchCalls).toBe(1);
  });

  test("a shorter Retry-After never shortens a running cooldown", async () => {
    const a = await redisHarness(PREFIX);
    open.push(a);
    await a.services.redis?.client.set(`${PREFIX}cooldown:acme:zep`, "1", "PX", 20_000);
    fakeZep(a).fail("rate_limited", { status: 429, retryAfterMs: 1000 });
    // Paused already: the backend is not even called.
    await post(a, body({ query: "x" })).expect(200);
    expect(fakeZep(a).searchCalls).toBe(0);
    const { RedisBackendCooldown } = await import("../../src/limits/cooldown-redis");
    const conn = a.services.redis;
    if (conn === undefined) throw new Error("no redis");
    await new RedisBackendCooldown(conn).start("acme:zep", 1000);
    expect(await admin().pttl(`${PREFIX}cooldown:acme:zep`)).toBeGreaterThan(15_000);
  });
});
