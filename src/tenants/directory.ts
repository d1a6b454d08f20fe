/**
 * TenantDirectory implementations: one built from the tenants file (keys looked up by hash in a Map, O(1), no
 * plaintext kept), and dev mode (one tenant `dev`, every scope, any key or none; docs/configuration.md#dev-mode).
 *
 * Tenants are frozen, and serialize with their secrets redacted: `JSON.stringify(tenant)` (and so a logged tenant)
 * shows `apiKey: "[REDACTED]"`, while code reads `tenant.backends.zep.apiKey` as usual.
 */
import type { BackendConfig } from "../backends/types";
import type { At, Path } from "../config/yaml";
import type { RateRule } from "../limits/types";
import { BACKEND_NAMES, type BackendName } from "../policy/schema";
import { hashKey, isWellFormedKey, keyIdOf } from "./keys";
import { type TenantEntry, type TenantsFile, urlProblem } from "./schema";
import {
  ANY_POLICY,
  type Principal,
  SCOPES,
  type Scope,
  type ShadowRule,
  type Tenant,
  type TenantDirectory,
} from "./types";

export const DEFAULT_ZEP_BASE_URL = "https://api.getzep.com/api/v2";
export const DEV_TENANT_ID = "dev";
const REDACTED = "[REDACTED]";

/** Whether the tenant may use the policy (`"*"` in `allowed` means any). */
export function isPolicyAllowed(tenant: Tenant, policy: string): boolean {
  return tenant.policies.allowed.includes(ANY_POLICY) || tenant.policies.allowed.includes(policy);
}

/** One key of the tenants file: its hash, its scopes and whose it is. */
export interface KeyGrant {
  sha256: string;
  scopes: readonly Scope[];
  tenantId: string;
  rateLimit?: RateRule;
}

/**
 * The directory of a tenants file. Throws on a grant for an unknown tenant or a hash given twice (the file loader
 * reports those as file problems first; this is the net under it).
 */
export function createDirectory(tenants: readonly Tenant[], grants: readonly KeyGrant[]): TenantDirectory {
  const sealed = new Map<string, Tenant>();
  for (const t of tenants) {
    if (sealed.has(t.id)) throw new Error(`tenant "${t.id}" is defined twice`);
    sealed.set(t.id, sealTenant(t));
  }
  const byHash = new Map<string, Principal>();
  for (const g of grants) {
    const tenant = sealed.get(g.tenantId);
    if (tenant === undefined) throw new Error(`a key names the unknown tenant "${g.tenantId}"`);
    if (byHash.has(g.sha256)) throw new Error(`key ${keyIdOf(g.sha256)} is granted twice`);
    const principal: Principal = { tenant, scopes: new Set(g.scopes), keyId: keyIdOf(g.sha256) };
    if (g.rateLimit !== undefined) principal.rateLimit = Object.freeze({ ...g.rateLimit });
    byHash.set(g.sha256, Object.freeze(principal));
  }
  const list = Object.freeze([...sealed.values()]);
  return Object.freeze({
    devMode: false,
    authenticate(key: string | undefined): Principal | null {
      if (key === undefined || !isWellFormedKey(key)) return null;
      return byHash.get(hashKey(key)) ?? null;
    },
    tenants: () => list,
  });
}

/**
 * The tenants of a validated file with their credentials read from `env`: a named variable that is unset or blank
 * (or, for `urlEnv`, not an http(s) URL) is reported through `at`, naming the tenant and the variable.
 */
export function resolveTenants(
  data: TenantsFile,
  env: NodeJS.ProcessEnv,
  at: At,
): { tenants: Tenant[]; grants: KeyGrant[] } {
  const tenants: Tenant[] = [];
  const grants: KeyGrant[] = [];
  data.tenants.forEach((entry, ti) => {
    const configured = BACKEND_NAMES.filter((b) => entry.backends[b] !== undefined);
    tenants.push({
      id: entry.id,
      policies: rolloutPolicies(entry.policies),
      defaultBackend: entry.defaultBackend ?? configured[0] ?? "local",
      backends: resolveBackends(entry, ti, env, at),
    });
    for (const k of entry.keys) {
      grants.push({
        sha256: k.sha256,
        scopes: k.scopes,
        tenantId: entry.id,
        ...(k.rateLimit === undefined ? {} : { rateLimit: k.rateLimit }),
      });
    }
  });
  return { tenants, grants };
}

/** A tenant's policies as the file gives them: the allowed list, the default, the shadow and canary rules. */
function rolloutPolicies(p: TenantEntry["policies"]): Tenant["policies"] {
  const { canary } = p;
  return {
    allowed: p.allowed,
    default: p.default,
    ...(p.shadow === undefined ? {} : { shadow: { policy: p.shadow.policy, sample: p.shadow.sample } }),
    ...(canary === undefined
      ? {}
      : {
          canary: {
            policy: canary.policy,
            percent: canary.percent,
            ...(canary.salt === undefined ? {} : { salt: canary.salt }),
          },
        }),
  };
}

/** The tenant's backend settings with every named environment variable read (unset or blank is an error). */
function resolveBackends(t: TenantEntry, ti: number, env: NodeJS.ProcessEnv, at: At): BackendConfig {
  const base: Path = ["tenants", ti, "backends"];
  const read = (name: string, path: Path): string | undefined => {
    const value = env[name]?.trim();
    if (value === undefined || value === "") {
      at(
        path,
        `tenant "${t.id}": environment variable ${name} is ${value === undefined ? "not set" : "empty"}`,
      );
      return undefined;
    }
    return value;
  };
  const out: BackendConfig = {};
  const { zep, openmemory, local } = t.backends;
  if (zep !== undefined) {
    const apiKey = read(zep.apiKeyEnv, [...base, "zep", "apiKeyEnv"]);
    if (apiKey !== undefined) out.zep = { apiKey, baseUrl: zep.baseUrl ?? DEFAULT_ZEP_BASE_URL };
  }
  if (openmemory !== undefined) {
    let baseUrl = openmemory.url;
    if (openmemory.urlEnv !== undefined) {
      const path: Path = [...base, "openmemory", "urlEnv"];
      const value = read(openmemory.urlEnv, path);
      const problem = value === undefined ? undefined : urlProblem(value);
      if (problem !== undefined)
        at(path, `tenant "${t.id}": environment variable ${openmemory.urlEnv} ${problem}`);
      else baseUrl = value;
    }
    const apiKey =
      openmemory.apiKeyEnv === undefined
        ? undefined
        : read(openmemory.apiKeyEnv, [...base, "openmemory", "apiKeyEnv"]);
    if (baseUrl !== undefined) {
      out.openmemory = {
        baseUrl,
        userScoping: openmemory.userScoping,
        ...(apiKey === undefined ? {} : { apiKey }),
      };
    }
  }
  if (local !== undefined) out.local = { dataFile: local.dataFile };
  return out;
}

/**
 * Dev mode (no tenants file): one tenant `dev` with every scope and every policy (`allowed: ["*"]`, default
 * `default`, `shadow` from MEMGATE_SHADOW_POLICY); any key or none yields it, with keyId `dev`. Backends come from the environment: `local` always,
 * `zep` when ZEP_API_KEY is set (ZEP_BASE_URL or Zep Cloud), `openmemory` when OPENMEMORY_URL is set
 * (OPENMEMORY_API_KEY optional, user scoping `user_id`). Throws when `defaults.backend` is not configured.
 */
export function devDirectory(
  env: NodeJS.ProcessEnv,
  defaults: { backend: BackendName; localDataFile: string; shadow?: ShadowRule | undefined },
): TenantDirectory {
  const backends: BackendConfig = { local: { dataFile: defaults.localDataFile } };
  const zepKey = nonBlank(env.ZEP_API_KEY);
  if (zepKey !== undefined) {
    backends.zep = { apiKey: zepKey, baseUrl: nonBlank(env.ZEP_BASE_URL) ?? DEFAULT_ZEP_BASE_URL };
  }
  const omUrl = nonBlank(env.OPENMEMORY_URL);
  if (omUrl !== undefined) {
    const apiKey = nonBlank(env.OPENMEMORY_API_KEY);
    backends.openmemory = {
      baseUrl: omUrl,
      userScoping: "user_id",
      ...(apiKey === undefined ? {} : { apiKey }),
    };
  }
  if (backends[defaults.backend] === undefined) {
    const needs = defaults.backend === "zep" ? "ZEP_API_KEY" : "OPENMEMORY_URL";
    throw new Error(`MEMGATE_BACKEND is "${defaults.backend}" but ${needs} is not set`);
  }
  const tenant = sealTenant({
    id: DEV_TENANT_ID,
    policies: {
      allowed: [ANY_POLICY],
      default: "default",
      ...(defaults.shadow === undefined ? {} : { shadow: defaults.shadow }),
    },
    defaultBackend: defaults.backend,
    backends,
  });
  const principal: Principal = Object.freeze({ tenant, scopes: new Set(SCOPES), keyId: DEV_TENANT_ID });
  const list = Object.freeze([tenant]);
  return Object.freeze({ devMode: true, authenticate: () => principal, tenants: () => list });
}

function nonBlank(value: string | undefined): string | undefined {
  const v = value?.trim();
  return v === undefined || v === "" ? undefined : v;
}

/** A frozen copy of the tenant whose JSON form hides its credentials. */
function sealTenant(t: Tenant): Tenant {
  const { zep, openmemory, local } = t.backends;
  const backends: BackendConfig = {};
  if (zep !== undefined) backends.zep = Object.freeze({ ...zep });
  if (openmemory !== undefined) backends.openmemory = Object.freeze({ ...openmemory });
  if (local !== undefined) backends.local = Object.freeze({ ...local });
  const sealed: Tenant = {
    id: t.id,
    policies: Object.freeze({
      allowed: Object.freeze([...t.policies.allowed]),
      default: t.policies.default,
      ...(t.policies.shadow === undefined ? {} : { shadow: Object.freeze({ ...t.policies.shadow }) }),
      ...(t.policies.canary === undefined ? {} : { canary: Object.freeze({ ...t.policies.canary }) }),
    }),
    defaultBackend: t.defaultBackend,
    backends: Object.freeze(backends),
  };
  Object.defineProperty(sealed, "toJSON", { enumerable: false, value: () => redacted(sealed) });
  return Object.freeze(sealed);
}

function redacted(t: Tenant): Record<string, unknown> {
  const { zep, openmemory, local } = t.backends;
  return {
    id: t.id,
    policies: t.policies,
    defaultBackend: t.defaultBackend,
    backends: {
      ...(zep === undefined ? {} : { zep: { ...zep, apiKey: REDACTED } }),
      ...(openmemory === undefined
        ? {}
        : {
            openmemory: { ...openmemory, ...(openmemory.apiKey === undefined ? {} : { apiKey: REDACTED }) },
          }),
      ...(local === undefined ? {} : { local }),
    },
  };
}
