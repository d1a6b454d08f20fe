import type { RedisConnection } from "../redis/connection";
import { defineScript, type RedisScript } from "../redis/scripts";
import { PayloadText } from "../retrieval/payload-text";
import { userCacheKeys, userCacheKeysOf } from "./key";
import { flightLockKey } from "./lock-redis";
import type { FlightUnlock } from "./singleflight";
import type { CachedPayload, CacheLookup, PayloadCache } from "./types";

/**
 * The stored value (docs/redis.md#key-space): one header line, then the payload's JSON text —
 *
 *     P4 <storedAt> <freshUntil> <metadata start> <metadata end> <text length>\n<JSON.stringify(payload)>
 *
 * times in epoch ms, the metadata object's span and the length in bytes of the text's UTF-8. A hit reads the reply
 * as bytes (a Buffer: never decoded into a string), reads the header and parses only the metadata span; the bytes
 * are what /v1/retrieve answers, with the hit's metadata put in that span (src/retrieval/payload-text.ts). The
 * payload is stored once. `P3` values (the same with spans in UTF-16 code units, written before issue 29) are
 * still read, decoded into a string first.
 */
const TAG = "P4";
const TAG_UTF16 = "P3";

/**
 * Longest an entry can live (policy maxima: ttlSeconds 86,400 + staleSeconds 604,800) plus a day: a user's
 * generation and entry index outlive every entry written before them.
 */
const USER_KEYS_MS = (86_400 + 604_800 + 86_400) * 1000;

/** The write itself: the entry, and its line in the user's index (STORE's and STORE_AND_RELEASE's). */
const WRITE_AND_INDEX = `redis.call('set', KEYS[1], ARGV[1], 'PX', ARGV[2])
local t = redis.call('time')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('zadd', KEYS[3], now + tonumber(ARGV[2]), KEYS[1])
redis.call('zremrangebyscore', KEYS[3], '-inf', now)
redis.call('pexpire', KEYS[3], ARGV[4])`;
/** The user's memories were written or deleted since the flight started (its generation moved). */
const INVALIDATED = `ARGV[3] ~= '' and (redis.call('get', KEYS[2]) or '0') ~= ARGV[3]`;

/**
 * Writes an entry if the user's generation is still the one the flight started with, and lists it in the user's
 * index (a sorted set scored by expiry, on the Redis clock; expired members are dropped as it goes).
 * KEYS: the entry, the user's generation, the user's index. ARGV: value, keep ms, expected generation ('' = any),
 * the index's lifetime ms. Returns 1 when written, 0 when the user was invalidated since.
 */
const STORE = `if ${INVALIDATED} then return 0 end
${WRITE_AND_INDEX}
return 1`;

/**
 * STORE, then the entry's single-flight lock released if it still holds the flight's token (src/cache/lock-redis.ts
 * RELEASE), written or not: the write and the release in one round trip (issue 29). KEYS: STORE's, then the lock.
 * ARGV: STORE's, then the token.
 */
const STORE_AND_RELEASE = `local written = 1
if ${INVALIDATED} then written = 0 else
${WRITE_AND_INDEX}
end
if redis.call('get', KEYS[4]) == ARGV[5] then redis.call('del', KEYS[4]) end
return written`;

interface StoredEntry {
  text: PayloadText;
  storedAt: number;
  freshUntil: number;
}

/**
 * The payload cache in Redis, shared by every replica (docs/configuration.md#several-replicas-redis). Values are the
 * header line and the payload's JSON (above) written with `SET … PX (ttl + stale)`: Redis drops an entry once it is
 * too old even to be served stale. Never throws: a Redis error, a disconnected client or an unreadable value is a
 * miss (reads) or a no-op (writes), logged at most once per interval.
 */
export class RedisPayloadCache implements PayloadCache {
  readonly kind = "redis";

  private readonly store: RedisScript;
  private readonly storeAndRelease: RedisScript;

  constructor(
    private readonly redis: RedisConnection,
    private readonly now: () => number = Date.now,
  ) {
    this.store = defineScript(redis.client, "memgateCacheStore", 3, STORE);
    this.storeAndRelease = defineScript(redis.client, "memgateCacheStoreRelease", 4, STORE_AND_RELEASE);
  }

  available(): boolean {
    return this.redis.ready();
  }

  /** The Redis key of an entry (read by src/retrieval/admission-redis.ts in its own script). */
  redisKey(key: string): string {
    return this.redis.key(key);
  }

  async get(key: string): Promise<CacheLookup | undefined> {
    if (!this.redis.ready()) return undefined;
    let raw: Buffer | null;
    try {
      raw = await this.redis.client.getBuffer(this.redisKey(key));
    } catch (err) {
      this.redis.failed("cache get", err);
      return undefined;
    }
    return this.lookup(raw);
  }

  /**
   * A stored value (or null: none) as a lookup; an unreadable value is a miss, reported. Only the header and the
   * metadata are parsed here; `payload` parses the rest when first read.
   */
  lookup(raw: Buffer | string | null): CacheLookup | undefined {
    if (raw === null) return undefined;
    const entry = parseEntry(raw);
    if (entry === undefined) {
      this.redis.failed("cache entry unreadable", new Error("not a cached payload; treated as a miss"));
      return undefined;
    }
    const { text } = entry;
    return {
      get payload(): CachedPayload {
        return text.payload();
      },
      text,
      fresh: this.now() < entry.freshUntil,
      storedAt: entry.storedAt,
    };
  }

  async set(
    key: string,
    payload: CachedPayload,
    ttlSeconds: number,
    staleSeconds: number,
    generation?: number,
    text?: PayloadText,
    unlock?: FlightUnlock,
  ): Promise<boolean> {
    const keepMs = Math.round((ttlSeconds + staleSeconds) * 1000);
    if (keepMs <= 0 || !this.redis.ready()) return false;
    const storedAt = this.now();
    let value: Buffer;
    try {
      value = serializeEntry(text ?? PayloadText.of(payload), storedAt, storedAt + ttlSeconds * 1000);
    } catch (err) {
      this.redis.failed("cache set", err);
      return false;
    }
    const user = userCacheKeysOf(key);
    try {
      if (user === undefined) {
        await this.redis.client.set(this.redisKey(key), value, "PX", keepMs);
        return false;
      }
      const keys = [this.redisKey(key), this.redis.key(user.generation), this.redis.key(user.index)];
      const args = [value, keepMs, generation === undefined ? "" : String(generation), USER_KEYS_MS];
      // The entry's lock (same key: the flight's own) goes with the write: one round trip, not two.
      if (unlock !== undefined && unlock.key === key) {
        await this.storeAndRelease([...keys, this.redis.key(flightLockKey(key))], [...args, unlock.token]);
        return true;
      }
      await this.store(keys, args);
    } catch (err) {
      this.redis.failed("cache set", err);
    }
    return false;
  }

  async generation(key: string): Promise<number | undefined> {
    const user = userCacheKeysOf(key);
    if (user === undefined) return 0;
    if (!this.redis.ready()) return undefined;
    try {
      const raw = await this.redis.client.get(this.redis.key(user.generation));
      const n = raw === null ? 0 : Number(raw);
      return Number.isSafeInteger(n) ? n : undefined;
    } catch (err) {
      this.redis.failed("cache generation", err);
      return undefined;
    }
  }

  /**
   * Moves the user's generation first (a flight that started before writes nothing from then on), then deletes the
   * entries the index lists and only those members (an entry written meanwhile, after the move, stays listed).
   * Every key is in the user's slot: one node on a Cluster. Redis down: logged, the entries live out their TTL.
   */
  async invalidateUser(tenantId: string, userId: string): Promise<void> {
    const user = userCacheKeys(tenantId, userId);
    const generation = this.redis.key(user.generation);
    const index = this.redis.key(user.index);
    if (!this.redis.ready()) {
      this.redis.failed("cache invalidation", new Error("Redis unavailable: entries live out their TTL"));
      return;
    }
    try {
      await this.redis.client.multi().incr(generation).pexpire(generation, USER_KEYS_MS).exec();
      const entries = await this.redis.client.zrange(index, 0, -1);
      for (let at = 0; at < entries.length; at += 500) {
        const batch = entries.slice(at, at + 500);
        await this.redis.client
          .multi()
          .del(...batch)
          .zrem(index, ...batch)
          .exec();
      }
    } catch (err) {
      this.redis.failed("cache invalidation", err);
    }
  }
}

/** The stored value of a payload's text (the format above). */
export function serializeEntry(text: PayloadText, storedAt: number, freshUntil: number): Buffer {
  const { bytes, metadataStart, metadataEnd } = text.utf8();
  const header = `${TAG} ${storedAt} ${freshUntil} ${metadataStart} ${metadataEnd} ${bytes.length}\n`;
  const out = Buffer.allocUnsafe(header.length + bytes.length);
  out.write(header, 0, "latin1");
  bytes.copy(out, header.length);
  return out;
}

/**
 * The entry, or undefined when the value is not one (not this format: another writer's data, a truncated value;
 * a metadata span that is not a payload's metadata). The payload past its metadata is not parsed here.
 */
export function parseEntry(raw: Buffer | string): StoredEntry | undefined {
  const eol = raw.indexOf("\n");
  if (eol < 0 || eol > 128) return undefined;
  const line = typeof raw === "string" ? raw.slice(0, eol) : raw.toString("latin1", 0, eol);
  const fields = line.split(" ");
  if (fields.length !== 6 || (fields[0] !== TAG && fields[0] !== TAG_UTF16)) return undefined;
  const [storedAt, freshUntil, start, end, length] = fields.slice(1).map(Number) as [
    number,
    number,
    number,
    number,
    number,
  ];
  if (!Number.isFinite(storedAt) || !Number.isFinite(freshUntil)) return undefined;
  let text: PayloadText | undefined;
  if (fields[0] === TAG) {
    const bytes = typeof raw === "string" ? Buffer.from(raw, "utf8") : raw;
    const body =
      typeof raw === "string" ? bytes.subarray(Buffer.byteLength(line) + 1) : raw.subarray(eol + 1);
    if (length !== body.length) return undefined;
    text = PayloadText.storedBytes(body, start, end);
  } else {
    const decoded = typeof raw === "string" ? raw : raw.toString("utf8");
    const at = typeof raw === "string" ? eol : decoded.indexOf("\n");
    if (length !== decoded.length - at - 1) return undefined;
    text = PayloadText.stored(decoded.slice(at + 1), start, end);
  }
  if (text === undefined) return undefined;
  try {
    text.metadata();
  } catch {
    return undefined;
  }
  return { text, storedAt, freshUntil };
}
