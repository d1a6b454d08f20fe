import type { RedisConnection } from "../redis/connection";
import { defineScript, type RedisScript } from "../redis/scripts";
import { type BackendCooldown, clampCooldown, MemoryBackendCooldown } from "./cooldown";

/** Sets the cooldown unless a longer one is already running (two replicas seeing two 429s keep the later end). */
const EXTEND = `local left = redis.call("PTTL", KEYS[1])
if left < tonumber(ARGV[1]) then redis.call("SET", KEYS[1], "1", "PX", ARGV[1]) end
return 1`;

/**
 * The backend cooldown shared through Redis (`<prefix>cooldown:<tenant>:<backend>` with a PX expiry), so a 429 seen
 * by one replica pauses that tenant's backend for every replica. A local copy is kept too: the replica that saw
 * the 429 honours it even if Redis is down or the write failed.
 */
export class RedisBackendCooldown implements BackendCooldown {
  private readonly local: MemoryBackendCooldown;
  private readonly extend: RedisScript;

  constructor(
    private readonly redis: RedisConnection,
    now: () => number = Date.now,
  ) {
    this.local = new MemoryBackendCooldown(now);
    this.extend = defineScript(redis.client, "memgateCooldownExtend", 1, EXTEND);
  }

  /** The Redis key of a cooldown (read by src/retrieval/admission-redis.ts in its own script). */
  redisKey(key: string): string {
    return this.redis.key(`cooldown:${key}`);
  }

  /** ms left, from Redis's PTTL of the key (-2 absent, -1 no expiry) and this replica's own copy. */
  combine(key: string, pttl: number): number {
    return Math.max(this.local.remainingNow(key), pttl, 0);
  }

  /** This replica's own copy only (Redis unusable). */
  localRemaining(key: string): number {
    return this.local.remainingNow(key);
  }

  async remaining(key: string): Promise<number> {
    const local = this.local.remainingNow(key);
    if (!this.redis.ready()) return local;
    try {
      return this.combine(key, await this.redis.client.pttl(this.redisKey(key)));
    } catch (err) {
      this.redis.failed("cooldown read", err);
      return local;
    }
  }

  async start(key: string, retryAfterMs: number): Promise<void> {
    await this.local.start(key, retryAfterMs);
    const ms = Math.round(clampCooldown(retryAfterMs));
    if (ms <= 0 || !this.redis.ready()) return;
    try {
      await this.extend([this.redisKey(key)], [String(ms)]);
    } catch (err) {
      this.redis.failed("cooldown write", err);
    }
  }
}
