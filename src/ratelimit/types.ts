export interface RateDecision {
  allowed: boolean;
  /** When not allowed: ms until a point is available again. */
  retryAfterMs: number;
  remaining: number;
}

export interface RateRule {
  points: number;
  durationSeconds: number;
}

/** Counts retrievals per key (e.g. tenant:user) under a rule. Never throws: a broken store allows. */
export interface RateLimiter {
  readonly kind: "memory" | "redis";
  consume(key: string, rule: RateRule): Promise<RateDecision>;
  close?(): Promise<void>;
}
