import type { BackendProvider } from "../backends/registry";
import { BackendError } from "../backends/types";
import type { ReadinessCheck } from "../http/routes/ops";
import type { PolicyRegistry } from "../policy/registry-types";
import type { TenantDirectory } from "../tenants/types";

export interface ReadinessDeps {
  tenants: TenantDirectory;
  policies: PolicyRegistry;
  backends: BackendProvider;
  /** Extra checks (e.g. Redis), added by the capabilities that need them. */
  extra?: Array<() => Promise<ReadinessCheck>>;
  pingTimeoutMs?: number;
  /** Probes come every few seconds from orchestrators: results are reused this long. */
  cacheMs?: number;
  now?: () => number;
}

/**
 * CONTRACT §6 /readyz: policies loaded (every tenant's default among them), Redis and every configured backend
 * reachable. Each failing check names what is not ready.
 */
export function createReadiness(deps: ReadinessDeps): () => Promise<ReadinessCheck[]> {
  const now = deps.now ?? Date.now;
  const cacheMs = deps.cacheMs ?? 2000;
  let last: { at: number; checks: Promise<ReadinessCheck[]> } | undefined;

  const run = async (): Promise<ReadinessCheck[]> => {
    const checks: ReadinessCheck[] = [];
    const { policies } = deps.policies.list();
    const missing = new Set<string>();
    for (const t of deps.tenants.tenants()) {
      if (!deps.policies.get(t.policies.default)) missing.add(t.policies.default);
    }
    checks.push(
      missing.size === 0 && policies.length > 0
        ? { name: "policies", ok: true, detail: `${policies.length} loaded` }
        : { name: "policies", ok: false, detail: `missing: ${[...missing].join(", ") || "none loaded"}` },
    );
    const seen = new Set<string>();
    const pings: Array<Promise<ReadinessCheck>> = [];
    for (const tenant of deps.tenants.tenants()) {
      for (const name of ["local", "zep", "openmemory"] as const) {
        const backend = deps.backends.get(tenant, name);
        if (!backend) continue;
        const label = name === "local" ? "backend:local" : `backend:${name}:${tenant.id}`;
        if (seen.has(label)) continue;
        seen.add(label);
        pings.push(
          backend
            .then((b) => b.ping({ signal: AbortSignal.timeout(deps.pingTimeoutMs ?? 1000) }))
            .then(
              (): ReadinessCheck => ({ name: label, ok: true }),
              (err: unknown): ReadinessCheck =>
                // A backend that rate-limits the probe is reachable: taking pods out of rotation would not help.
                err instanceof BackendError && err.kind === "rate_limited"
                  ? { name: label, ok: true, detail: "rate limited" }
                  : { name: label, ok: false, detail: err instanceof Error ? err.message : "unreachable" },
            ),
        );
      }
    }
    checks.push(...(await Promise.all(pings)));
    for (const extra of deps.extra ?? []) checks.push(await extra());
    return checks;
  };

  return () => {
    const t = now();
    if (!last || t - last.at > cacheMs) last = { at: t, checks: run() };
    return last.checks;
  };
}
