import type Redis from "ioredis";
import { payloadCacheKey } from "../../src/cache/key";
import { RedisFlightLock } from "../../src/cache/lock-redis";
import { RedisPayloadCache } from "../../src/cache/redis";
import { type FlightOptions, type FlightUnlock, SingleFlight } from "../../src/cache/singleflight";
import type { CachedPayload } from "../../src/cache/types";
import { silentLogger } from "../../src/logging/logger";
import { RedisConnection } from "../../src/redis/connection";
import { deleteKeys, REDIS_URL, requireRedis, testPrefix, waitFor } from "./redis-helpers";

const PREFIX = testPrefix("lock");
const OPTS: FlightOptions = { waitMs: 300, lockMs: 2000, shareAcrossReplicas: true };

function payload(tag: string): CachedPayload {
  return {
    memories: [],
    metadata: {
      queryTime: 0,
      totalResults: 0,
      includedResults: 0,
      totalTokens: 0,
      appliedFilters: [tag],
      config: { topK: 8, clipSentences: 2, maxTokens: 1500, searchType: "hybrid", minScore: 0.3 },
      policy: { name: "p", version: 1, hash: "h" },
      backend: "zep",
      cache: "miss",
      fallback: null,
    },
    systemPrompt: "",
  };
}

describe("single-flight lock in Redis", () => {
  let admin: Redis;
  let conn: RedisConnection;
  let lock: RedisFlightLock;
  let cache: RedisPayloadCache;

  beforeAll(async () => {
    admin = await requireRedis();
    conn = new RedisConnection({ url: REDIS_URL, prefix: PREFIX, logger: silentLogger() });
    await waitFor("redis ready", () => conn.ready());
    cache = new RedisPayloadCache(conn);
    lock = new RedisFlightLock(conn, cache);
  });
  afterEach(() => deleteKeys(admin, PREFIX));

  /** The store a retrieval passes: the result into the cache, fresh for a minute (the lock with it when it can). */
  const storeIn =
    (key: string) =>
    (p: CachedPayload, unlock?: FlightUnlock): Promise<boolean> =>
      cache.set(key, p, 60, 0, undefined, undefined, unlock);
  /** Takes the lock as another replica would; its token, or null/undefined. */
  const take = async (key: string, ttlMs: number) => (await lock.acquire(key, ttlMs)).token;
  test("a user's entry is written and its lock released by one script; released even when the write is refused", async () => {
    const key = payloadCacheKey({
      tenantId: "acme",
      backend: "zep",
      userId: "u-1",
      query: "q",
      policyHash: "h",
    });
    const mine = await take(key, 5_000);
    expect(mine).toEqual(expect.any(String));
    const released = await cache.set(key, payload("mine"), 60, 0, 0, undefined, { key, token: mine ?? "" });
    expect(released).toBe(true);
    expect((await cache.get(key))?.fresh).toBe(true);
    expect(await admin.exists(`${PREFIX}flight:${key}`)).toBe(0);

    // Another holder's lock is left alone; a write refused (the user invalidated since) still releases its own.
    const other = await take(key, 5_000);
    expect(await cache.set(key, payload("late"), 60, 0, 0, undefined, { key, token: "not-mine" })).toBe(true);
    expect(await admin.get(`${PREFIX}flight:${key}`)).toBe(other);
    await cache.invalidateUser("acme", "u-1");
    const again = await lock.acquire(key, 5_000);
    expect(again.token).toBeNull();
    await lock.release(key, other ?? "");
    const third = await take(key, 5_000);
    expect(await cache.set(key, payload("stale"), 60, 0, 0, undefined, { key, token: third ?? "" })).toBe(
      true,
    );
    expect(await cache.get(key)).toBeUndefined();
    expect(await admin.exists(`${PREFIX}flight:${key}`)).toBe(0);
  });

  test("through a flight on a user's key: one store script, no separate release", async () => {
    const key = payloadCacheKey({
      tenantId: "acme",
      backend: "zep",
      userId: "u-2",
      query: "q",
      policyHash: "h",
    });
    const released: string[] = [];
    const counting = {
      acquire: (k: string, ms: number) => lock.acquire(k, ms),
      held: (k: string) => lock.held(k),
      release: (k: string, t: string) => {
        released.push(k);
        return lock.release(k, t);
      },
    };
    const flight = new SingleFlight({ cache, lock: counting });
    expect((await flight.run(key, OPTS, async () => payload("mine"), storeIn(key))).role).toBe("leader");
    await flight.idle();
    expect(released).toEqual([]);
    expect(await admin.exists(`${PREFIX}flight:${key}`)).toBe(0);
    expect((await cache.get(key))?.fresh).toBe(true);
  });

  afterAll(async () => {
    await conn.close();
    admin.disconnect();
  });

  test("SET NX PX: one holder at a time; only the owner's token releases it", async () => {
    const token = await take("k1", 5000);
    expect(typeof token).toBe("string");
    expect(await take("k1", 5000)).toBeNull();
    const pttl = await admin.pttl(`${PREFIX}flight:k1`);
    expect(pttl).toBeGreaterThan(4000);
    await lock.release("k1", "someone-else");
    expect(await lock.held("k1")).toBe(true);
    await lock.release("k1", token ?? "");
    expect(await lock.held("k1")).toBe(false);
  });

  test("acquire: the lock and the entry it guards in one step, whoever holds the lock", async () => {
    const none = await lock.acquire("k3", 5000);
    expect(typeof none.token).toBe("string");
    expect(none.cached).toBeUndefined();
    await cache.set("k3", payload("written by another replica"), 60, 0);
    const held = await lock.acquire("k3", 5000);
    expect(held.token).toBeNull();
    expect(held.cached?.fresh).toBe(true);
    expect(held.cached?.payload).toEqual(payload("written by another replica"));
    await lock.release("k3", none.token ?? "");
    const again = await lock.acquire("k3", 5000);
    expect(typeof again.token).toBe("string");
    expect(again.cached?.fresh).toBe(true);
  });

  test("acquire: an unreadable entry is a miss and the lock is still taken", async () => {
    await admin.rpush(`${PREFIX}k9`, "not an entry");
    const got = await lock.acquire("k9", 5000);
    expect(typeof got.token).toBe("string");
    expect(got.cached).toBeUndefined();
  });

  test("the lock expires if its holder dies", async () => {
    expect(typeof (await take("k2", 100))).toBe("string");
    await new Promise((r) => setTimeout(r, 150));
    expect(await lock.held("k2")).toBe(false);
  });

  test("a waiter reads the holder's result from the cache (role remote) without computing", async () => {
    const flight = new SingleFlight({ cache, lock });
    const token = await take("k3", 5000);
    let computed = 0;
    const waiting = flight.run(
      "k3",
      OPTS,
      async () => {
        computed++;
        return payload("mine");
      },
      storeIn("k3"),
    );
    await new Promise((r) => setTimeout(r, 50));
    await cache.set("k3", payload("theirs"), 60, 60);
    await lock.release("k3", token ?? "");
    const outcome = await waiting;
    expect(outcome.role).toBe("remote");
    expect(outcome.payload.metadata.appliedFilters).toEqual(["theirs"]);
    expect(computed).toBe(0);
  });

  test("a holder that never delivers: the waiter computes itself after waitMs", async () => {
    const flight = new SingleFlight({ cache, lock });
    await take("k4", 10_000);
    const started = Date.now();
    const outcome = await flight.run("k4", OPTS, async () => payload("mine"), storeIn("k4"));
    const waited = Date.now() - started;
    expect(outcome.role).toBe("leader");
    expect(waited).toBeGreaterThanOrEqual(OPTS.waitMs - 20);
    expect(waited).toBeLessThan(OPTS.waitMs + 400);
  });

  test("a holder that lets go without a value (its call failed): a waiter takes over at once", async () => {
    const flight = new SingleFlight({ cache, lock });
    const token = await take("k5", 10_000);
    setTimeout(() => void lock.release("k5", token ?? ""), 30);
    const started = Date.now();
    const outcome = await flight.run("k5", OPTS, async () => payload("mine"), storeIn("k5"));
    expect(outcome.role).toBe("leader");
    expect(Date.now() - started).toBeLessThan(OPTS.waitMs);
  });

  test("the leader answers first, stores, then releases; joiners meanwhile get the result", async () => {
    const flight = new SingleFlight({ cache, lock });
    let finishStore: () => void = () => undefined;
    const storeGate = new Promise<void>((resolve) => {
      finishStore = resolve;
    });
    let computed = 0;
    const store = async (p: CachedPayload) => {
      await storeGate;
      await cache.set("k8", p, 60, 0);
    };
    const first = await flight.run(
      "k8",
      OPTS,
      async () => {
        computed++;
        return payload("mine");
      },
      store,
    );
    expect(first.role).toBe("leader");
    // Answered while the store is still pending: the lock is still held, so other replicas keep waiting…
    expect(await lock.held("k8")).toBe(true);
    expect(await cache.get("k8")).toBeUndefined();
    // …and an identical request here is served the finished result without computing.
    const joiner = await flight.run("k8", OPTS, async () => payload("again"), store);
    expect(joiner).toEqual({ payload: payload("mine"), role: "remote" });
    finishStore();
    await flight.idle();
    expect((await cache.get("k8"))?.payload).toEqual(payload("mine"));
    expect(await lock.held("k8")).toBe(false);
    expect(flight.size).toBe(0);
    expect(computed).toBe(1);
  });

  test("a store that throws, even synchronously, is only a failed write: the lock is released", async () => {
    const flight = new SingleFlight({ cache, lock });
    const outcome = await flight.run(
      "k10",
      OPTS,
      async () => payload("mine"),
      () => {
        throw new Error("cache refused");
      },
    );
    expect(outcome.role).toBe("leader");
    await flight.idle();
    expect(await lock.held("k10")).toBe(false);
    expect(flight.size).toBe(0);
  });

  test("ttlSeconds 0 (nothing fresh to share): requests during the store compute again, never 'remote'", async () => {
    const flight = new SingleFlight({ cache, lock });
    const noShare = { ...OPTS, shareAcrossReplicas: false };
    let finishStore: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => {
      finishStore = resolve;
    });
    let computed = 0;
    const compute = async () => {
      computed++;
      return payload("mine");
    };
    expect((await flight.run("k11", noShare, compute, () => gate)).role).toBe("leader");
    expect((await flight.run("k11", noShare, compute, async () => undefined)).role).toBe("leader");
    expect(computed).toBe(2);
    finishStore();
    await flight.idle();
    expect(flight.size).toBe(0);
  });

  test("the leader releases its lock after computing, and after failing", async () => {
    const flight = new SingleFlight({ cache, lock });
    await flight.run("k6", OPTS, async () => payload("ok"), storeIn("k6"));
    await flight.idle();
    expect(await lock.held("k6")).toBe(false);
    await expect(
      flight.run(
        "k7",
        OPTS,
        async () => {
          throw new Error("backend down");
        },
        storeIn("k7"),
      ),
    ).rejects.toThrow("backend down");
    expect(await lock.held("k7")).toBe(false);
    expect(flight.size).toBe(0);
  });
});
