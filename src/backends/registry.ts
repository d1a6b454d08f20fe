import { createHash } from "node:crypto";
import type { BackendName } from "../policy/schema";
import type { Tenant } from "../tenants/types";
import type { Backend, BackendConfig } from "./types";

/** Whose instance a factory builds. */
export interface BuildFor {
  tenantId: string;
}

/** How to build each kind of backend from one tenant's resolved credentials (typed, one entry per name). */
export type BackendFactories = {
  [K in BackendName]: (cfg: NonNullable<BackendConfig[K]>, owner: BuildFor) => Backend | Promise<Backend>;
};

/** Wraps a freshly built backend instance (one per tenant and backend). */
export type BackendDecorator = (backend: Backend, where: { name: BackendName; tenantId?: string }) => Backend;

/**
 * Backend instances per tenant, built lazily from that tenant's own credentials and reused. A tenant can only
 * reach the backends its configuration names (docs/configuration.md#tenants-file). Every instance belongs to one
 * tenant, local stores included: two tenants naming the same `dataFile` each load their own writable copy of it
 * (issue 26 finding 1: a store shared by file let one tenant read and delete another's memories).
 */
export class BackendProvider {
  private readonly instances = new Map<string, Promise<Backend>>();
  /** The instances whose build finished, by the same key (read by `built()`, which never builds one). */
  private readonly settled = new Map<string, Backend>();

  constructor(
    private readonly factories: BackendFactories,
    /** Wraps each instance once, when built (src/resilience: retry, circuit breaker, bulkhead per instance). */
    private readonly decorate?: BackendDecorator,
  ) {}

  has(tenant: Tenant, name: BackendName): boolean {
    return tenant.backends[name] !== undefined;
  }

  /** undefined when the tenant has no such backend. Rejects only if the factory itself fails. */
  get(tenant: Tenant, name: BackendName): Promise<Backend> | undefined {
    const key = this.keyFor(tenant, name);
    if (key === undefined) return undefined;
    let instance = this.instances.get(key);
    if (!instance) {
      const decorate = this.decorate;
      const where = { name, tenantId: tenant.id };
      instance = decorate
        ? this.build(tenant, name).then((b) => decorate(b, where))
        : this.build(tenant, name);
      this.instances.set(key, instance);
      // A failed build is not cached: the next request tries again.
      instance.then(
        (b) => this.settled.set(key, b),
        () => this.instances.delete(key),
      );
    }
    return instance;
  }

  /**
   * The tenant's instance if one was already built, else undefined.
   * Never builds and never calls it: readiness and the circuit gauge read the breakers through it.
   */
  built(tenant: Tenant, name: BackendName): Backend | undefined {
    const key = this.keyFor(tenant, name);
    return key === undefined ? undefined : this.settled.get(key);
  }

  /**
   * One instance per tenant, backend and settings: when the tenants file is reloaded with other credentials or
   * another URL for a tenant's backend, the next request builds a new instance with them (the old one is closed
   * at shutdown). Unchanged settings keep their instance, its circuit and its local store.
   */
  private keyFor(tenant: Tenant, name: BackendName): string | undefined {
    const cfg = tenant.backends[name];
    return cfg ? `${tenant.id}:${name}:${settingsFingerprint(cfg)}` : undefined;
  }

  private async build(tenant: Tenant, name: BackendName): Promise<Backend> {
    const owner = { tenantId: tenant.id };
    switch (name) {
      case "zep": {
        const cfg = tenant.backends.zep;
        if (!cfg) throw new Error(`tenant ${tenant.id} has no zep backend`);
        return this.factories.zep(cfg, owner);
      }
      case "openmemory": {
        const cfg = tenant.backends.openmemory;
        if (!cfg) throw new Error(`tenant ${tenant.id} has no openmemory backend`);
        return this.factories.openmemory(cfg, owner);
      }
      case "local": {
        const cfg = tenant.backends.local;
        if (!cfg) throw new Error(`tenant ${tenant.id} has no local backend`);
        return this.factories.local(cfg, owner);
      }
    }
  }

  /** Every instance built so far (for readiness checks and shutdown). */
  async all(): Promise<Array<{ key: string; backend: Backend }>> {
    const out: Array<{ key: string; backend: Backend }> = [];
    for (const [key, p] of this.instances) {
      const backend = await p.catch(() => undefined);
      if (backend) out.push({ key, backend });
    }
    return out;
  }

  async close(): Promise<void> {
    for (const { backend } of await this.all()) await backend.close?.().catch(() => undefined);
  }
}

const fingerprints = new WeakMap<object, string>();

/** A short hash of one backend's settings (secrets included, so never shown: only compared). */
function settingsFingerprint(cfg: object): string {
  let fp = fingerprints.get(cfg);
  if (fp === undefined) {
    fp = createHash("sha256").update(JSON.stringify(cfg)).digest("hex").slice(0, 12);
    fingerprints.set(cfg, fp);
  }
  return fp;
}
