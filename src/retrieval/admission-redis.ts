import { userCacheKeysOf } from "../cache/key";
import { newFlightToken, type RedisFlightLock } from "../cache/lock-redis";
import type { RedisPayloadCache } from "../cache/redis";
import type { PreAcquisition } from "../cache/singleflight";
import type { RedisBackendCooldown } from "../limits/cooldown-redis";
import type { RedisRateLimiter } from "../limits/redis";
import type { RateDecision } from "../limits/types";
import type { RedisConnection } from "../redis/connection";
import { defineScript, type RedisScript } from "../redis/scripts";
import type { Admission, AdmissionChecks, AdmissionRequest } from "./admission";
import { SeparateAdmission } from "./admission";

/**
 * KEYS: the per-user limit's counter, the payload cache entry, the entry's single-flight lock, the user's cache
 * generation, and — when they share a node (one Redis or Sentinel's master, not a Cluster) — the backend's cooldown.
 * ARGV: the window in seconds, the rule's points, "1" to read the cache, the flight lock's token ('' = do not take
 * it), the lock's time to live in ms, "1" to read the generation with the lock.
 * The counter lines are rate-limiter-flexible's own increment (RateLimiterRedis' incrTtlLuaScript, 1 point), on
 * the same key, so requests counted here and by RateLimiterRedis share one window. Every command runs under
 * `pcall`: a part that fails (a write refused by an out-of-memory or read-only Redis, a key of the wrong type) is
 * reported for that part alone, as the three separate calls did — consumed -1 and the error text mean "decide the
 * limit with the insurance", a failed cooldown read counts as none, a failed cache read as a miss. The cache is
 * read only when the request may be admitted.
 * A miss (the cache read, and no entry at all) also tries the entry's single-flight lock (src/cache/lock-redis.ts:
 * `SET NX PX`, the same key and token format) and, when it got it, reads the user's cache generation: what the
 * lock's own script and the generation read would do as the flight starts, in this round trip (issue 29). A
 * request that gets the lock here and then does not fly (the insurance limit refused it) releases it.
 * Returns {consumed | -1, counter ttl ms, cooldown pttl (-2 when not read), cached value | false, error text | false,
 * lock: 1 taken | 0 held by another | -1 failed | -2 not tried, generation | false (not read or failed)}.
 */
const ADMIT = `local function failed(r) return type(r) == 'table' and r.err ~= nil end
local problem = false
local consumed = -1
local ttl = 0
local r = redis.pcall('set', KEYS[1], 0, 'EX', ARGV[1], 'NX')
if failed(r) then problem = r.err else
  r = redis.pcall('incrby', KEYS[1], 1)
  if failed(r) then problem = r.err else
    consumed = r
    ttl = redis.pcall('pttl', KEYS[1])
    if failed(ttl) then problem = ttl.err ttl = 1000 * ARGV[1]
    elseif ttl == -1 then redis.pcall('expire', KEYS[1], ARGV[1]) ttl = 1000 * ARGV[1] end
  end
end
local cooling = -2
if KEYS[5] then
  cooling = redis.pcall('pttl', KEYS[5])
  if failed(cooling) then cooling = -2 end
end
local cached = false
local lock = -2
local generation = false
if ARGV[3] == '1' and consumed <= tonumber(ARGV[2]) and cooling <= 0 then
  cached = redis.pcall('get', KEYS[2])
  if failed(cached) then cached = false
  elseif cached == false and ARGV[4] ~= '' then
    r = redis.pcall('set', KEYS[3], ARGV[4], 'PX', ARGV[5], 'NX')
    if failed(r) then lock = -1 elseif r then lock = 1 else lock = 0 end
    if lock == 1 and ARGV[6] == '1' then
      generation = redis.pcall('get', KEYS[4])
      if failed(generation) then generation = false elseif generation == false then generation = '0' end
    end
  end
end
return {consumed, ttl, cooling, cached, problem, lock, generation}`;

/** The script's reply as bytes: the cached value stays a Buffer (a hit answers from it, never decoded). */
type AdmitReply = [number, number, number, Buffer | null, Buffer | null, number, Buffer | null];

function isReply(v: unknown): v is AdmitReply {
  return (
    Array.isArray(v) &&
    typeof v[0] === "number" &&
    typeof v[1] === "number" &&
    typeof v[2] === "number" &&
    (v[3] === null || Buffer.isBuffer(v[3])) &&
    (v[4] === null || v[4] === undefined || Buffer.isBuffer(v[4])) &&
    typeof v[5] === "number" &&
    (v[6] === null || Buffer.isBuffer(v[6]))
  );
}

/**
 * A retrieval's admission in one Redis round trip (issue 8: the cache read and the rate-limit consume together):
 * one script consumes the per-user limit, reads the backend cooldown and — when both admit — the payload cache,
 * where three commands went before. Same keys, same decisions and the same degradation as the separate calls: with
 * Redis unusable (down, or suspended after timeouts) or the script failing, the insurance limiter, this replica's
 * cooldown and a cache miss answer, as they do for RedisRateLimiter, RedisBackendCooldown and RedisPayloadCache.
 *
 * On a Redis Cluster the cooldown (one key per tenant and backend) lives in another slot than the user's counter
 * and cache entry (one slot per user, src/redis/keys.ts), so the script gets four keys and the cooldown is read by a
 * PTTL sent at the same time: still one round trip of waiting, two commands. The entry's flight lock and the user's
 * generation share the user's slot (their keys carry its hash tag).
 *
 * With `lock` (the replicas' single-flight lock) and a request asking for it (`flight`), a miss also tries the
 * lock and reads the user's generation in the same script (`flight` in the checks): the flight then starts without
 * its own lock script and generation read (src/cache/singleflight.ts `PreAcquisition`), two round trips fewer.
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
      lock?: RedisFlightLock;
    },
  ) {
    this.admit = redis.cluster
      ? defineScript(redis.client, "memgateAdmitUserV2", 4, ADMIT, "buffers")
      : defineScript(redis.client, "memgateAdmitV2", 5, ADMIT, "buffers");
    this.separate = new SeparateAdmission(parts);
  }

  check(req: AdmissionRequest): AdmissionChecks {
    if (!this.redis.ready()) return this.separate.check(req);
    const { limiter, cooldown, cache, lock } = this.parts;
    const consume = limiter.prepare(req.rateKey, req.rule);
    // Without a cache read (explain) the counter's key stands in for the entry's: a Cluster refuses keys of two slots.
    const entry = req.cacheKey === undefined ? consume.redisKey : cache.redisKey(req.cacheKey);
    // The lock is tried only with a cache read; its token is made here, as RedisFlightLock.acquire makes one.
    const flight = req.cacheKey !== undefined && req.flight !== undefined && lock !== undefined;
    const token = flight ? newFlightToken() : "";
    const user = req.cacheKey === undefined ? undefined : userCacheKeysOf(req.cacheKey);
    const keys = [
      consume.redisKey,
      entry,
      flight && req.cacheKey !== undefined && lock !== undefined ? lock.redisKey(req.cacheKey) : entry,
      user === undefined ? entry : this.redis.key(user.generation),
    ];
    const apart = this.redis.cluster ? cooldown.remaining(req.cooldownKey) : undefined;
    if (apart === undefined) keys.push(cooldown.redisKey(req.cooldownKey));
    const reply = this.admit(keys, [
      req.rule.durationSeconds,
      req.rule.points,
      req.cacheKey === undefined ? "0" : "1",
      token,
      flight ? Math.ceil(req.flight?.lockMs ?? 0) : 0,
      // A key of no user has generation 0 (RedisPayloadCache.generation): nothing to read.
      user === undefined ? "0" : "1",
    ]).then(
      (v): AdmitReply | undefined => {
        if (isReply(v)) {
          if (v[4] !== null && v[4] !== undefined)
            this.redis.failed("admission (rate limit)", new Error(v[4].toString("utf8")));
          if (v[5] === -1)
            this.redis.failed("admission (flight lock)", new Error("the lock could not be set"));
          return v;
        }
        this.redis.failed("admission", new Error("unexpected reply from the admission script"));
        return undefined;
      },
      (err: unknown): undefined => {
        this.redis.failed("admission", err);
        return undefined;
      },
    );
    const limit = reply.then((r): Promise<RateDecision> | RateDecision =>
      r === undefined || r[0] < 0 ? consume.insurance() : consume.fromCounter(r[0], r[1]),
    );
    const cooldownMs =
      apart ??
      reply.then((r) =>
        r === undefined ? cooldown.localRemaining(req.cooldownKey) : cooldown.combine(req.cooldownKey, r[2]),
      );
    const cached =
      req.cacheKey === undefined
        ? undefined
        : reply.then((r) => (r === undefined ? undefined : cache.lookup(r[3])));
    const checks: AdmissionChecks = { limit, cooldownMs, cached };
    if (flight)
      checks.flight = reply.then((r) => (r === undefined ? undefined : preAcquisition(r, token, user)));
    return checks;
  }
}

/** The lock part of the script's reply: taken (with the generation when read) or held by another; else undefined. */
function preAcquisition(r: AdmitReply, token: string, user: unknown): PreAcquisition | undefined {
  if (r[5] === 0) return { token: null };
  if (r[5] !== 1) return undefined;
  if (user === undefined) return { token, generation: 0 };
  const generation = r[6] === null ? Number.NaN : Number(r[6].toString("latin1"));
  return Number.isSafeInteger(generation) ? { token, generation } : { token };
}
