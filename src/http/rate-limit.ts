import type { ServerResponse } from "node:http";
import type { RateLimiter, RateRule } from "../limits/types";
import type { Principal } from "../tenants/types";
import { HttpProblem } from "./errors";
import { setAnswerHeader } from "./head";
import { localsOf, type Middleware } from "./plain";

/** The per-API-key limit: a limiter (Redis-backed when a Redis is configured) and the default rule. */
export interface KeyLimits {
  limiter: RateLimiter;
  /** MEMGATE_KEY_RATE_LIMIT; a key's own `rateLimit` in the tenants file wins. */
  defaultRule: RateRule;
}

/**
 * Counts one request against the caller's API key (tenant id + key id); beyond the key's rate, rejects with 429
 * problem+json and `Retry-After` (docs/api.md#rate-limits). Every answer carries the IETF draft headers
 * `RateLimit-Policy: "key";q=<points>;w=<window s>` and `RateLimit: "key";r=<remaining>;t=<reset s>`. Without
 * `limits` (an app built without them) it does nothing.
 */
export async function limitKey(
  limits: KeyLimits | undefined,
  principal: Principal,
  res: ServerResponse,
): Promise<void> {
  if (limits === undefined) return;
  const rule = principal.rateLimit ?? limits.defaultRule;
  const decision = await limits.limiter.consume(`${principal.tenant.id}:${principal.keyId}`, rule);
  const resetSeconds = Math.max(0, Math.ceil(decision.resetMs / 1000));
  setAnswerHeader(res, "RateLimit-Policy", `"key";q=${rule.points};w=${rule.durationSeconds}`);
  setAnswerHeader(res, "RateLimit", `"key";r=${decision.remaining};t=${resetSeconds}`);
  if (decision.allowed) return;
  const retryAfter = Math.max(1, Math.ceil(decision.retryAfterMs / 1000));
  throw new HttpProblem(
    "RATE_LIMITED",
    `this API key exceeded ${rule.points} requests per ${rule.durationSeconds} s; retry in ${retryAfter} s`,
    { "retry-after": String(retryAfter) },
  );
}

/** `limitKey` as a step. Mount right after `authenticate()`. */
export function rateLimitKey(limits: KeyLimits | undefined): Middleware {
  return function rateLimitKey(_req, res, next) {
    const principal = localsOf(res).principal;
    if (limits === undefined || principal === undefined) return next();
    limitKey(limits, principal, res).then(() => next(), next);
  };
}
