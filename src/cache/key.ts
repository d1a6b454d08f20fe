import { hash } from "node:crypto";
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
  // `crypto.hash`, the one-shot digest (Node ≥ 20.12): no Hash object per request.
  const digest = hash(
    "sha256",
    JSON.stringify(
      p.variant === undefined
        ? [p.backend, p.userId, normalizeQuery(p.query), p.policyHash]
        : [p.backend, p.userId, normalizeQuery(p.query), p.policyHash, p.variant],
    ),
    "hex",
  );
  return `v3:payload:${p.tenantId}:${slotTag(userScope(p.tenantId, p.userId))}:${digest}`;
}

/**
 * The keys of one tenant's user's cache as a whole (docs/redis.md#key-space), all under the user's slot tag: `prefix`
 * starts every payload entry of that user; `generation` counts the user's invalidations (a write or delete through
 * the gateway); `index` lists the user's entries (Redis), so an invalidation can delete them on every replica.
 */
export interface UserCacheKeys {
  prefix: string;
  generation: string;
  index: string;
}

export function userCacheKeys(tenantId: string, userId: string): UserCacheKeys {
  return userKeysOf(`${tenantId}:${slotTag(userScope(tenantId, userId))}`);
}

/** The user keys of a payload entry's key; undefined for a key not made by `payloadCacheKey`. */
export function userCacheKeysOf(cacheKey: string): UserCacheKeys | undefined {
  const m = /^v3:payload:([a-z0-9_-]+:\{[A-Za-z0-9_-]+\}):/.exec(cacheKey);
  return m?.[1] === undefined ? undefined : userKeysOf(m[1]);
}

function userKeysOf(tenantAndTag: string): UserCacheKeys {
  return {
    prefix: `v3:payload:${tenantAndTag}:`,
    generation: `v3:generation:${tenantAndTag}`,
    index: `v3:entries:${tenantAndTag}`,
  };
}
