import { MemoryPayloadCache } from "../cache/memory";
import { RedisPayloadCache } from "../cache/redis";
import { SingleFlight } from "../cache/singleflight";
import type { PayloadCache } from "../cache/types";
import type { Env } from "../config/env";
import type { KeyLimits } from "../http/rate-limit";
import type { ReadinessCheck } from "../http/routes/ops";
import type { Logger } from "../logging/logger";
import { MemoryRateLimiter } from "../ratelimit/memory";
import { RedisRateLimiter } from "../ratelimit/redis";
import type { RateLimiter } from "../ratelimit/types";
import { RedisConnection } from "../redis/connection";
import { RedisFlightLock } from "../redis/lock";
import { type BackendCooldown, MemoryBackendCooldown } from "../retrieval/cooldown";
import { RedisBackendCooldown } from "../retrieval/cooldown-redis";

/** The state replicas share through Redis when REDIS_URL is set, and keep in-process otherwise (CONTRACT §9). */
export interface SharedState {
  cache: PayloadCache;
  /** Per-user retrieval rate (policy `rateLimit.perUser`). */
  limiter: RateLimiter;
  /** Per-API-key request rate. */
  keyLimits: KeyLimits;
  cooldown: BackendCooldown;
  flights: SingleFlight;
  /** Extra /readyz checks (Redis: degraded, never not-ready, when unreachable). */
  readiness: Array<() => Promise<ReadinessCheck>>;
  redis?: RedisConnection;
  close(): Promise<void>;
}

export function createSharedState(env: Env, logger: Logger): SharedState {
  const defaultRule = env.MEMGATE_KEY_RATE_LIMIT;
  if (env.REDIS_URL === undefined) {
    const cache = new MemoryPayloadCache();
    return {
      cache,
      limiter: new MemoryRateLimiter("user"),
      keyLimits: { limiter: new MemoryRateLimiter("key"), defaultRule },
      cooldown: new MemoryBackendCooldown(),
      flights: new SingleFlight({ cache }),
      readiness: [],
      async close() {},
    };
  }
  const redis = new RedisConnection({ url: env.REDIS_URL, prefix: env.MEMGATE_REDIS_PREFIX, logger });
  const cache = new RedisPayloadCache(redis);
  return {
    cache,
    limiter: new RedisRateLimiter(redis, "user"),
    keyLimits: { limiter: new RedisRateLimiter(redis, "key"), defaultRule },
    cooldown: new RedisBackendCooldown(redis),
    flights: new SingleFlight({ cache, lock: new RedisFlightLock(redis) }),
    readiness: [() => redis.check()],
    redis,
    close: () => redis.close(),
  };
}
