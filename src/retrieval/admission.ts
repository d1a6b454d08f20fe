import type { PreAcquisition } from "../cache/singleflight";
import type { CacheLookup, PayloadCache } from "../cache/types";
import type { BackendCooldown } from "../limits/cooldown";
import type { RateDecision, RateLimiter, RateRule } from "../limits/types";

/** What a retrieval checks before anything else: the user's rate, the backend's cooldown, the payload cache. */
export interface AdmissionRequest {
  /** `tenant:userId`, counted under `rule` (the policy's rateLimit.perUser). */
  rateKey: string;
  rule: RateRule;
  /** `tenant:backend`. */
  cooldownKey: string;
  /** The payload cache key; undefined = do not read the cache (explain requests). */
  cacheKey: string | undefined;
  /**
   * On a miss, also try the entry's single-flight lock (held `lockMs`) and read the user's cache generation, where
   * the admission can do it in the same step (Redis: ./admission-redis.ts); undefined = do not.
   */
  flight?: { lockMs: number } | undefined;
}

/**
 * The three answers, each its own promise: the caller takes its decisions in order (limit, then cooldown, then
 * cache) and may stop after the first. The cache read has no effect; after a refusal it is not used (and may not
 * have been made). None of the promises rejects.
 */
export interface AdmissionChecks {
  limit: Promise<RateDecision>;
  cooldownMs: Promise<number>;
  cached: Promise<CacheLookup | undefined> | undefined;
  /**
   * The lock tried with a miss (`flight` asked and the admission can): taken (a token the request must hand to its
   * flight or release) or held by another; undefined when it was not tried. Never rejects.
   */
  flight?: Promise<PreAcquisition | undefined>;
}

export interface Admission {
  check(req: AdmissionRequest): AdmissionChecks;
}

/**
 * The checks as three separate calls, started together (in-process state; with Redis their round trips
 * overlap). src/retrieval/admission-redis.ts does all three in one Redis round trip.
 */
export class SeparateAdmission implements Admission {
  constructor(
    private readonly deps: { limiter: RateLimiter; cooldown: BackendCooldown; cache: PayloadCache },
  ) {}

  check(req: AdmissionRequest): AdmissionChecks {
    const limit = this.deps.limiter.consume(req.rateKey, req.rule);
    const cooldownMs = this.deps.cooldown.remaining(req.cooldownKey);
    const cached = req.cacheKey === undefined ? undefined : this.deps.cache.get(req.cacheKey);
    // Awaited by the caller unless a decision before them ends the request (these never reject by contract).
    cooldownMs.catch(() => undefined);
    cached?.catch(() => undefined);
    return { limit, cooldownMs, cached };
  }
}
