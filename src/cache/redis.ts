import type { RedisConnection } from "../redis/connection";
import type { CachedPayload, CacheLookup, PayloadCache } from "./types";

/** The stored value: the shaped payload and when it stops being fresh (epoch ms). */
interface StoredEntry {
  payload: CachedPayload;
  storedAt: number;
  freshUntil: number;
}

/**
 * The payload cache in Redis, shared by every replica (docs/configuration.md#several-replicas-redis). Values are JSON
 * `{payload, storedAt, freshUntil}` written with `SET … PX (ttl + stale)`: Redis drops an entry once it is too old
 * even to be served stale. Never throws: a Redis error, a disconnected client or an unreadable value is a miss
 * (reads) or a no-op (writes), logged at most once per interval.
 */
export class RedisPayloadCache implements PayloadCache {
  readonly kind = "redis";

  constructor(
    private readonly redis: RedisConnection,
    private readonly now: () => number = Date.now,
  ) {}

  available(): boolean {
    return this.redis.ready();
  }

  /** The Redis key of an entry (read by src/retrieval/admission-redis.ts in its own script). */
  redisKey(key: string): string {
    return this.redis.key(key);
  }

  async get(key: string): Promise<CacheLookup | undefined> {
    if (!this.redis.ready()) return undefined;
    let raw: string | null;
    try {
      raw = await this.redis.client.get(this.redisKey(key));
    } catch (err) {
      this.redis.failed("cache get", err);
      return undefined;
    }
    return this.lookup(raw);
  }

  /** A stored value (or null: none) as a lookup; an unreadable value is a miss, reported. */
  lookup(raw: string | null): CacheLookup | undefined {
    if (raw === null) return undefined;
    const entry = parseEntry(raw);
    if (entry === undefined) {
      this.redis.failed("cache entry unreadable", new Error("not a cached payload; treated as a miss"));
      return undefined;
    }
    return { payload: entry.payload, fresh: this.now() < entry.freshUntil, storedAt: entry.storedAt };
  }

  async set(key: string, payload: CachedPayload, ttlSeconds: number, staleSeconds: number): Promise<void> {
    const keepMs = Math.round((ttlSeconds + staleSeconds) * 1000);
    if (keepMs <= 0 || !this.redis.ready()) return;
    const storedAt = this.now();
    const entry: StoredEntry = { payload, storedAt, freshUntil: storedAt + ttlSeconds * 1000 };
    try {
      await this.redis.client.set(this.redisKey(key), JSON.stringify(entry), "PX", keepMs);
    } catch (err) {
      this.redis.failed("cache set", err);
    }
  }
}

const isRecord = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);

/** The entry, or undefined when the value is not one (bad JSON, another writer's data, an old format). */
export function parseEntry(raw: string): StoredEntry | undefined {
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch {
    return undefined;
  }
  if (!isRecord(value)) return undefined;
  const { payload, storedAt, freshUntil } = value;
  if (typeof storedAt !== "number" || typeof freshUntil !== "number") return undefined;
  if (!isRecord(payload) || !Array.isArray(payload.memories) || !isRecord(payload.metadata)) return undefined;
  if (typeof payload.systemPrompt !== "string") return undefined;
  return { payload: payload as unknown as CachedPayload, storedAt, freshUntil };
}
