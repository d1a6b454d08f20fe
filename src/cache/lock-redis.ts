import { randomFillSync } from "node:crypto";
import type { RedisConnection } from "../redis/connection";
import { defineScript, type RedisScript } from "../redis/scripts";
import type { RedisPayloadCache } from "./redis";
import type { FlightAcquisition, FlightLock } from "./singleflight";

/** Deletes the lock only if it still holds our token: a holder whose lock expired never frees someone else's. */
const RELEASE = `if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call("DEL", KEYS[1]) else return 0 end`;

/**
 * Takes the lock and reads the cache entry it guards, in one step: {1 taken | 0 held by another, value | false}.
 * An unreadable entry (e.g. a key of another type) is a miss; it never keeps the lock from being taken.
 */
const ACQUIRE = `local cached = redis.pcall("GET", KEYS[2])
if type(cached) == "table" then cached = false end
local taken = redis.call("SET", KEYS[1], ARGV[1], "PX", ARGV[2], "NX")
if taken then return {1, cached} else return {0, cached} end`;

/** The key (without the connection's prefix) of a cache entry's lock: in the entry's slot, by its hash tag. */
export function flightLockKey(key: string): string {
  return `flight:${key}`;
}

/** Random bytes for tokens, filled 4 KiB at a time (as Node's `randomUUID` pools its bytes). */
const TOKEN_BYTES = 16;
const pool = Buffer.alloc(TOKEN_BYTES * 256);
let poolAt = pool.length;

/**
 * A lock token: 16 random bytes (the system's CSPRNG), base64url. The admission script takes the lock with one of
 * these on every Redis cache read, hits included: taken from a pool instead of one `randomBytes` call (a crypto job,
 * a Buffer) each, ~2 % of a Redis hit's CPU (issue 29).
 */
export function newFlightToken(): string {
  if (poolAt + TOKEN_BYTES > pool.length) {
    randomFillSync(pool);
    poolAt = 0;
  }
  const token = pool.toString("base64url", poolAt, poolAt + TOKEN_BYTES);
  poolAt += TOKEN_BYTES;
  return token;
}

/**
 * The single-flight lock in Redis: `SET <prefix>flight:<cache key> <token> NX PX <ttl>`, taken by a script that also
 * reads the cache entry it guards (one round trip).
 */
export class RedisFlightLock implements FlightLock {
  private readonly unlock: RedisScript;
  private readonly acquireScript: RedisScript;

  /** `cache`: the payload cache whose entries the locks guard (`acquire` reads them). */
  constructor(
    private readonly redis: RedisConnection,
    private readonly cache: RedisPayloadCache,
  ) {
    this.unlock = defineScript(redis.client, "memgateFlightRelease", 1, RELEASE);
    this.acquireScript = defineScript(redis.client, "memgateFlightAcquire", 2, ACQUIRE);
  }

  async acquire(key: string, ttlMs: number): Promise<FlightAcquisition> {
    const { cache } = this;
    if (!this.redis.ready()) return { token: undefined, cached: undefined };
    const token = newFlightToken();
    try {
      const reply = await this.acquireScript(
        [this.redisKey(key), cache.redisKey(key)],
        [token, Math.ceil(ttlMs)],
      );
      if (!Array.isArray(reply)) throw new Error("unexpected reply from the lock script");
      const raw: unknown = reply[1];
      const cached = cache.lookup(typeof raw === "string" ? raw : null);
      return { token: reply[0] === 1 ? token : null, cached };
    } catch (err) {
      this.redis.failed("flight lock", err);
      return { token: undefined, cached: undefined };
    }
  }

  /** The Redis key of an entry's lock (in the entry's slot: the cache key carries the user's hash tag). */
  redisKey(key: string): string {
    return this.redis.key(flightLockKey(key));
  }

  async held(key: string): Promise<boolean | undefined> {
    if (!this.redis.ready()) return undefined;
    try {
      return (await this.redis.client.exists(this.redisKey(key))) === 1;
    } catch (err) {
      this.redis.failed("flight lock", err);
      return undefined;
    }
  }

  async release(key: string, token: string): Promise<void> {
    if (!this.redis.ready()) return;
    try {
      await this.unlock([this.redisKey(key)], [token]);
    } catch (err) {
      this.redis.failed("flight unlock", err);
    }
  }
}
