/**
 * One suite for both reinforcement stores (src/reinforcement): the in-process one and the Redis one behave the
 * same; the Redis one's key shape (Cluster slot tag) and its degraded mode are checked on their own below.
 */
import { userCacheKeys } from "../../src/cache/key";
import { silentLogger } from "../../src/logging/logger";
import { RedisConnection } from "../../src/redis/connection";
import { MemoryReinforcementStore } from "../../src/reinforcement/memory";
import { RedisReinforcementStore, reinforcementKey } from "../../src/reinforcement/redis";
import type { ReinforcementStore } from "../../src/reinforcement/types";
import { freePort, readyConnection, redisSuite, testPrefix } from "../redis/redis-helpers";

const PREFIX = testPrefix("reinforcement");

const asObject = (m: ReadonlyMap<string, number>) => Object.fromEntries([...m].sort());

const redis = redisSuite<RedisConnection>(PREFIX);

const implementations: Array<[string, () => Promise<ReinforcementStore>]> = [
  ["in-process", async () => new MemoryReinforcementStore()],
  ["redis", async () => new RedisReinforcementStore(await readyConnection(redis.open, PREFIX))],
];

describe.each(implementations)("reinforcement store (%s)", (_name, make) => {
  test("nothing counted yet: every count absent, the store available", async () => {
    const store = await make();
    const read = await store.read("acme", "u-1", ["m1", "m2"]);
    expect(read.available).toBe(true);
    expect(read.counts.size).toBe(0);
  });

  test("each add counts each id once; reads return only the ids asked for", async () => {
    const store = await make();
    await store.add("acme", "u-1", ["m1", "m2", "m1"], 60);
    await store.add("acme", "u-1", ["m1"], 60);
    const read = await store.read("acme", "u-1", ["m1", "m2", "m3"]);
    expect(asObject(read.counts)).toEqual({ m1: 2, m2: 1 });
    expect(asObject((await store.read("acme", "u-1", ["m2"])).counts)).toEqual({ m2: 1 });
  });

  test("counts belong to one tenant's user", async () => {
    const store = await make();
    await store.add("acme", "u-1", ["m1"], 60);
    expect((await store.read("acme", "u-2", ["m1"])).counts.size).toBe(0);
    expect((await store.read("globex", "u-1", ["m1"])).counts.size).toBe(0);
  });

  test("an empty add or read is a no-op; ids longer than 256 characters are not counted", async () => {
    const store = await make();
    await store.add("acme", "u-1", [], 60);
    const long = "x".repeat(257);
    await store.add("acme", "u-1", [long, "ok"], 60);
    expect((await store.read("acme", "u-1", [])).counts.size).toBe(0);
    expect(asObject((await store.read("acme", "u-1", [long, "ok"])).counts)).toEqual({ ok: 1 });
  });

  test("a user's counts are forgotten ttlSeconds after the last increment", async () => {
    const store = await make();
    await store.add("acme", "u-ttl", ["m1"], 1);
    expect((await store.read("acme", "u-ttl", ["m1"])).counts.get("m1")).toBe(1);
    await new Promise((r) => setTimeout(r, 1100));
    expect((await store.read("acme", "u-ttl", ["m1"])).counts.size).toBe(0);
  });
});

describe("reinforcement store, Redis specifics", () => {
  test("one hash per tenant's user, in the user's Cluster slot (the tag of the user's cache keys)", async () => {
    const conn = await readyConnection(redis.open, PREFIX);
    const store = new RedisReinforcementStore(conn);
    await store.add("acme", "u-1", ["m1", "m2"], 60);
    const key = `${PREFIX}${reinforcementKey("acme", "u-1")}`;
    expect(await redis.admin().hgetall(key)).toEqual({ m1: "1", m2: "1" });
    const pttl = await redis.admin().pttl(key);
    expect(pttl).toBeGreaterThan(55_000);
    expect(pttl).toBeLessThanOrEqual(60_000);
    const tag = /\{[^}]+\}/.exec(key)?.[0];
    expect(tag).toBeDefined();
    expect(userCacheKeys("acme", "u-1").prefix).toContain(tag as string);
    expect(key).not.toContain("u-1");
  });

  test("Redis unreachable: reads report unavailable with no counts, increments are dropped, nothing throws", async () => {
    const down = new RedisConnection({
      url: `redis://127.0.0.1:${await freePort()}`,
      prefix: PREFIX,
      logger: silentLogger(),
    });
    try {
      const store = new RedisReinforcementStore(down);
      const started = Date.now();
      await expect(store.add("acme", "u-1", ["m1"], 60)).resolves.toBeUndefined();
      const read = await store.read("acme", "u-1", ["m1"]);
      expect(read).toEqual({ counts: new Map(), available: false });
      expect(Date.now() - started).toBeLessThan(200);
    } finally {
      await down.close();
    }
  });
});
