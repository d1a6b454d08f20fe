import { detached } from "./detach";

/**
 * A bounded cache of values computed from strings, keeping the recently used ones: two generations of Maps, the
 * current one taking every new entry and every entry read from the previous one; when the current one is full
 * (`maxEntries` entries, or keys adding up to `maxUnits` code units) it becomes the previous one and the one
 * before is dropped. So it holds at most twice the bounds, and an entry read at least once per generation stays.
 * An approximation of LRU at the cost of one or two Map lookups (lru-cache's bookkeeping cost 3–5× more per
 * operation on this path, where every request sets hundreds of entries).
 *
 * Keys are stored as copies (`detached`): a key that is a slice of a larger text (a sentence of a memory) must
 * not keep that text alive. The values must be pure functions of their keys for a cache hit to change nothing.
 */
export class RecentCache<V> {
  private current = new Map<string, V>();
  private previous = new Map<string, V>();
  private units = 0;

  constructor(
    private readonly maxEntries: number,
    private readonly maxUnits: number,
  ) {
    INSTANCES.push(this as RecentCache<unknown>);
  }

  /** Forgets everything. */
  clear(): void {
    this.current = new Map();
    this.previous = new Map();
    this.units = 0;
  }

  get(key: string): V | undefined {
    const v = this.current.get(key);
    if (v !== undefined) return v;
    const old = this.previous.get(key);
    if (old !== undefined) this.set(key, old, typeof old === "string" ? old.length : 0);
    return old;
  }

  /** `extraUnits`: code units the value holds (a string value), counted against `maxUnits` with the key's. */
  set(key: string, value: V, extraUnits = 0): void {
    const units = key.length + extraUnits;
    if (this.current.size >= this.maxEntries || this.units + units > this.maxUnits) {
      this.previous = this.current;
      this.current = new Map();
      this.units = 0;
    }
    this.current.set(detached(key), value);
    this.units += units;
  }

  /** Entries held (both generations; an entry in both counts twice). */
  get size(): number {
    return this.current.size + this.previous.size;
  }
}

/** Every cache made (a few, all process-wide: one per tokenizer, the text facts, the queries). */
const INSTANCES: Array<RecentCache<unknown>> = [];

/**
 * Empties every RecentCache: for the bench's cold case (what a request costs on texts no request saw before)
 * and for tests. Never needed for correctness: cached values are the values.
 */
export function clearRecentCaches(): void {
  for (const cache of INSTANCES) cache.clear();
}
