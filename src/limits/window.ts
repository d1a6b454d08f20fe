import type { RateDecision, RateRule } from "./types";

interface Window {
  count: number;
  resetAt: number;
}

/** Past this many keys a consume first drops the windows that ended (then the bar doubles with what is live). */
const SWEEP_OVER = 10_000;

/**
 * Fixed-window counters by key alone, the rule given per call (rate-limiter-flexible's arithmetic: the first
 * request opens a window of the rule's duration, each request adds one point, more than `points` in the window is
 * refused until it ends). One counter per key whatever the rule: a caller who picks another rule (another allowed
 * policy) keeps counting in the same window and is judged by that rule's points (issue 26 finding 8).
 */
export class FixedWindows {
  private readonly windows = new Map<string, Window>();
  private sweepOver = SWEEP_OVER;

  constructor(private readonly now: () => number = Date.now) {}

  consume(key: string, rule: RateRule): RateDecision {
    const now = this.now();
    let window = this.windows.get(key);
    if (window === undefined || window.resetAt <= now) {
      if (this.windows.size >= this.sweepOver) this.sweep(now);
      window = { count: 0, resetAt: now + rule.durationSeconds * 1000 };
      this.windows.set(key, window);
    }
    window.count += 1;
    const resetMs = window.resetAt - now;
    if (window.count <= rule.points)
      return { allowed: true, retryAfterMs: 0, remaining: rule.points - window.count, resetMs };
    const wait = Math.max(1, resetMs);
    return { allowed: false, retryAfterMs: wait, remaining: 0, resetMs: wait };
  }

  private sweep(now: number): void {
    for (const [key, window] of this.windows) if (window.resetAt <= now) this.windows.delete(key);
    this.sweepOver = Math.max(SWEEP_OVER, this.windows.size * 2);
  }
}
