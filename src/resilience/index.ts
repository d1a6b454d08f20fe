import type { BackendDecorator } from "../backends/registry";
import type { Logger } from "../logging/logger";
import type { ResilienceOptions } from "./options";
import { ResilientBackend } from "./resilient-backend";

export { DEFAULT_RESILIENCE, type ResilienceOptions, resilienceFromEnv } from "./options";
export { type CircuitStatus, ResilientBackend } from "./resilient-backend";

/**
 * The BackendProvider decorator that gives every backend instance (one per tenant and backend) its own retry,
 * circuit breaker and bulkhead. Wired once in src/server/services.ts.
 */
export function resilientBackends(options: ResilienceOptions, logger: Logger): BackendDecorator {
  return function resilient(backend, where) {
    return new ResilientBackend(backend, options, { tenantId: where.tenantId, logger });
  };
}
