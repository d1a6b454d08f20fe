import { createHash } from "node:crypto";
import { RecentCache } from "../pipeline/text/recent";

/**
 * Hash tags (Redis Cluster): only the part of a key between the first `{` and the next `}` picks its slot, so keys
 * with the same tag live on the same node and one script may touch them all. memgate tags by **user of a tenant**:
 * a user's rate counter, payload cache entries and single-flight locks share a slot (the admission and lock scripts
 * touch them together), while different users — and tenants — spread over every slot. The tag is a hash: user ids
 * never appear in clear in a key. The key space, key by key: docs/redis.md.
 */
export function slotTag(scope: string): string {
  let tag = tags.get(scope);
  if (tag === undefined) {
    tag = `{${hashScope(scope)}}`;
    tags.set(scope, tag, tag.length);
  }
  return tag;
}

/**
 * The tags of the scopes seen last: one turn needs its user's tag for the cache key, the rate counter (the admission
 * script), the single-flight lock and the reinforcement hash; it is hashed once, not at each (issue 29). Bounded
 * (the shared RecentCache: a user active in each generation keeps its tag), so a stream of new users costs the hash
 * they cost before.
 */
const tags = new RecentCache<string>(1024, 1024 * 256);

/** The scope of one user of one tenant (the per-user rate limit's key; its slot tag is the user's). */
export function userScope(tenantId: string, userId: string): string {
  return `${tenantId}:${userId}`;
}

/** 32 base64url characters (192 bits) of SHA-256: never `{` or `}`, so a tag never ends early. */
export function hashScope(scope: string): string {
  return createHash("sha256").update(scope).digest("base64url").slice(0, 32);
}
