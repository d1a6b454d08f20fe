import { payloadCacheKey } from "../../src/cache/key";
import { RedisFlightLock } from "../../src/cache/lock-redis";
import { RedisPayloadCache } from "../../src/cache/redis";
import { RedisBackendCooldown } from "../../src/limits/cooldown-redis";
import { RedisRateLimiter } from "../../src/limits/redis";
import { silentLogger } from "../../src/logging/logger";
import { RedisConnection } from "../../src/redis/connection";
import { slotTag, userScope } from "../../src/redis/keys";
import { parseAddresses } from "../../src/redis/topology";
import { RedisAdmission } from "../../src/retrieval/admission-redis";
import { waitFor } from "./redis-helpers";
import { type Answer, replicaSuite } from "./replicas";
import { RedisClusterServers } from "./servers";

/**
 * Redis Cluster (3 masters + 3 replicas, started here from redis-server): the multi-replica suite, with a master
 * killed under load and its replica promoted by the cluster itself; and the key design that makes the scripts
 * legal on a Cluster — every script's keys in one slot, users spread over the slots.
 */
let servers: RedisClusterServers | undefined;
const PREFIX = "memgate-test:keys:";

const masterNow = (cluster: RedisClusterServers, key: string) => cluster.masterOf(key).catch(() => undefined);

replicaSuite(
  "a Redis Cluster (3 masters, 3 replicas)",
  async () => {
    const cluster = await RedisClusterServers.start();
    servers = cluster;
    return {
      // Two seeds: the gateways discover the other four nodes themselves.
      env: { REDIS_CLUSTER_NODES: cluster.seeds.split(",").slice(0, 2).join(",") },
      async killMasterOf(tenant, user) {
        const key = `probe:${slotTag(userScope(tenant, user))}`;
        const master = await cluster.masterOf(key);
        await master.kill();
        await waitFor(
          "a replica to take the slot over",
          async () => {
            const now = await masterNow(cluster, key);
            return now !== undefined && now !== master;
          },
          20_000,
        );
        await cluster.waitHealthy();
        return { killed: master.port, promoted: (await cluster.masterOf(key)).port };
      },
      stop: () => cluster.stop(),
    };
  },
  ({ three, ask, owner }) => {
    test("a slot moved to another master under traffic (ASK, TRYAGAIN, then MOVED): answers go on, the entry moves with it", async () => {
      const [a, b, c] = three();
      const query = "what does the user order?";
      const filled = await ask(a, "red", "u-7", query);
      expect(filled).toMatchObject({ status: 200, cache: "miss" });
      const key = `probe:${slotTag(userScope("red", "u-7"))}`;
      const during: Answer[] = [];
      const target = await servers?.moveSlot(key, async () => {
        for (const g of [a, b, c]) {
          during.push(await ask(g, "red", "u-7", query));
          during.push(await ask(g, "red", "u-7", `while moving ${during.length}`));
        }
      });
      expect(await servers?.masterOf(key)).toBe(target);
      // The slot's keys (the user's counter and entry) are on the new master now, none left on the old one.
      expect(await servers?.keysInSlot(key)).toEqual({ owner: expect.any(Number), others: 0 });
      expect((await servers?.keysInSlot(key))?.owner).toBeGreaterThanOrEqual(2);
      expect(during.map((x) => x.status)).toEqual(Array(6).fill(200));
      for (const answer of during)
        for (const m of answer.contents) expect(m.startsWith(owner("red", "u-7"))).toBe(true);
      // After the move every process reaches the entry on its new master (MOVED, then the new slot map). A process
      // may first degrade a request or two — a short Redis pause after a timeout on TRYAGAIN during the move
      // ("bypass"), or a command that ran out of redirections while its slot map was stale ("miss") — never an error.
      for (const g of [b, c, a]) {
        await waitFor(
          "a hit on the moved entry",
          async () => {
            const after = await ask(g, "red", "u-7", query);
            expect(after).toMatchObject({ status: 200, contents: filled.contents });
            return after.cache === "hit";
          },
          15_000,
        );
      }
    }, 60_000);

    describe("the key design", () => {
      let conn: RedisConnection;
      let failures: string[];
      const rule = { points: 5, durationSeconds: 60 };

      beforeAll(async () => {
        const nodes = parseAddresses(servers?.seeds ?? "");
        if (nodes === undefined) throw new Error("the cluster did not start");
        conn = new RedisConnection({
          target: { kind: "cluster", nodes, tls: false },
          prefix: PREFIX,
          logger: silentLogger(),
        });
        failures = [];
        const failed = conn.failed.bind(conn);
        conn.failed = (what, err) => {
          failures.push(`${what}: ${err instanceof Error ? err.message : String(err)}`);
          failed(what, err);
        };
        await waitFor("the cluster client", () => conn.ready());
      });
      afterAll(() => conn.close());

      test("a user's counter, cache entry and flight lock share one slot; the admission and lock scripts run", async () => {
        const cache = new RedisPayloadCache(conn);
        const limiter = new RedisRateLimiter(conn, "user");
        const cooldown = new RedisBackendCooldown(conn);
        const admission = new RedisAdmission(conn, { limiter, cooldown, cache });
        const lock = new RedisFlightLock(conn, cache);
        const cacheKey = payloadCacheKey({
          tenantId: "red",
          backend: "zep",
          userId: "ana",
          query: "q",
          policyHash: "h",
        });
        const rateKey = userScope("red", "ana");
        const slots = await servers?.slots([
          limiter.prepare(rateKey, rule).redisKey,
          cache.redisKey(cacheKey),
          `${PREFIX}flight:${cacheKey}`,
        ]);
        expect(new Set(slots).size).toBe(1);

        const payload = { memories: [], systemPrompt: "", metadata: { cache: "miss" } } as never;
        await cache.set(cacheKey, payload, 60, 60);
        const first = admission.check({ rateKey, rule, cooldownKey: "red:zep", cacheKey });
        expect(await first.limit).toMatchObject({ allowed: true, remaining: 4 });
        expect(await first.cooldownMs).toBe(0);
        expect(await first.cached).toMatchObject({ fresh: true, payload });

        await cooldown.start("red:zep", 5000);
        const cooling = admission.check({ rateKey, rule, cooldownKey: "red:zep", cacheKey: undefined });
        expect(await cooling.limit).toMatchObject({ allowed: true, remaining: 3 });
        expect(await cooling.cooldownMs).toBeGreaterThan(4000);

        const taken = await lock.acquire(cacheKey, 5000);
        expect(taken.token).toEqual(expect.any(String));
        expect(taken.cached).toMatchObject({ fresh: true });
        expect((await lock.acquire(cacheKey, 5000)).token).toBeNull();
        expect(await lock.held(cacheKey)).toBe(true);
        await lock.release(cacheKey, taken.token as string);
        expect(await lock.held(cacheKey)).toBe(false);
        expect(failures).toEqual([]);
      });

      test("users spread over the slots and every master", async () => {
        const keys = Array.from(
          { length: 300 },
          (_, i) => `x:${slotTag(userScope(i % 2 ? "red" : "blue", `u-${i}`))}`,
        );
        const slots = (await servers?.slots(keys)) ?? [];
        expect(new Set(slots).size).toBeGreaterThan(290);
        const masters = new Set<number>();
        for (const key of keys.slice(0, 30)) masters.add((await servers?.masterOf(key))?.port ?? 0);
        expect(masters.size).toBe(3);
      });
    });
  },
);
