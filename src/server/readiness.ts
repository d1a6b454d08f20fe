import { dirname, sep } from "node:path";
import type { BackendProvider } from "../backends/registry";
import type { ReadinessCheck } from "../http/routes/ops";
import type { PolicyRegistry } from "../policy/registry-types";
import { BACKEND_NAMES, type BackendName } from "../policy/schema";
import { type CircuitStatus, ResilientBackend } from "../resilience";
import type { TenantDirectory } from "../tenants/types";
import type { TenantsFileStatus } from "../tenants/watch";

export interface ReadinessDeps {
  tenants: TenantDirectory;
  policies: PolicyRegistry;
  backends: BackendProvider;
  /** Extra checks (e.g. Redis), added by the capabilities that need them. */
  extra?: Array<() => Promise<ReadinessCheck>>;
  /** The tenants file's reload state (unset in dev mode): a refused change is reported as degraded. */
  tenantsFile?: () => TenantsFileStatus;
  /** Probes come every few seconds from orchestrators: the extra checks' results are reused this long. */
  cacheMs?: number;
  now?: () => number;
}

/** One backend instance's circuit, as seen by one tenant that uses it. */
export interface CircuitReading {
  backend: BackendName;
  tenant: string;
  state: CircuitStatus;
}

/**
 * The circuit of every backend instance built so far (one per tenant and backend, local stores included).
 * Instances never used are absent: nothing is built or called here.
 */
export function readCircuits(tenants: TenantDirectory, backends: BackendProvider): CircuitReading[] {
  const out: CircuitReading[] = [];
  for (const tenant of tenants.tenants()) {
    for (const name of BACKEND_NAMES) {
      const backend = backends.built(tenant, name);
      if (backend instanceof ResilientBackend)
        out.push({ backend: name, tenant: tenant.id, state: backend.circuit() });
    }
  }
  return out;
}

/**
 * /readyz (docs/api.md#operations-endpoints): can this process serve? Not ready (503) only when it cannot: a tenant's default policy is
 * missing, or no policy is loaded. (Draining is answered by the route itself, src/http/routes/ops.ts.)
 *
 * Everything else is *degraded* (200): a backend whose circuit is open or half-open (its fallback answers: one
 * check per backend name, counting circuits, naming no tenant — the probe is unauthenticated) and the extra checks (Redis down: cache bypassed, in-process limits). Taking every replica out of rotation because a
 * backend or Redis is down would turn a partial outage into a full one, and would not help: every replica shares
 * the same backends. Backends are not pinged: their state is what their circuit breakers learned from real calls,
 * so a probe costs no backend call, however many tenants there are.
 */
export function createReadiness(deps: ReadinessDeps): () => Promise<ReadinessCheck[]> {
  const now = deps.now ?? Date.now;
  const cacheMs = deps.cacheMs ?? 2000;
  let last: { at: number; checks: Promise<ReadinessCheck[]> } | undefined;

  const extras = (): Promise<ReadinessCheck[]> => {
    const t = now();
    if (!last || t - last.at > cacheMs)
      last = { at: t, checks: Promise.all((deps.extra ?? []).map((check) => check())) };
    return last.checks;
  };

  return async () => {
    const checks: ReadinessCheck[] = [];
    const { policies } = deps.policies.list();
    const missing = new Set<string>();
    // Retired default policy → how many tenants it is the default of. Counted, never named by tenant: the probe
    // is unauthenticated (the tenants file says whose default it is).
    const retiredDefaults = new Map<string, { version: number; tenants: number }>();
    for (const t of deps.tenants.tenants()) {
      const name = t.policies.default;
      if (deps.policies.get(name)) continue;
      const last = deps.policies.retired(name);
      if (!last) missing.add(name);
      else {
        const seen = retiredDefaults.get(name);
        retiredDefaults.set(name, { version: last.policy.version, tenants: (seen?.tenants ?? 0) + 1 });
      }
    }
    const retired = [...retiredDefaults].map(
      ([name, r]) =>
        `default policy "${name}" (version ${r.version}) of ${r.tenants} tenant${r.tenants === 1 ? "" : "s"}`,
    );
    const active = policies.filter((p) => p.status === "active").length;
    checks.push(
      missing.size === 0 && active + retired.length > 0
        ? { name: "policies", ok: true, detail: `${active} loaded` }
        : { name: "policies", ok: false, detail: `missing: ${[...missing].join(", ") || "none loaded"}` },
    );
    // A retired default keeps serving its last version: the tenant is answered, but its file is gone.
    if (retired.length > 0) {
      checks.push({
        name: "policies:retired-defaults",
        ok: false,
        degraded: true,
        detail: `${retired.join("; ")}: the file was deleted, the last version keeps serving; restore the file or change the tenant's default`,
      });
    }
    const file = deps.tenantsFile?.();
    if (file?.lastError != null) {
      // The previous file keeps serving: degraded, not down. Paths are cut to the file's name (an open probe).
      const lines = file.lastError.split("\n").map((l) => l.replaceAll(`${dirname(file.file)}${sep}`, ""));
      checks.push({
        name: "tenants",
        ok: false,
        degraded: true,
        detail: `change rejected, the file loaded at ${file.loadedAt} keeps serving: ${lines.join("; ")}`,
      });
    }
    // Read fresh on every probe (no I/O): a circuit that just opened shows at once.
    const circuits = readCircuits(deps.tenants, deps.backends);
    const closed = circuits.filter((c) => c.state === "closed").length;
    checks.push({ name: "backends", ok: true, detail: `${closed} of ${circuits.length} circuits closed` });
    // By backend, never by tenant: the probe is unauthenticated (per-tenant states are on /metrics and in logs).
    for (const backend of BACKEND_NAMES) {
      const mine = circuits.filter((c) => c.backend === backend);
      const open = mine.filter((c) => c.state === "open").length;
      const probing = mine.filter((c) => c.state === "half_open").length;
      if (open + probing === 0) continue;
      const state =
        probing === 0
          ? "open"
          : open === 0
            ? "half-open (probing)"
            : `open or half-open (${open} open, ${probing} probing)`;
      const detail = `${open + probing} of ${mine.length} ${backend} circuits ${state}`;
      checks.push({ name: `backend:${backend}`, ok: false, degraded: true, detail });
    }
    checks.push(...(await extras()));
    return checks;
  };
}
