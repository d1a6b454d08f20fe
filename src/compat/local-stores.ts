import { LocalBackend } from "../backends/local";
import type { BackendFactories } from "../backends/registry";

/**
 * The embedded local stores by data file, as the backend factories built them, for the OpenMemory surface
 * (src/backends/local/openmemory.ts), which needs the store's own operations (add, get, delete, list) besides
 * the `Backend` interface. The instances are the ones /v1/retrieve searches (captured before any wrapping,
 * e.g. telemetry), so a memory added through the OpenMemory API is found by /v1/retrieve too.
 */
export class LocalStores {
  private readonly byFile = new Map<string, LocalBackend>();

  /** The same factories; each local store they build is remembered by its data file. */
  capture(factories: BackendFactories): BackendFactories {
    return {
      ...factories,
      local: async (cfg) => {
        const backend = await factories.local(cfg);
        if (backend instanceof LocalBackend) this.byFile.set(cfg.dataFile, backend);
        return backend;
      },
    };
  }

  get(dataFile: string): LocalBackend | undefined {
    return this.byFile.get(dataFile);
  }
}
