import { LRUCache } from "lru-cache";
import { PayloadText } from "../retrieval/payload-text";
import type { CachedPayload, CacheLookup, PayloadCache } from "./types";

interface Entry {
  payload: CachedPayload;
  storedAt: number;
  freshUntil: number;
  /** The payload's JSON text, made on the first read that asks for it (a hit on /v1/retrieve), then kept. */
  text?: PayloadText;
}

/** A bounded in-process LRU (used when no Redis is configured). */
export class MemoryPayloadCache implements PayloadCache {
  readonly kind = "memory";
  private readonly lru: LRUCache<string, Entry>;

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
        entry.text ??= PayloadText.of(entry.payload);
        return entry.text;
      },
    };
  }

  async set(key: string, payload: CachedPayload, ttlSeconds: number, staleSeconds: number): Promise<void> {
    const keepMs = (ttlSeconds + staleSeconds) * 1000;
    if (keepMs <= 0) return;
    const storedAt = this.now();
    this.lru.set(key, { payload, storedAt, freshUntil: storedAt + ttlSeconds * 1000 }, { ttl: keepMs });
  }
}
