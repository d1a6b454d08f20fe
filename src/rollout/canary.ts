/**
 * Canary policies (tenants file `policies.canary`, docs/rollouts.md#canary): a stable share of a tenant's users is
 * served the canary policy instead of the default. A user's place is a keyed hash (HMAC-SHA256, keyed by the
 * canary's `salt`, default the tenant id, of the tenant and user ids), so a user's context does not flip between
 * turns, every replica agrees without shared state, and raising `percent` only adds users (who was in stays in).
 */
import { createHmac } from "node:crypto";
import type { CanaryRule, Tenant } from "../tenants/types";

/** The user's place in [0, 100): the first 48 bits of the keyed hash, scaled. */
export function canaryPoint(tenantId: string, userId: string, salt: string = tenantId): number {
  const digest = createHmac("sha256", salt).update(`${tenantId}\u0000${userId}`).digest();
  return (digest.readUIntBE(0, 6) / 2 ** 48) * 100;
}

/** Whether the user is in the canary's share. */
export function inCanary(rule: CanaryRule, tenantId: string, userId: string): boolean {
  return rule.percent > 0 && canaryPoint(tenantId, userId, rule.salt ?? tenantId) < rule.percent;
}

/**
 * The policy a request that names none gets for this user: the canary's when the user is in its share and the
 * policy is loaded (`loaded`); undefined = the tenant's default. A canary policy missing from the registry (its
 * file deleted) serves the default rather than refusing.
 */
export function canaryPolicyFor(
  tenant: Tenant,
  userId: string | undefined,
  loaded: (name: string) => boolean,
): string | undefined {
  const rule = tenant.policies.canary;
  if (rule === undefined || userId === undefined) return undefined;
  if (!inCanary(rule, tenant.id, userId) || !loaded(rule.policy)) return undefined;
  return rule.policy;
}
