import { existsSync } from "node:fs";
import { join } from "node:path";
import { createLocalBackend } from "../backends/local";
import { createOpenMemoryBackend } from "../backends/openmemory";
import { type BackendFactories, BackendProvider } from "../backends/registry";
import { createZepBackend } from "../backends/zep";
import type { PayloadCache } from "../cache/types";
import { LocalStores, sharedDataFiles } from "../compat/local-stores";
import type { Env } from "../config/env";
import { loadGolden } from "../eval/files";
import { GoldenSetError } from "../eval/golden";
import type { AppServices } from "../http/app";
import type { PlaygroundConfig } from "../http/routes/playground";
import type { RateLimiter } from "../limits/types";
import type { Logger } from "../logging/logger";
import { warmTokenizers } from "../pipeline/tokenizers";
import { OverrideCache } from "../policy/compile";
import { createPolicyRegistry } from "../policy/registry";
import type { RedisConnection } from "../redis/connection";
import { resilienceFromEnv, resilientBackends } from "../resilience";
import { ExistenceCache } from "../retrieval/existence";
import { RetrievalService } from "../retrieval/service";
import { instrumentFactories } from "../telemetry/backend";
import { observeCircuits, recordPolicyEvent } from "../telemetry/metrics";
import { configureUserHash } from "../telemetry/redact";
import { configureStageTracing } from "../telemetry/tracing";
import { devDirectory } from "../tenants/directory";
import { loadTenantsFile } from "../tenants/file";
import type { TenantDirectory } from "../tenants/types";
import { createReadiness, readCircuits } from "./readiness";
import { createSharedState } from "./shared-state";

export const DEFAULT_TENANTS_FILE = "config/tenants.yaml";

/** The built playground page (`npm run build`: src/ui → dist/ui), from src/server or dist/server alike. */
export const UI_DIR = join(__dirname, "..", "..", "dist", "ui");

export const BACKEND_FACTORIES: BackendFactories = {
  zep: (cfg) => createZepBackend(cfg),
  openmemory: (cfg) => createOpenMemoryBackend(cfg),
  local: (cfg) => createLocalBackend(cfg),
};

export class BootError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "BootError";
  }
}

export interface Services extends AppServices {
  backends: BackendProvider;
  cache: PayloadCache;
  limiter: RateLimiter;
  /**
   * Set when a Redis is configured (REDIS_URL, REDIS_CLUSTER_NODES or REDIS_SENTINELS): the connection shared by
   * cache, single-flight, limits and cooldowns.
   */
  redis?: RedisConnection;
  lifecycle: { shuttingDown: boolean };
  close(): Promise<void>;
}

export interface BuildOptions {
  env: Env;
  rawEnv: NodeJS.ProcessEnv;
  logger: Logger;
  factories?: BackendFactories;
  watchPolicies?: boolean;
}

async function loadTenants(env: Env, rawEnv: NodeJS.ProcessEnv): Promise<TenantDirectory> {
  const file =
    env.MEMGATE_TENANTS_FILE ?? (existsSync(DEFAULT_TENANTS_FILE) ? DEFAULT_TENANTS_FILE : undefined);
  if (file !== undefined) return loadTenantsFile(file, rawEnv);
  return devDirectory(rawEnv, { backend: env.MEMGATE_BACKEND, localDataFile: env.MEMGATE_LOCAL_DATA });
}

/** MEMGATE_PLAYGROUND and MEMGATE_PLAYGROUND_GOLDEN: the page must be built, the golden set must load. */
async function playgroundConfig(env: Env): Promise<PlaygroundConfig | undefined> {
  const uiDir = UI_DIR;
  if (env.MEMGATE_PLAYGROUND !== "on") return undefined;
  if (!existsSync(join(uiDir, "index.html")) || !existsSync(join(uiDir, "app.js"))) {
    throw new BootError(`MEMGATE_PLAYGROUND: the page is not built in ${uiDir} (run npm run build)`);
  }
  const file = env.MEMGATE_PLAYGROUND_GOLDEN;
  if (file === undefined) return { uiDir };
  try {
    return { uiDir, golden: { file, questions: (await loadGolden(file)).questions } };
  } catch (err) {
    if (err instanceof GoldenSetError) throw new BootError(`MEMGATE_PLAYGROUND_GOLDEN: ${err.message}`);
    throw err;
  }
}

/** Wires every capability from the validated environment (the one place that knows the implementations). */
export async function buildServices(opts: BuildOptions): Promise<Services> {
  const { env, logger } = opts;
  configureUserHash(env.MEMGATE_USER_HASH_KEY);
  configureStageTracing(env.MEMGATE_TRACE_STAGES);
  const tenants = await loadTenants(env, opts.rawEnv);
  const playground = await playgroundConfig(env);
  const policies = await createPolicyRegistry({
    dir: env.MEMGATE_POLICY_DIR,
    logger,
    watch: opts.watchPolicies ?? true,
    onEvent: recordPolicyEvent,
  });
  const missing = tenants
    .tenants()
    .map((t) => t.policies.default)
    .filter((name) => policies.get(name) === undefined);
  if (missing.length > 0) {
    policies.close();
    const rejected = policies.list().rejected.map((r) => r.error);
    throw new BootError(
      `default policy not loaded from ${env.MEMGATE_POLICY_DIR}: ${[...new Set(missing)].join(", ")}` +
        (rejected.length > 0 ? ` (rejected: ${rejected.join("; ")})` : ""),
    );
  }
  warmTokenizers(policies.list().policies.map((p) => policies.get(p.name)?.policy.tokenizer ?? "approx"));

  // Every backend call is a span and a latency observation (src/telemetry/backend.ts).
  // The raw local stores are remembered for the OpenMemory-compatible API (src/compat/local-stores.ts).
  const localStores = new LocalStores();
  // Each instance (per tenant and backend) gets its own retry, circuit breaker and bulkhead (src/resilience).
  const backends = new BackendProvider(
    instrumentFactories(localStores.capture(opts.factories ?? BACKEND_FACTORIES)),
    resilientBackends(resilienceFromEnv(env), logger),
  );
  // Load every local store now: a bad data file should stop the boot, not the first request. A boot that stops
  // here releases what it started (the policy watcher would otherwise keep `memgate serve` alive, issue 26 #11).
  // One store per tenant, even when tenants name the same file (each gets its own writable copy).
  for (const shared of sharedDataFiles(tenants.tenants()))
    logger.info(shared, "local data file loaded once per tenant (stores are not shared)");
  try {
    for (const tenant of tenants.tenants()) {
      const local = backends.get(tenant, "local");
      if (local) await local;
    }
  } catch (err) {
    policies.close();
    await backends.close().catch(() => undefined);
    throw err;
  }
  // --- redis: cache, single-flight, limits and cooldowns, shared through Redis when one is configured ---
  const shared = createSharedState(env, logger);
  const { cache, limiter } = shared;
  // --- end redis ---
  const retrieval = new RetrievalService({
    policies,
    backends,
    cache,
    limiter,
    existence: new ExistenceCache(),
    cooldown: shared.cooldown,
    admission: shared.admission,
    flights: shared.flights,
    overrides: new OverrideCache(),
    reinforcement: shared.reinforcement,
    logger,
  });
  // /readyz and the `backend.circuit_state` gauge read the breakers of the instances built so far (no ping).
  const readiness = createReadiness({ tenants, policies, backends, extra: shared.readiness });
  const stopCircuitGauge = observeCircuits(() => readCircuits(tenants, backends));
  return {
    logger,
    tenants,
    policies,
    retrieval,
    readiness,
    backends,
    cache,
    limiter,
    keyLimits: shared.keyLimits,
    localStores,
    proxyDeadlineMs: env.MEMGATE_PROXY_DEADLINE_MS,
    ...(playground === undefined ? {} : { playground }),
    ...(shared.redis === undefined ? {} : { redis: shared.redis }),
    lifecycle: { shuttingDown: false },
    async close() {
      stopCircuitGauge();
      policies.close();
      await shared.flights.idle(); // cache writes and lock releases still on their way
      await backends.close();
      await cache.close?.();
      await limiter.close?.();
      await shared.close();
    },
  };
}
