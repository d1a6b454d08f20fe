import { RateLimiterMemory } from "rate-limiter-flexible";
import { decide } from "./decide";
import { type RateDecision, type RateLimiter, type RateRule, ruleId } from "./types";

/** In-process limiter (no Redis configured): one rate-limiter-flexible instance per distinct rule. */
export class MemoryRateLimiter implements RateLimiter {
  readonly kind = "memory";
  private readonly limiters = new Map<string, RateLimiterMemory>();

  constructor(private readonly prefix = "memgate") {}

  private limiterFor(rule: RateRule): RateLimiterMemory {
    const id = ruleId(rule);
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

  consume(key: string, rule: RateRule): Promise<RateDecision> {
    return decide(this.limiterFor(rule).consume(key), rule);
  }
}
