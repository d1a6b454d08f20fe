import { RateLimiterMemory, RateLimiterRes } from "rate-limiter-flexible";
import type { RateDecision, RateLimiter, RateRule } from "./types";

/** In-process limiter (REDIS_URL unset): one rate-limiter-flexible instance per distinct rule. */
export class MemoryRateLimiter implements RateLimiter {
  readonly kind = "memory";
  private readonly limiters = new Map<string, RateLimiterMemory>();

  constructor(private readonly prefix = "memgate") {}

  private limiterFor(rule: RateRule): RateLimiterMemory {
    const id = `${rule.points}/${rule.durationSeconds}`;
    let limiter = this.limiters.get(id);
    if (!limiter) {
      limiter = new RateLimiterMemory({
        keyPrefix: `${this.prefix}:${id}`,
        points: rule.points,
        duration: rule.durationSeconds,
      });
      this.limiters.set(id, limiter);
    }
    return limiter;
  }

  async consume(key: string, rule: RateRule): Promise<RateDecision> {
    try {
      const res = await this.limiterFor(rule).consume(key);
      return { allowed: true, retryAfterMs: 0, remaining: res.remainingPoints };
    } catch (err) {
      if (err instanceof RateLimiterRes) {
        return { allowed: false, retryAfterMs: Math.max(1, err.msBeforeNext), remaining: 0 };
      }
      return { allowed: true, retryAfterMs: 0, remaining: rule.points };
    }
  }
}
