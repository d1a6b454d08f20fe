/**
 * After a backend answers 429 with Retry-After (or Zep's x-ratelimit-reset), memgate stops calling that backend
 * for that tenant until then and serves the RATE_LIMITED fallback meanwhile.
 */
export class BackendCooldown {
  private readonly until = new Map<string, number>();

  constructor(private readonly now: () => number = Date.now) {}

  /** ms left in the cooldown for this tenant/backend, 0 when calls may go out. */
  remaining(key: string): number {
    const t = this.until.get(key);
    if (t === undefined) return 0;
    const left = t - this.now();
    if (left <= 0) {
      this.until.delete(key);
      return 0;
    }
    return left;
  }

  /** Capped at 10 minutes so a bogus header cannot switch a backend off for a day. */
  start(key: string, retryAfterMs: number): void {
    const ms = Math.min(Math.max(retryAfterMs, 0), 10 * 60_000);
    if (ms > 0) this.until.set(key, this.now() + ms);
  }
}
