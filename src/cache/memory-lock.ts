import type { MemoryPayloadCache } from "./memory";
import type { FlightAcquisition, FlightLock } from "./singleflight";

interface Held {
  token: string;
  expiresAt: number;
}

/** Past this many entries, an acquire first drops the expired ones (a lock whose release never came). */
const SWEEP_OVER = 1024;

/**
 * The single-flight lock in process, over the in-process payload cache: the same contract as the Redis lock
 * (src/cache/lock-redis.ts) — one holder per key, released only by its token, gone after `ttlMs` if never released — with
 * the lock and the cache read in one synchronous step. Used when no Redis is configured (one replica: the in-process
 * dedup already shares flights, so the lock is never contended) and by the unit tests, where two SingleFlights
 * sharing one of these and one cache stand for two replicas. `now`: the clock (tests inject one).
 */
export class MemoryFlightLock implements FlightLock {
  private readonly locks = new Map<string, Held>();
  private seq = 0;

  constructor(
    private readonly cache: MemoryPayloadCache,
    private readonly now: () => number = Date.now,
  ) {}

  async acquire(key: string, ttlMs: number): Promise<FlightAcquisition> {
    // MemoryPayloadCache.get does its lookup synchronously, when called: the read and the lock are one step.
    const reading = this.cache.get(key);
    const now = this.now();
    if (this.locks.size > SWEEP_OVER) this.sweep(now);
    let token: string | null = null;
    if (this.current(key, now) === undefined) {
      this.seq += 1;
      token = `memory-${this.seq}`;
      this.locks.set(key, { token, expiresAt: now + Math.ceil(ttlMs) });
    }
    return { token, cached: await reading };
  }

  async held(key: string): Promise<boolean> {
    return this.current(key, this.now()) !== undefined;
  }

  async release(key: string, token: string): Promise<void> {
    if (this.current(key, this.now())?.token === token) this.locks.delete(key);
  }

  /** The live lock on `key`, dropping it if expired. */
  private current(key: string, now: number): Held | undefined {
    const held = this.locks.get(key);
    if (held === undefined) return undefined;
    if (now < held.expiresAt) return held;
    this.locks.delete(key);
    return undefined;
  }

  private sweep(now: number): void {
    for (const [key, held] of this.locks) if (now >= held.expiresAt) this.locks.delete(key);
  }
}
