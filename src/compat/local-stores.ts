import { LocalBackend } from "../backends/local";
import type { BackendFactories } from "../backends/registry";
import type { Tenant } from "../tenants/types";

/**
 * The local data files named by more than one tenant, with those tenants (in file order). Each such tenant
 * loads its own copy (one store per tenant); the boot log says so, since a shared file is often a mistake.
 */
export function sharedDataFiles(tenants: readonly Tenant[]): Array<{ dataFile: string; tenants: string[] }> {
  const byFile = new Map<string, string[]>();
  for (const tenant of tenants) {
    const file = tenant.backends.local?.dataFile;
    if (file === undefined) continue;
    byFile.set(file, [...(byFile.get(file) ?? []), tenant.id]);
  }
  return [...byFile]
    .filter(([, ids]) => ids.length > 1)
    .map(([dataFile, ids]) => ({ dataFile, tenants: ids }));
}

/**
 * The embedded local stores by tenant, as the backend factories built them, for the OpenMemory surface
 * (src/backends/local/openmemory.ts), which needs the store's own operations (add, get, delete, list) besides
 * the `Backend` interface. The instances are the ones /v1/retrieve searches (captured before any wrapping,
 * e.g. telemetry), so a memory added through the OpenMemory API is found by /v1/retrieve too — for the same
 * tenant only: every tenant has its own store, even when two tenants name the same data file.
 */
export class LocalStores {
  private readonly byTenant = new Map<string, LocalBackend>();

  /** The same factories; each local store they build is remembered by the tenant it was built for. */
  capture(factories: BackendFactories): BackendFactories {
    return {
      ...factories,
      local: async (cfg, owner) => {
        const backend = await factories.local(cfg, owner);
        if (backend instanceof LocalBackend) this.byTenant.set(owner.tenantId, backend);
        return backend;
      },
    };
  }

  /** The tenant's own store, once built (every tenant's is built at boot). */
  get(tenantId: string): LocalBackend | undefined {
    return this.byTenant.get(tenantId);
  }
}
