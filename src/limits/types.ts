export interface RateDecision {
  allowed: boolean;
  /** When not allowed: ms until a point is available again. */
  retryAfterMs: number;
  remaining: number;
  /** ms until the current window ends and the points are back (IETF RateLimit `t`). */
  resetMs: number;
}

export interface RateRule {
  points: number;
  durationSeconds: number;
}

/** Counts requests per key (e.g. tenant:user) under a rule. Never throws: a broken store allows. */
export interface RateLimiter {
  readonly kind: "memory" | "redis";
  consume(key: string, rule: RateRule): Promise<RateDecision>;
  close?(): Promise<void>;
}

/** The rule's id: limiters are created once per distinct rule. */
export function ruleId(rule: RateRule): string {
  return `${rule.points}/${rule.durationSeconds}`;
}
