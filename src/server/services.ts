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
import type { PolicyRegistry } from "../policy/registry-types";
import { BACKEND_NAMES } from "../policy/schema";
import type { RedisConnection } from "../redis/connection";
import { resilienceFromEnv, resilientBackends } from "../resilience";
import { ExistenceCache } from "../retrieval/existence";
import { RetrievalService } from "../retrieval/service";
import { ShadowRunner } from "../rollout/shadow";
import { instrumentFactories } from "../telemetry/backend";
import {
  initTenantSeries,
  observeCircuits,
  observeReadiness,
  primeShadowSeries,
  recordPolicyEvent,
  recordTenantsReload,
} from "../telemetry/metrics";
import { configureUserHash } from "../telemetry/redact";
import { configureStageTracing } from "../telemetry/tracing";
import { devDirectory, isPolicyAllowed } from "../tenants/directory";
import type { Tenant, TenantDirectory } from "../tenants/types";
import { loadReloadingTenants, type ReloadingTenants } from "../tenants/watch";
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

/**
 * The tenants file, hot-reloaded (src/tenants/watch.ts) when watching; dev mode without one. A changed file whose
 * tenants name a default policy that is not loaded is refused, as the boot refuses it.
 */
async function loadTenants(
  env: Env,
  rawEnv: NodeJS.ProcessEnv,
  logger: Logger,
  watch: boolean,
  policies: PolicyRegistry,
  onReloaded: () => void,
): Promise<TenantDirectory | ReloadingTenants> {
  const file =
    env.MEMGATE_TENANTS_FILE ?? (existsSync(DEFAULT_TENANTS_FILE) ? DEFAULT_TENANTS_FILE : undefined);
  if (file === undefined) {
    const shadow =
      env.MEMGATE_SHADOW_POLICY === undefined
        ? undefined
        : { policy: env.MEMGATE_SHADOW_POLICY, sample: env.MEMGATE_SHADOW_SAMPLE ?? 1 };
    return devDirectory(rawEnv, {
      backend: env.MEMGATE_BACKEND,
      localDataFile: env.MEMGATE_LOCAL_DATA,
      shadow,
    });
  }
  if (env.MEMGATE_SHADOW_POLICY !== undefined) {
    throw new BootError(
      `MEMGATE_SHADOW_POLICY: only applies in dev mode (without a tenants file); with ${file}, set policies.shadow for each tenant`,
    );
  }
  return loadReloadingTenants({
    file,
    env: rawEnv,
    logger,
    watch,
    onReload: (outcome) => {
      recordTenantsReload(outcome);
      if (outcome === "reloaded") onReloaded();
    },
    // A changed file is held to the boot's rules: every default, shadow and canary policy loaded.
    checkChange: (directory, where) => [
      ...withoutDefaultPolicy(directory, policies).map(
        (t) =>
          `${where}: tenant "${t.id}": policies.default: "${t.policies.default}" is not loaded from ${env.MEMGATE_POLICY_DIR}`,
      ),
      ...rolloutProblems(directory, policies, env).map((p) => `${where}: ${p}`),
    ],
  });
}

/** The tenants whose default policy is not loaded (the boot's and a reload's first rule). */
function withoutDefaultPolicy(tenants: TenantDirectory, policies: PolicyRegistry): Tenant[] {
  return tenants
    .tenants()
    .filter((t) => !policies.get(t.policies.default) && !policies.retired(t.policies.default));
}

/** Shadow and canary policies the tenants name (or MEMGATE_SHADOW_POLICY) that are not loaded. */
function rolloutProblems(tenants: TenantDirectory, policies: PolicyRegistry, env: Env): string[] {
  const problems: string[] = [];
  for (const t of tenants.tenants()) {
    for (const [field, rule] of [
      ["shadow", t.policies.shadow],
      ["canary", t.policies.canary],
    ] as const) {
      if (rule === undefined || policies.get(rule.policy) !== undefined) continue;
      problems.push(
        tenants.devMode
          ? `MEMGATE_SHADOW_POLICY: no policy named "${rule.policy}" in ${env.MEMGATE_POLICY_DIR}`
          : `tenant "${t.id}": policies.${field}.policy: no policy named "${rule.policy}" in ${env.MEMGATE_POLICY_DIR}`,
      );
    }
  }
  return problems;
}

/** The shadow counters start at 0 for each served policy a tenant's shadow can meet (the default, the canary). */
function primeRolloutSeries(tenants: TenantDirectory): void {
  for (const t of tenants.tenants()) {
    const { shadow, canary } = t.policies;
    if (shadow === undefined) continue;
    const served = [t.policies.default, ...(canary === undefined ? [] : [canary.policy])];
    primeShadowSeries(
      served
        .filter((p) => p !== shadow.policy)
        .map((policy) => ({ tenant: t.id, policy, shadow: shadow.policy })),
    );
  }
}

/**
 * Every shadow and canary policy the tenants name (or MEMGATE_SHADOW_POLICY) must be loaded at boot, as the
 * defaults must.
 */
function checkRollouts(tenants: TenantDirectory, policies: PolicyRegistry, env: Env): void {
  const problems = rolloutProblems(tenants, policies, env);
  if (problems.length > 0) {
    policies.close();
    throw new BootError(problems.join("; "));
  }
  primeRolloutSeries(tenants);
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
  const watch = opts.watchPolicies ?? true;
  const playground = await playgroundConfig(env);
  const policies = await createPolicyRegistry({
    dir: env.MEMGATE_POLICY_DIR,
    logger,
    watch,
    onEvent: recordPolicyEvent,
  });
  // Set once the backends exist: a reloaded tenants file's local stores are loaded at once, as at boot.
  let warmLocalStores = (): void => undefined;
  let tenants: TenantDirectory | ReloadingTenants;
  try {
    tenants = await loadTenants(env, opts.rawEnv, logger, watch, policies, () => warmLocalStores());
  } catch (err) {
    policies.close();
    throw err;
  }
  const tenantsFile = "status" in tenants ? tenants : undefined;
  const missing = withoutDefaultPolicy(tenants, policies).map((t) => t.policies.default);
  if (missing.length > 0) {
    policies.close();
    tenantsFile?.close();
    const rejected = policies.list().rejected.map((r) => r.error);
    throw new BootError(
      `default policy not loaded from ${env.MEMGATE_POLICY_DIR}: ${[...new Set(missing)].join(", ")}` +
        (rejected.length > 0 ? ` (rejected: ${rejected.join("; ")})` : ""),
    );
  }
  try {
    checkRollouts(tenants, policies, env);
  } catch (err) {
    tenantsFile?.close();
    throw err;
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
    tenantsFile?.close();
    await backends.close().catch(() => undefined);
    throw err;
  }
  warmLocalStores = () => {
    primeRolloutSeries(tenants);
    for (const tenant of tenants.tenants()) {
      backends
        .get(tenant, "local")
        ?.catch((err: unknown) =>
          logger.error({ err, tenant: tenant.id }, "local store of a reloaded tenant failed to load"),
        );
    }
  };
  // --- redis: cache, single-flight, limits and cooldowns, shared through Redis when one is configured ---
  const shared = createSharedState(env, logger);
  const { cache, limiter } = shared;
  // --- end redis ---
  const shadow = new ShadowRunner({ policies, logger });
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
    shadow,
    logger,
  });
  // /readyz and the `backend.circuit_state` gauge read the breakers of the instances built so far (no ping).
  const readiness = createReadiness({
    tenants,
    policies,
    backends,
    extra: shared.readiness,
    ...(tenantsFile === undefined ? {} : { tenantsFile: () => tenantsFile.status() }),
  });
  const stopCircuitGauge = observeCircuits(() => readCircuits(tenants, backends));
  const lifecycle = { shuttingDown: false };
  // The readiness gauges (memgate_readiness_check, memgate_ready) read the same checks /readyz answers with.
  const stopReadinessGauge = observeReadiness(async () => ({
    serving: !lifecycle.shuttingDown,
    checks: await readiness(),
  }));
  // Every tenant's retrieval counters exist at 0 before its first request (dashboards show 0, not "No data").
  const stopTenantSeries = initTenantSeries(() =>
    tenants.tenants().map((t) => ({
      tenant: t.id,
      policies: policies
        .list()
        .policies.map((p) => p.name)
        .filter((name) => isPolicyAllowed(t, name)),
      backends: BACKEND_NAMES.filter((b) => t.backends[b] !== undefined),
    })),
  );
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
    shadow,
    ...(playground === undefined ? {} : { playground }),
    ...(shared.redis === undefined ? {} : { redis: shared.redis }),
    lifecycle,
    async close() {
      stopCircuitGauge();
      stopReadinessGauge();
      stopTenantSeries();
      policies.close();
      await shadow.idle(); // queued shadow runs (they read the registry, never the backends)
      tenantsFile?.close();
      await shared.flights.idle(); // cache writes and lock releases still on their way
      await backends.close();
      await cache.close?.();
      await limiter.close?.();
      await shared.close();
    },
  };
}
