import { RedisFlightLock } from "../cache/lock-redis";
import { MemoryPayloadCache } from "../cache/memory";
import { MemoryFlightLock } from "../cache/memory-lock";
import { RedisPayloadCache } from "../cache/redis";
import { SingleFlight } from "../cache/singleflight";
import type { PayloadCache } from "../cache/types";
import type { Env } from "../config/env";
import type { KeyLimits } from "../http/rate-limit";
import type { ReadinessCheck } from "../http/routes/ops";
import { type BackendCooldown, MemoryBackendCooldown } from "../limits/cooldown";
import { RedisBackendCooldown } from "../limits/cooldown-redis";
import { MemoryRateLimiter } from "../limits/memory";
import { RedisRateLimiter } from "../limits/redis";
import { RedisSharedCounters, SyncedRateLimiter } from "../limits/synced";
import type { RateLimiter } from "../limits/types";
import type { Logger } from "../logging/logger";
import { RedisConnection } from "../redis/connection";
import { redisTarget } from "../redis/topology";
import { MemoryReinforcementStore } from "../reinforcement/memory";
import { RedisReinforcementStore } from "../reinforcement/redis";
import type { ReinforcementStore } from "../reinforcement/types";
import { type Admission, SeparateAdmission } from "../retrieval/admission";
import { RedisAdmission } from "../retrieval/admission-redis";

/**
 * The state replicas share through Redis when one is configured (REDIS_URL, REDIS_CLUSTER_NODES or
 * REDIS_SENTINELS), and keep in-process otherwise (docs/configuration.md#several-replicas-redis).
 */
export interface SharedState {
  cache: PayloadCache;
  /** Per-user retrieval rate (policy `rateLimit.perUser`). */
  limiter: RateLimiter;
  /** Per-API-key request rate. */
  keyLimits: KeyLimits;
  cooldown: BackendCooldown;
  /** A retrieval's limit, cooldown and cache checks (with Redis: one round trip). */
  admission: Admission;
  flights: SingleFlight;
  /** How often each memory was kept (policy `ranking.reinforcement`). */
  reinforcement: ReinforcementStore;
  /** Extra /readyz checks (Redis: degraded, never not-ready, when unreachable). */
  readiness: Array<() => Promise<ReadinessCheck>>;
  redis?: RedisConnection;
  close(): Promise<void>;
}

export function createSharedState(env: Env, logger: Logger): SharedState {
  const defaultRule = env.MEMGATE_KEY_RATE_LIMIT;
  const target = redisTarget(env);
  if (target === undefined) {
    const cache = new MemoryPayloadCache();
    const limiter = new MemoryRateLimiter("user");
    const cooldown = new MemoryBackendCooldown();
    return {
      cache,
      limiter,
      keyLimits: { limiter: new MemoryRateLimiter("key"), defaultRule },
      cooldown,
      admission: new SeparateAdmission({ limiter, cooldown, cache }),
      // One replica: the in-process dedup already shares every flight, so this lock is not contended. It is the
      // same lock path as with Redis (one code path in SingleFlight, the one its unit tests drive), at the cost of a
      // Map lookup per miss; its acquire also re-reads the cache, so a result stored since our miss is served.
      flights: new SingleFlight({ cache, lock: new MemoryFlightLock(cache) }),
      reinforcement: new MemoryReinforcementStore(),
      readiness: [],
      async close() {},
    };
  }
  const redis = new RedisConnection({
    target,
    prefix: env.MEMGATE_REDIS_PREFIX,
    logger,
    autoPipelining: env.REDIS_AUTO_PIPELINING !== "false" && env.REDIS_AUTO_PIPELINING !== "0",
  });
  const cache = new RedisPayloadCache(redis);
  const limiter = new RedisRateLimiter(redis, "user");
  const cooldown = new RedisBackendCooldown(redis);
  const exactKeyLimiter = new RedisRateLimiter(redis, "key");
  const syncMs = env.MEMGATE_KEY_LIMIT_SYNC_MS;
  // The per-key limit, counted locally and reported every syncMs (0: exact, one Redis call per request).
  const keyLimiter: RateLimiter =
    syncMs === 0
      ? exactKeyLimiter
      : new SyncedRateLimiter(new RedisSharedCounters(redis, exactKeyLimiter), syncMs);
  // One lock for the flights and the admission (which tries it with a miss: src/retrieval/admission-redis.ts).
  const lock = new RedisFlightLock(redis, cache);
  return {
    cache,
    limiter,
    keyLimits: { limiter: keyLimiter, defaultRule },
    cooldown,
    admission: new RedisAdmission(redis, { limiter, cooldown, cache, lock }),
    flights: new SingleFlight({ cache, lock }),
    reinforcement: new RedisReinforcementStore(redis),
    readiness: [() => redis.check()],
    redis,
    async close() {
      // The last batch of per-key counts first, while the connection is still open.
      await keyLimiter.close?.();
      await redis.close();
    },
  };
}
