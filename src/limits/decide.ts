import { RateLimiterRes } from "rate-limiter-flexible";
import type { RateDecision, RateRule } from "./types";

/**
 * A rate-limiter-flexible consume turned into a decision. It resolves with a RateLimiterRes when allowed and
 * rejects with one when not; any other rejection is a broken store, which allows (never a 5xx for a limiter).
 */
export async function decide(consume: Promise<RateLimiterRes>, rule: RateRule): Promise<RateDecision> {
  try {
    const res = await consume;
    return { allowed: true, retryAfterMs: 0, remaining: res.remainingPoints, resetMs: res.msBeforeNext };
  } catch (err) {
    if (err instanceof RateLimiterRes) {
      const wait = Math.max(1, err.msBeforeNext);
      return { allowed: false, retryAfterMs: wait, remaining: 0, resetMs: wait };
    }
    return { allowed: true, retryAfterMs: 0, remaining: rule.points, resetMs: rule.durationSeconds * 1000 };
  }
}
