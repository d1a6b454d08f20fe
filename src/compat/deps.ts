import type { KeyLimits } from "../http/rate-limit";
import type { Logger } from "../logging/logger";
import type { RetrievalService } from "../retrieval/service";
import type { TenantDirectory } from "../tenants/types";
import type { LocalStores } from "./local-stores";

/** What the drop-in doors need from the wired services (a subset of AppServices). */
export interface CompatDeps {
  logger: Logger;
  tenants: TenantDirectory;
  /** The one retrieval core: the doors' searches go through it as /v1/retrieve's do. */
  retrieval: RetrievalService;
  /** The per-API-key rate limit, applied right after authentication as on /v1/*. */
  keyLimits?: KeyLimits;
  /** Needed to serve the OpenMemory surface from a tenant's embedded local backend. */
  localStores?: LocalStores;
  /** The transparent proxy's deadline for a whole exchange (`MEMGATE_PROXY_DEADLINE_MS`; default in ./proxy.ts). */
  proxyDeadlineMs?: number;
}
