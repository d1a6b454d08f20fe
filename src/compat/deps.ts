import type { KeyLimits } from "../http/rate-limit";
import type { Logger } from "../logging/logger";
import type { PolicyRegistry } from "../policy/registry-types";
import type { TenantDirectory } from "../tenants/types";
import type { LocalStores } from "./local-stores";

/** What the drop-in compatibility routes need from the wired services (a subset of AppServices). */
export interface CompatDeps {
  logger: Logger;
  tenants: TenantDirectory;
  policies: PolicyRegistry;
  /** The per-API-key rate limit, applied right after authentication as on /v1/*. */
  keyLimits?: KeyLimits;
  /** Needed to serve the OpenMemory surface from a tenant's embedded local backend. */
  localStores?: LocalStores;
}
