import type { BackendConfig } from "../backends/types";
import type { RateRule } from "../limits/types";
import type { BackendName } from "../policy/schema";

export const SCOPES = ["retrieve", "admin", "proxy"] as const;
export type Scope = (typeof SCOPES)[number];

/** In `Tenant.policies.allowed`: any policy (dev mode; also allowed in the tenants file). */
export const ANY_POLICY = "*";

/** Tenants file `policies.shadow` (or MEMGATE_SHADOW_POLICY / MEMGATE_SHADOW_SAMPLE in dev mode). */
export interface ShadowRule {
  policy: string;
  /** Share of cache misses (0–1). */
  sample: number;
}

/** Tenants file `policies.canary`. */
export interface CanaryRule {
  policy: string;
  /** Share of users (0–100). */
  percent: number;
  /** Key of the user hash (default: the tenant id). */
  salt?: string;
}

/** A tenant with its secrets already resolved from the environment variables its file names. */
export interface Tenant {
  id: string;
  /**
   * Policies this tenant may use; `default` is used when a request names none (or `canary.policy` for the users
   * in the canary's share); `shadow` runs beside the served policy on sampled cache misses (docs/rollouts.md).
   */
  policies: { allowed: readonly string[]; default: string; shadow?: ShadowRule; canary?: CanaryRule };
  /** Backend used when neither the request nor the policy names one. */
  defaultBackend: BackendName;
  /** The backends this tenant has, with its own credentials. A backend absent here is not reachable. */
  backends: BackendConfig;
}

/** Who is calling: the tenant and the scopes of the key that was presented. */
export interface Principal {
  tenant: Tenant;
  scopes: ReadonlySet<Scope>;
  /** A short non-secret id of the key (first 8 hex of its hash), safe for logs; "dev" in dev mode. */
  keyId: string;
  /** This key's request rate (tenants file `rateLimit`); absent = MEMGATE_KEY_RATE_LIMIT. */
  rateLimit?: RateRule;
}

export interface TenantDirectory {
  /** True without a tenants file: one tenant `dev`, every scope, any key or none. */
  readonly devMode: boolean;
  /** The principal for a presented key (undefined = no key); null when the key is unknown. */
  authenticate(key: string | undefined): Principal | null;
  tenants(): readonly Tenant[];
}
