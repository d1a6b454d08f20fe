import type { RedisPayloadCache } from "../cache/redis";
import type { RedisBackendCooldown } from "../limits/cooldown-redis";
import type { RedisRateLimiter } from "../limits/redis";
import type { RateDecision } from "../limits/types";
import type { RedisConnection } from "../redis/connection";
import { defineScript, type RedisScript } from "../redis/scripts";
import type { Admission, AdmissionChecks, AdmissionRequest } from "./admission";
import { SeparateAdmission } from "./admission";

/**
 * KEYS: the per-user limit's counter, the payload cache entry, and — when they share a node (one Redis or Sentinel's
 * master, not a Cluster) — the backend's cooldown.
 * ARGV: the window in seconds, the rule's points, "1" to read the cache.
 * The counter lines are rate-limiter-flexible's own increment (RateLimiterRedis' incrTtlLuaScript, 1 point), on
 * the same key, so requests counted here and by RateLimiterRedis share one window. Every command runs under
 * `pcall`: a part that fails (a write refused by an out-of-memory or read-only Redis, a key of the wrong type) is
 * reported for that part alone, as the three separate calls did — consumed -1 and the error text mean "decide the
 * limit with the insurance", a failed cooldown read counts as none, a failed cache read as a miss. The cache is
 * read only when the request may be admitted.
 * Returns {consumed | -1, counter ttl ms, cooldown pttl (-2 when not read), cached value | false, error text | false}.
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
if KEYS[3] then
  cooling = redis.pcall('pttl', KEYS[3])
  if failed(cooling) then cooling = -2 end
end
local cached = false
if ARGV[3] == '1' and consumed <= tonumber(ARGV[2]) and cooling <= 0 then
  cached = redis.pcall('get', KEYS[2])
  if failed(cached) then cached = false end
end
return {consumed, ttl, cooling, cached, problem}`;

/** The script's reply as bytes: the cached value stays a Buffer (a hit answers from it, never decoded). */
type AdmitReply = [number, number, number, Buffer | null, Buffer | null];

function isReply(v: unknown): v is AdmitReply {
  return (
    Array.isArray(v) &&
    typeof v[0] === "number" &&
    typeof v[1] === "number" &&
    typeof v[2] === "number" &&
    (v[3] === null || Buffer.isBuffer(v[3])) &&
    (v[4] === null || v[4] === undefined || Buffer.isBuffer(v[4]))
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
 * and cache entry (one slot per user, src/redis/keys.ts), so the script gets two keys and the cooldown is read by a
 * PTTL sent at the same time: still one round trip of waiting, two commands.
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
    this.admit = redis.cluster
      ? defineScript(redis.client, "memgateAdmitUser", 2, ADMIT, "buffers")
      : defineScript(redis.client, "memgateAdmit", 3, ADMIT, "buffers");
    this.separate = new SeparateAdmission(parts);
  }

  check(req: AdmissionRequest): AdmissionChecks {
    if (!this.redis.ready()) return this.separate.check(req);
    const { limiter, cooldown, cache } = this.parts;
    const consume = limiter.prepare(req.rateKey, req.rule);
    // Without a cache read (explain) the counter's key stands in for the entry's: a Cluster refuses keys of two slots.
    const entry = req.cacheKey === undefined ? consume.redisKey : cache.redisKey(req.cacheKey);
    const keys = [consume.redisKey, entry];
    const apart = this.redis.cluster ? cooldown.remaining(req.cooldownKey) : undefined;
    if (apart === undefined) keys.push(cooldown.redisKey(req.cooldownKey));
    const reply = this.admit(keys, [
      req.rule.durationSeconds,
      req.rule.points,
      req.cacheKey === undefined ? "0" : "1",
    ]).then(
      (v): AdmitReply | undefined => {
        if (isReply(v)) {
          if (v[4] !== null && v[4] !== undefined)
            this.redis.failed("admission (rate limit)", new Error(v[4].toString("utf8")));
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
    return { limit, cooldownMs, cached };
  }
}
