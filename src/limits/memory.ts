import type { RateDecision, RateLimiter, RateRule } from "./types";
import { FixedWindows } from "./window";

/**
 * In-process limiter (no Redis configured): one fixed window per key, whatever the rule (./window.ts), so a
 * user who switches to another allowed policy keeps the count of the window they are in.
 */
export class MemoryRateLimiter implements RateLimiter {
  readonly kind = "memory";
  private readonly windows: FixedWindows;

  constructor(
    private readonly prefix = "memgate",
    now: () => number = Date.now,
  ) {
    this.windows = new FixedWindows(now);
  }

  async consume(key: string, rule: RateRule): Promise<RateDecision> {
    return this.windows.consume(`${this.prefix}:${key}`, rule);
  }
}
