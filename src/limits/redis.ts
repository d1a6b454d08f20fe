import { RateLimiterMemory, RateLimiterRedis } from "rate-limiter-flexible";
import type { RedisConnection } from "../redis/connection";
import { slotTag } from "../redis/keys";
import { decide } from "./decide";
import { type RateDecision, type RateLimiter, type RateRule, ruleId } from "./types";

/**
 * One consume whose increment a caller sends itself, inside a larger script (src/retrieval/admission-redis.ts):
 * the counter's Redis key (the one RateLimiterRedis uses, so both paths count together), the decision from the
 * script's `{consumed, ttl}` (rate-limiter-flexible's arithmetic), and the insurance limiter for when the script
 * cannot run.
 */
export interface PreparedConsume {
  redisKey: string;
  fromCounter(consumed: number, ttlMs: number): RateDecision;
  insurance(): Promise<RateDecision>;
}

/**
 * The limiter shared by every replica (docs/configuration.md#several-replicas-redis): one RateLimiterRedis per distinct rule, each with an
 * in-memory insurance limiter that counts while Redis is unreachable (`rejectIfRedisNotReady`: no waiting on a
 * dead connection). During an outage each replica then enforces the rule on its own, so the fleet may let
 * through up to replicas × points; when Redis comes back the shared count takes over again.
 *
 * `scope` separates the counters of different limits ("user", "key") under the same rule. Keys are hashed: user
 * ids never appear in clear in Redis. A counter's key ends with the Redis Cluster hash tag of the key it counts
 * (src/redis/keys.ts): a user's counter (key `tenant:user`) shares its slot with that user's cache entries.
 */
export class RedisRateLimiter implements RateLimiter {
  readonly kind = "redis";
  private readonly limiters = new Map<string, { shared: RateLimiterRedis; insurance: RateLimiterMemory }>();

  constructor(
    private readonly redis: RedisConnection,
    private readonly scope: string,
  ) {}

  private limiterFor(rule: RateRule): { shared: RateLimiterRedis; insurance: RateLimiterMemory } {
    const id = ruleId(rule);
    let limiter = this.limiters.get(id);
    if (!limiter) {
      const opts = { points: rule.points, duration: rule.durationSeconds };
      const insurance = new RateLimiterMemory({ ...opts, keyPrefix: `insurance:${this.scope}:${id}` });
      const shared = new RateLimiterRedis({
        ...opts,
        storeClient: this.redis.client,
        // One counter per key whatever the rule (issue 26 finding 8): another allowed policy's rule counts in
        // the same window, judged by its own points; the window is the one the first request opened.
        keyPrefix: this.redis.key(`rl:${this.scope}`),
        rejectIfRedisNotReady: true,
        insuranceLimiter: insurance,
      });
      limiter = { shared, insurance };
      this.limiters.set(id, limiter);
    }
    return limiter;
  }

  prepare(key: string, rule: RateRule): PreparedConsume {
    const tagged = slotTag(key);
    const { shared, insurance } = this.limiterFor(rule);
    return {
      redisKey: shared.getKey(tagged),
      fromCounter(consumed, ttlMs) {
        if (consumed <= rule.points)
          return { allowed: true, retryAfterMs: 0, remaining: rule.points - consumed, resetMs: ttlMs };
        const wait = Math.max(1, ttlMs);
        return { allowed: false, retryAfterMs: wait, remaining: 0, resetMs: wait };
      },
      insurance: () => decide(insurance.consume(tagged), rule),
    };
  }

  async consume(key: string, rule: RateRule): Promise<RateDecision> {
    const tagged = slotTag(key);
    const { shared, insurance } = this.limiterFor(rule);
    // While Redis is known to be unusable (e.g. suspended after timeouts) go straight to the insurance.
    if (!this.redis.ready()) return decide(insurance.consume(tagged), rule);
    const started = Date.now();
    const decision = await decide(shared.consume(tagged), rule);
    // rate-limiter-flexible hides the error it answered from the insurance; a call that lasted the command
    // timeout was one, so report it (the connection then skips a hung Redis for a moment).
    if (Date.now() - started >= this.redis.commandTimeoutMs)
      this.redis.failed("rate limit", new Error("Command timed out"));
    return decision;
  }
}
