import { createHash } from "node:crypto";
import { slotTag, userScope } from "../redis/keys";

export interface CacheKeyParts {
  tenantId: string;
  backend: string;
  userId: string;
  query: string;
  /** Hash of the effective policy (overrides included: they change the hash). */
  policyHash: string;
  /** A drop-in door's own upstream call (its body, scope, filters): each call has entries of its own. */
  variant?: unknown;
}

/** Whitespace-insensitive, NFC: "what do I  order?" and " what do I order? " share an entry. Case is kept. */
export function normalizeQuery(query: string): string {
  return query.normalize("NFC").replace(/\s+/g, " ").trim();
}

/**
 * `v3:payload:<tenant>:{<user tag>}:<sha256 of the parts>` (the Redis cache prepends MEMGATE_REDIS_PREFIX, default
 * `memgate:`). The user id and query are hashed, never stored in clear in a key; the tenant stays readable so an
 * operator can scan or flush one tenant. `{<user tag>}` is the Redis Cluster hash tag of the tenant's user
 * (src/redis/keys.ts): the entry shares a slot with the user's rate counter and the entry's flight lock. `v3`: the
 * value's format (src/cache/redis.ts); entries of an older format, under `v2`, are never read.
 */
export function payloadCacheKey(p: CacheKeyParts): string {
  const digest = createHash("sha256")
    .update(
      JSON.stringify(
        p.variant === undefined
          ? [p.backend, p.userId, normalizeQuery(p.query), p.policyHash]
          : [p.backend, p.userId, normalizeQuery(p.query), p.policyHash, p.variant],
      ),
    )
    .digest("hex");
  return `v3:payload:${p.tenantId}:${slotTag(userScope(p.tenantId, p.userId))}:${digest}`;
}
