import type { RequestHandler } from "express";
import type { RateLimiter, RateRule } from "../limits/types";
import { HttpProblem } from "./errors";

/** The per-API-key limit: a limiter (Redis-backed when a Redis is configured) and the default rule. */
export interface KeyLimits {
  limiter: RateLimiter;
  /** MEMGATE_KEY_RATE_LIMIT; a key's own `rateLimit` in the tenants file wins. */
  defaultRule: RateRule;
}

/**
 * Counts each request against the caller's API key (tenant id + key id) and answers 429 problem+json with
 * `Retry-After` beyond the key's rate (docs/api.md#rate-limits). Every answer carries the IETF draft headers
 * `RateLimit-Policy: "key";q=<points>;w=<window s>` and `RateLimit: "key";r=<remaining>;t=<reset s>`.
 * Mount right after `authenticate()`; without `limits` (an app built without them) it does nothing.
 */
export function rateLimitKey(limits: KeyLimits | undefined): RequestHandler {
  return async function rateLimitKey(_req, res, next) {
    const principal = res.locals.principal;
    if (limits === undefined || principal === undefined) return next();
    const rule = principal.rateLimit ?? limits.defaultRule;
    const decision = await limits.limiter.consume(`${principal.tenant.id}:${principal.keyId}`, rule);
    const resetSeconds = Math.max(0, Math.ceil(decision.resetMs / 1000));
    res.setHeader("RateLimit-Policy", `"key";q=${rule.points};w=${rule.durationSeconds}`);
    res.setHeader("RateLimit", `"key";r=${decision.remaining};t=${resetSeconds}`);
    if (decision.allowed) return next();
    const retryAfter = Math.max(1, Math.ceil(decision.retryAfterMs / 1000));
    next(
      new HttpProblem(
        "RATE_LIMITED",
        `this API key exceeded ${rule.points} requests per ${rule.durationSeconds} s; retry in ${retryAfter} s`,
        { "retry-after": String(retryAfter) },
      ),
    );
  };
}
