import { LRUCache } from "lru-cache";

/** docs/api.md#eligibility-and-fallbacks: a user's collection existence is cached, positive 5 min, negative 30 s. */
export const POSITIVE_TTL_MS = 5 * 60_000;
export const NEGATIVE_TTL_MS = 30_000;

export class ExistenceCache {
  private readonly lru: LRUCache<string, boolean>;

  constructor(max = 50_000, now: () => number = Date.now) {
    this.lru = new LRUCache<string, boolean>({ max, perf: { now } });
  }

  get(key: string): boolean | undefined {
    return this.lru.get(key);
  }

  set(key: string, exists: boolean): void {
    this.lru.set(key, exists, { ttl: exists ? POSITIVE_TTL_MS : NEGATIVE_TTL_MS });
  }
}
