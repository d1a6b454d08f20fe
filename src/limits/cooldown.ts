/**
 * After a backend answers 429 with Retry-After (or Zep's x-ratelimit-reset), memgate stops calling that backend
 * for that tenant until then and serves the RATE_LIMITED fallback meanwhile. With Redis the pause is shared: a 429
 * seen by one replica pauses that tenant's backend for all (src/limits/cooldown-redis.ts).
 */
export interface BackendCooldown {
  /** ms left in the cooldown for this tenant/backend, 0 when calls may go out. Never throws. */
  remaining(key: string): Promise<number>;
  /** Starts (or extends) the cooldown. Never throws. */
  start(key: string, retryAfterMs: number): Promise<void>;
}

/** Capped at 10 minutes so a bogus header cannot switch a backend off for a day. */
export const MAX_COOLDOWN_MS = 10 * 60_000;

export function clampCooldown(retryAfterMs: number): number {
  return Math.min(Math.max(retryAfterMs, 0), MAX_COOLDOWN_MS);
}

/** The in-process cooldown (no Redis configured, and the net under the Redis one). */
export class MemoryBackendCooldown implements BackendCooldown {
  private readonly until = new Map<string, number>();

  constructor(private readonly now: () => number = Date.now) {}

  remainingNow(key: string): number {
    const t = this.until.get(key);
    if (t === undefined) return 0;
    const left = t - this.now();
    if (left <= 0) {
      this.until.delete(key);
      return 0;
    }
    return left;
  }

  async remaining(key: string): Promise<number> {
    return this.remainingNow(key);
  }

  async start(key: string, retryAfterMs: number): Promise<void> {
    const ms = clampCooldown(retryAfterMs);
    const until = this.now() + ms;
    if (ms > 0 && until > (this.until.get(key) ?? 0)) this.until.set(key, until);
  }
}
