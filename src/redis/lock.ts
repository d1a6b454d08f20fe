import { randomBytes } from "node:crypto";
import type { FlightLock } from "../cache/singleflight";
import type { RedisConnection } from "./connection";
import { defineScript, type RedisScript } from "./scripts";

/** Deletes the lock only if it still holds our token: a holder whose lock expired never frees someone else's. */
const RELEASE = `if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call("DEL", KEYS[1]) else return 0 end`;

/** The single-flight lock in Redis: `SET <prefix>flight:<cache key> <token> NX PX <ttl>`. */
export class RedisFlightLock implements FlightLock {
  private readonly unlock: RedisScript;

  constructor(private readonly redis: RedisConnection) {
    this.unlock = defineScript(redis.client, "memgateFlightRelease", 1, RELEASE);
  }

  private lockKey(key: string): string {
    return this.redis.key(`flight:${key}`);
  }

  async acquire(key: string, ttlMs: number): Promise<string | null | undefined> {
    if (!this.redis.ready()) return undefined;
    const token = randomBytes(16).toString("base64url");
    try {
      const res = await this.redis.client.set(this.lockKey(key), token, "PX", Math.ceil(ttlMs), "NX");
      return res === "OK" ? token : null;
    } catch (err) {
      this.redis.failed("flight lock", err);
      return undefined;
    }
  }

  async held(key: string): Promise<boolean | undefined> {
    if (!this.redis.ready()) return undefined;
    try {
      return (await this.redis.client.exists(this.lockKey(key))) === 1;
    } catch (err) {
      this.redis.failed("flight lock", err);
      return undefined;
    }
  }

  async release(key: string, token: string): Promise<void> {
    if (!this.redis.ready()) return;
    try {
      await this.unlock([this.lockKey(key)], [token]);
    } catch (err) {
      this.redis.failed("flight unlock", err);
    }
  }
}
