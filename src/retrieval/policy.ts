/**
 * Which compiled policy a retrieval runs (every door: /v1/retrieve's `policy` field, the drop-in routes'
 * `x-memgate-policy` header, the CLI): the named one, else the tenant's canary for the user's share, else the tenant's default, allowed for the tenant, with the
 * admin's `overrides` and a door's own result count applied. Refusals are typed (./outcome.ts), never HTTP.
 */
import { formatPath } from "../config/yaml";
import type { Logger } from "../logging/logger";
import { type CompiledPolicy, compilePolicy, type OverrideCache, policyHash } from "../policy/compile";
import { PolicyError } from "../policy/load";
import type { PolicyRegistry } from "../policy/registry-types";
import { POLICY_NAME, policySchema } from "../policy/schema";
import { canaryPolicyFor } from "../rollout/canary";
import { isPolicyAllowed } from "../tenants/directory";
import type { Principal } from "../tenants/types";
import type { Refusal } from "./outcome";

/** A policy name (file name stem): what `policy` and `x-memgate-policy` accept. */
export { POLICY_NAME };

/** Served only if a tenant's default policy vanished from the registry: seed 000's defaults, never a 5xx. */
export const BUILTIN_POLICY = compilePolicy(policySchema.parse({ name: "builtin-default", version: 1 }));

export interface PolicyAsk {
  /** A policy name the caller asked for; undefined = the tenant's default. */
  name: string | undefined;
  /** How the caller named it, for refusal messages (`policy`, `x-memgate-policy`). */
  field: string;
  overrides: Record<string, unknown> | undefined;
  /** A door's own result count: replaces `retrieval.topK` for this request (see `withTopK`). */
  topK: number | undefined;
  /** The user of a retrieval: with `name` undefined, a tenant's canary may choose the policy (src/rollout/canary.ts). */
  userId?: string | undefined;
}

export interface PolicyDeps {
  policies: PolicyRegistry;
  overrides: OverrideCache;
  logger: Logger;
}

export function requireAdmin(principal: Principal, field: string): Refusal | undefined {
  return principal.scopes.has("admin")
    ? undefined
    : { kind: "refused", code: "FORBIDDEN", detail: `${field}: needs the 'admin' scope` };
}

/** The policy for one retrieval, or why the caller may not have it. */
export function resolvePolicy(
  deps: PolicyDeps,
  principal: Principal,
  ask: PolicyAsk,
): CompiledPolicy | Refusal {
  const { tenant } = principal;
  if (ask.name !== undefined && !POLICY_NAME.test(ask.name)) {
    return { kind: "refused", code: "VALIDATION_FAILED", detail: `${ask.field}: must be a policy name` };
  }
  // An explicit policy wins over the canary; the canary wins over the default (docs/rollouts.md#precedence).
  const name =
    ask.name ??
    canaryPolicyFor(tenant, ask.userId, (n) => deps.policies.get(n) !== undefined) ??
    tenant.policies.default;
  if (!isPolicyAllowed(tenant, name)) {
    return {
      kind: "refused",
      code: "FORBIDDEN",
      detail: `${ask.field}: "${name}" is not allowed for this tenant`,
    };
  }
  let compiled = deps.policies.get(name);
  if (compiled === undefined) {
    if (ask.name !== undefined) {
      return {
        kind: "refused",
        code: "VALIDATION_FAILED",
        detail: `${ask.field}: no policy named "${name}"`,
      };
    }
    // A retired default (its file was deleted) keeps its last version: /readyz reports the tenant degraded.
    compiled = deps.policies.retired(name);
    if (compiled === undefined) {
      deps.logger.error(
        { tenant: tenant.id, policy: name },
        "default policy missing; serving built-in defaults",
      );
      compiled = BUILTIN_POLICY;
    }
  }
  if (ask.overrides !== undefined) {
    const refused = requireAdmin(principal, "overrides");
    if (refused) return refused;
    try {
      compiled = deps.overrides.apply(compiled, ask.overrides);
    } catch (err) {
      if (!(err instanceof PolicyError)) throw err;
      const detail = err.problems.map((p) => `${formatPath(p.path)}: ${p.message}`).join("; ");
      return { kind: "refused", code: "VALIDATION_FAILED", detail };
    }
  }
  return ask.topK === undefined ? compiled : withTopK(compiled, ask.topK);
}

/**
 * The same compiled policy with another `retrieval.topK`, `budget.fill` and `ranking.dynamicK` off: a drop-in SDK asked for at most
 * that many results (Zep `limit` up to 50, OpenMemory `k` up to 200, beyond the 1–20 of policy files), so the
 * budget never adds more. An internal variant with a hash of its own (so a cache entry of one `limit` never
 * answers another); never validated against the file schema, never visible outside the request.
 */
export function withTopK(compiled: CompiledPolicy, topK: number): CompiledPolicy {
  const k = Math.max(1, Math.floor(topK));
  const { retrieval, budget, ranking } = compiled.policy;
  if (retrieval.topK === k && !budget.fill && !ranking.dynamicK.enabled) return compiled;
  const policy = {
    ...compiled.policy,
    retrieval: { ...retrieval, topK: k },
    budget: { ...budget, fill: false },
    // The SDK's own count, not one that follows the question.
    ranking: { ...ranking, dynamicK: { ...ranking.dynamicK, enabled: false } },
  };
  return { policy, hash: policyHash(policy), ctx: compiled.ctx };
}
