/**
 * Resilience settings for every backend instance (one instance per tenant and backend). Defaults live here; the
 * operator overrides them with `MEMGATE_BREAKER_*`, `MEMGATE_BULKHEAD_*` and `MEMGATE_RETRY_MAX` (src/config/env.ts,
 * docs/resilience.md).
 */
export interface ResilienceOptions {
  retry: {
    /** Extra attempts after the first for reads (`search`, `userExists`); 0 turns retries off. */
    maxRetries: number;
    /** Exponential backoff with decorrelated jitter between attempts. */
    initialDelayMs: number;
    maxDelayMs: number;
    /**
     * The budget assumed for a read that carries no policy (`userExists`), used only to decide whether a retry
     * still fits. `search` uses its policy's `timeouts.backendMs`. The caller's AbortSignal stays the deadline.
     */
    defaultBudgetMs: number;
  };
  breaker: {
    /** Opens after this many consecutive failures… */
    consecutive: number;
    /** …or when more than this share of the last `window` calls failed (once `minimumCalls` were seen). */
    ratio: number;
    window: number;
    minimumCalls: number;
    /** How long it stays open before the next call is let through as the half-open probe. */
    halfOpenAfterMs: number;
  };
  bulkhead: {
    /** Concurrent calls per tenant and backend. */
    limit: number;
    /** Calls that may wait for a slot (within their own deadline); beyond that: rejected at once. */
    queue: number;
  };
}

export const DEFAULT_RESILIENCE: ResilienceOptions = {
  retry: { maxRetries: 1, initialDelayMs: 25, maxDelayMs: 200, defaultBudgetMs: 1500 },
  breaker: { consecutive: 5, ratio: 0.5, window: 20, minimumCalls: 10, halfOpenAfterMs: 5_000 },
  bulkhead: { limit: 32, queue: 32 },
};

/** The environment variables that override the defaults (already validated by the env schema). */
export interface ResilienceEnv {
  MEMGATE_RETRY_MAX?: number;
  MEMGATE_BREAKER_CONSECUTIVE?: number;
  MEMGATE_BREAKER_RATIO?: number;
  MEMGATE_BREAKER_WINDOW?: number;
  MEMGATE_BREAKER_HALF_OPEN_MS?: number;
  MEMGATE_BULKHEAD_LIMIT?: number;
  MEMGATE_BULKHEAD_QUEUE?: number;
}

export function resilienceFromEnv(env: ResilienceEnv): ResilienceOptions {
  const d = DEFAULT_RESILIENCE;
  const window = env.MEMGATE_BREAKER_WINDOW ?? d.breaker.window;
  return {
    retry: { ...d.retry, maxRetries: env.MEMGATE_RETRY_MAX ?? d.retry.maxRetries },
    breaker: {
      consecutive: env.MEMGATE_BREAKER_CONSECUTIVE ?? d.breaker.consecutive,
      ratio: env.MEMGATE_BREAKER_RATIO ?? d.breaker.ratio,
      window,
      minimumCalls: Math.max(1, Math.ceil(window / 2)),
      halfOpenAfterMs: env.MEMGATE_BREAKER_HALF_OPEN_MS ?? d.breaker.halfOpenAfterMs,
    },
    bulkhead: {
      limit: env.MEMGATE_BULKHEAD_LIMIT ?? d.bulkhead.limit,
      queue: env.MEMGATE_BULKHEAD_QUEUE ?? d.bulkhead.queue,
    },
  };
}
