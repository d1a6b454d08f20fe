import type { RedisPayloadCache } from "../cache/redis";
import type { RedisRateLimiter } from "../ratelimit/redis";
import type { RateDecision } from "../ratelimit/types";
import type { RedisConnection } from "../redis/connection";
import { defineScript, type RedisScript } from "../redis/scripts";
import type { Admission, AdmissionChecks, AdmissionRequest } from "./admission";
import { SeparateAdmission } from "./admission";
import type { RedisBackendCooldown } from "./cooldown-redis";

/**
 * KEYS: the per-user limit's counter, the backend's cooldown, the payload cache entry.
 * ARGV: the window in seconds, the rule's points, "1" to read the cache.
 * The first four lines are rate-limiter-flexible's own increment (RateLimiterRedis' incrTtlLuaScript, 1 point), on
 * the same key, so requests counted here and by RateLimiterRedis share one window. The cache is read only when
 * the request is admitted. Returns {consumed, counter ttl ms, cooldown pttl, cached value or false}.
 */
const ADMIT = `redis.call('set', KEYS[1], 0, 'EX', ARGV[1], 'NX')
local consumed = redis.call('incrby', KEYS[1], 1)
local ttl = redis.call('pttl', KEYS[1])
if ttl == -1 then redis.call('expire', KEYS[1], ARGV[1]) ttl = 1000 * ARGV[1] end
local cooling = redis.call('pttl', KEYS[2])
local cached = false
if ARGV[3] == '1' and consumed <= tonumber(ARGV[2]) and cooling <= 0 then cached = redis.call('get', KEYS[3]) end
return {consumed, ttl, cooling, cached}`;

type AdmitReply = [number, number, number, string | null];

function isReply(v: unknown): v is AdmitReply {
  return (
    Array.isArray(v) &&
    typeof v[0] === "number" &&
    typeof v[1] === "number" &&
    typeof v[2] === "number" &&
    (v[3] === null || typeof v[3] === "string")
  );
}

/**
 * A retrieval's admission in one Redis round trip (issue 8: the cache read and the rate-limit consume together):
 * one script consumes the per-user limit, reads the backend cooldown and — when both admit — the payload cache,
 * where three commands went before. Same keys, same decisions and the same degradation as the separate calls: with
 * Redis unusable (down, or suspended after timeouts) or the script failing, the insurance limiter, this replica's
 * cooldown and a cache miss answer, as they do for RedisRateLimiter, RedisBackendCooldown and RedisPayloadCache.
 */
export class RedisAdmission implements Admission {
  private readonly admit: RedisScript;
  private readonly separate: SeparateAdmission;

  constructor(
    private readonly redis: RedisConnection,
    private readonly parts: {
      limiter: RedisRateLimiter;
      cooldown: RedisBackendCooldown;
      cache: RedisPayloadCache;
    },
  ) {
    this.admit = defineScript(redis.client, "memgateAdmit", 3, ADMIT);
    this.separate = new SeparateAdmission(parts);
  }

  check(req: AdmissionRequest): AdmissionChecks {
    if (!this.redis.ready()) return this.separate.check(req);
    const { limiter, cooldown, cache } = this.parts;
    const consume = limiter.prepare(req.rateKey, req.rule);
    const reply = this.admit(
      [consume.redisKey, cooldown.redisKey(req.cooldownKey), cache.redisKey(req.cacheKey ?? "")],
      [req.rule.durationSeconds, req.rule.points, req.cacheKey === undefined ? "0" : "1"],
    ).then(
      (v): AdmitReply | undefined => {
        if (isReply(v)) return v;
        this.redis.failed("admission", new Error("unexpected reply from the admission script"));
        return undefined;
      },
      (err: unknown): undefined => {
        this.redis.failed("admission", err);
        return undefined;
      },
    );
    const limit = reply.then((r): Promise<RateDecision> | RateDecision =>
      r === undefined ? consume.insurance() : consume.fromCounter(r[0], r[1]),
    );
    const cooldownMs = reply.then((r) =>
      r === undefined ? cooldown.localRemaining(req.cooldownKey) : cooldown.combine(req.cooldownKey, r[2]),
    );
    const cached =
      req.cacheKey === undefined
        ? undefined
        : reply.then((r) => (r === undefined ? undefined : cache.lookup(r[3])));
    return { limit, cooldownMs, cached };
  }
}
