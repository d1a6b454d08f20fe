import { LRUCache } from "lru-cache";
import { PayloadText } from "../retrieval/payload-text";
import { userCacheKeys, userCacheKeysOf } from "./key";
import type { CachedPayload, CacheLookup, PayloadCache } from "./types";

interface Entry {
  payload: CachedPayload;
  storedAt: number;
  freshUntil: number;
  /**
   * The payload's JSON text: as a miss stored it (a string), then, from the first read that asks for it (a hit on
   * /v1/retrieve), as its UTF-8 bytes (the payload kept): a hit splices its metadata into bytes encoded once per
   * entry, instead of measuring and encoding the whole answer again on every hit (issue 29). Smaller than the
   * string too when the text is not Latin-1 (a string holds two bytes per character then).
   */
  text?: PayloadText;
}

/** A bounded in-process LRU (used when no Redis is configured). */
export class MemoryPayloadCache implements PayloadCache {
  readonly kind = "memory";
  private readonly lru: LRUCache<string, Entry>;
  /** Each invalidated user's generation (by `userCacheKeys().generation`); absent = 0. */
  private readonly generations = new LRUCache<string, number>({ max: 100_000 });

  constructor(
    maxEntries = 10_000,
    private readonly now: () => number = Date.now,
  ) {
    this.lru = new LRUCache<string, Entry>({ max: maxEntries, ttlAutopurge: false, perf: { now } });
  }

  async get(key: string): Promise<CacheLookup | undefined> {
    const entry = this.lru.get(key);
    if (entry === undefined) return undefined;
    return {
      payload: entry.payload,
      fresh: this.now() < entry.freshUntil,
      storedAt: entry.storedAt,
      get text(): PayloadText {
        let text = entry.text;
        if (text?.bytes === undefined) {
          text = (text ?? PayloadText.of(entry.payload)).encoded();
          entry.text = text;
        }
        return text;
      },
    };
  }

  async set(
    key: string,
    payload: CachedPayload,
    ttlSeconds: number,
    staleSeconds: number,
    generation?: number,
    text?: PayloadText,
  ): Promise<boolean> {
    // (Never releases a flight lock: the in-process lock is released by the flight, without a round trip.)
    const keepMs = (ttlSeconds + staleSeconds) * 1000;
    if (keepMs <= 0) return false;
    if (generation !== undefined && generation !== this.generationOf(key)) return false;
    const storedAt = this.now();
    const entry: Entry = { payload, storedAt, freshUntil: storedAt + ttlSeconds * 1000 };
    if (text !== undefined) entry.text = text;
    this.lru.set(key, entry, { ttl: keepMs });
    return false;
  }

  async generation(key: string): Promise<number> {
    return this.generationOf(key);
  }

  /** Deletes the user's entries and moves their generation (a flight that started before writes nothing). */
  async invalidateUser(tenantId: string, userId: string): Promise<void> {
    const keys = userCacheKeys(tenantId, userId);
    this.generations.set(keys.generation, (this.generations.get(keys.generation) ?? 0) + 1);
    for (const key of [...this.lru.keys()]) if (key.startsWith(keys.prefix)) this.lru.delete(key);
  }

  private generationOf(key: string): number {
    const keys = userCacheKeysOf(key);
    return keys === undefined ? 0 : (this.generations.get(keys.generation) ?? 0);
  }
}
