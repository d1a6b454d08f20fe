/**
 * memgate's instruments, through the OpenTelemetry metrics API (no-op until an SDK registers a MeterProvider).
 * Labels are low-cardinality by construction: backend, policy name, cache result, fallback code/action,
 * operation, outcome, scope, redaction detector (built-in names, custom patterns as `custom`), and (on the
 * retrieval metrics, the circuit gauge and the shadow metrics) the tenant id from the operator's tenants file (`dev` in
 * dev mode). Never a user id, key, tenant-supplied string or query.
 */
import {
  type Attributes,
  type Counter,
  type MeterProvider,
  metrics,
  type ObservableResult,
  type UpDownCounter,
} from "@opentelemetry/api";
import type { RegistryEvent } from "../policy/registry";
import { DETECTORS, INJECTION_ACTIONS, INJECTION_DETECTORS } from "../policy/schema";
import { CACHE_STATUSES, type RetrievalMetadata } from "../retrieval/payload";
import { MEMGATE_VERSION } from "../version";
import { METRICS } from "./catalogue";
import { FastHistogram } from "./histograms";
import { SlidingHitRate } from "./hit-rate";

export const METER_NAME = "memgate";

const LATENCY_BUCKETS_MS = [1, 2, 5, 10, 25, 50, 75, 100, 150, 200, 300, 500, 750, 1000, 1500, 2500, 5000];
const COUNT_BUCKETS = [0, 1, 2, 3, 4, 5, 6, 8, 10, 15, 20, 30, 50];
const TOKEN_BUCKETS = [0, 50, 100, 200, 300, 500, 750, 1000, 1500, 2000, 3000];
const RATIO_BUCKETS = [0, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1];
/** |shadow tokens − served tokens| (an OpenTelemetry histogram takes no negative value: the sign is a label). */
const TOKEN_DELTA_BUCKETS = [0, 10, 20, 50, 100, 200, 300, 500, 750, 1000, 1500, 2000, 3000];
const BUDGET_BUCKETS = [0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99, 1];
/** The semantic conventions' advice for `http.server.request.duration` (seconds). */
const HTTP_DURATION_BUCKETS_S = [0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10];

export const RATE_LIMIT_SCOPES = ["key", "user", "backend"] as const;
export type RateLimitScope = (typeof RATE_LIMIT_SCOPES)[number];
export type BackendOperation = "search" | "user_exists" | "get_memories" | "neighbours";

/**
 * The histograms: aggregated by memgate and read through each metric reader's producer (./histograms.ts), made once
 * per process (a new MeterProvider's readers get producers of their own, which start from nothing).
 */
const histogram = (spec: (typeof METRICS)[keyof typeof METRICS], boundaries: number[]) =>
  new FastHistogram({ name: spec.otel, description: spec.description, unit: spec.unit, boundaries });

const H = {
  latency: histogram(METRICS.latency, LATENCY_BUCKETS_MS),
  results: histogram(METRICS.results, COUNT_BUCKETS),
  tokens: histogram(METRICS.tokens, TOKEN_BUCKETS),
  tokenBudgetUsed: histogram(METRICS.tokenBudgetUsed, BUDGET_BUCKETS),
  dedup: histogram(METRICS.dedup, RATIO_BUCKETS),
  backendLatency: histogram(METRICS.backendLatency, LATENCY_BUCKETS_MS),
  shadowTokenDelta: histogram(METRICS.shadowTokenDelta, TOKEN_DELTA_BUCKETS),
  shadowOverlap: histogram(METRICS.shadowOverlap, RATIO_BUCKETS),
  /** The semantic conventions' `http.server.request.duration` (not in the catalogue: its name is the conventions'). */
  httpServerDuration: new FastHistogram({
    name: "http.server.request.duration",
    description: "Duration of HTTP server requests.",
    unit: "s",
    boundaries: HTTP_DURATION_BUCKETS_S,
  }),
  /** The semantic conventions' `http.client.request.duration`: memgate's upstream calls (./http-client.ts). */
  httpClientDuration: new FastHistogram({
    name: "http.client.request.duration",
    description: "Measures the duration of outbound HTTP requests.",
    unit: "s",
    boundaries: HTTP_DURATION_BUCKETS_S,
  }),
};

interface Instruments {
  redactions: Counter;
  retrievals: Counter;
  cacheLookups: Counter;
  fallbacks: Counter;
  policyReloads: Counter;
  policyRejections: Counter;
  policyOrphans: Counter;
  rateLimited: Counter;
  upstreamOversized: Counter;
  injectionFlags: Counter;
  sufficiency: Counter;
  reinforcement: Counter;
  shadowRuns: Counter;
  shadowExclusive: Counter;
  tenantsReloads: Counter;
  /** The semantic conventions' HTTP server metrics (not in the catalogue: their names are the conventions'). */
  httpActiveRequests: UpDownCounter;
  /**
   * `http.server.active_requests` changes not yet added, by method: a request's +1 and −1 are summed here and added
   * to the instrument when the metrics are read (`flushActiveRequests`), the same sums as two adds per request.
   */
  activePending: Map<string, number>;
  /**
   * `retrieval.requests` and `retrieval.cache.lookups` not yet added, by the label sets of one kind of retrieval:
   * counted here per retrieval and added when the metrics are read (`flushRetrievals`), the same sums as one add
   * of each per retrieval (issue 29: two attribute hashes fewer per request).
   */
  retrievalPending: Map<RetrievalSeries, number>;
}

/**
 * The label sets of one kind of retrieval (tenant, policy, backend, cache result, outcome, door), made once: the
 * objects every retrieval of that kind records with.
 */
interface RetrievalSeries {
  /** `retrieval.latency_ms`: backend, cache, outcome, door, policy, tenant. */
  latency: Attributes;
  /** `retrieval.results`, `.tokens`, `.token_budget_used`: backend, policy, outcome, tenant. */
  base: Attributes;
  /** `retrieval.requests`: tenant, policy, outcome. */
  requests: Attributes;
  /** `retrieval.cache.lookups`: backend, cache, door, policy, tenant. */
  lookups: Attributes;
}

/** The label sets made so far, by their values joined (bounded: past the bound, a kind's sets are made per call). */
const retrievalSeries = new Map<string, RetrievalSeries>();
const MAX_RETRIEVAL_SERIES = 4096;

function retrievalSeriesOf(
  backend: string,
  cache: string,
  outcome: string,
  door: string,
  policy: string,
  tenant: string,
): RetrievalSeries {
  const key = `${tenant}\u0000${policy}\u0000${backend}\u0000${cache}\u0000${outcome}\u0000${door}`;
  let series = retrievalSeries.get(key);
  if (series === undefined) {
    series = {
      latency: { backend, cache, outcome, door, policy, tenant },
      base: { backend, policy, outcome, tenant },
      requests: { tenant, policy, outcome },
      lookups: { backend, cache, door, policy, tenant },
    };
    if (retrievalSeries.size < MAX_RETRIEVAL_SERIES) retrievalSeries.set(key, series);
  }
  return series;
}

/** The process's cache hit rate over the last 5 minutes, read by the `retrieval.cache_hit_rate` gauge. */
export const cacheHitWindow = new SlidingHitRate();

/** A circuit breaker's state (src/resilience: `ResilientBackend.circuit()`). */
export type CircuitStateName = "closed" | "half_open" | "open";

/** The `backend.circuit_state` gauge's encoding: the higher, the less the backend is called. */
export const CIRCUIT_STATE_VALUES: Readonly<Record<CircuitStateName, number>> = {
  closed: 0,
  half_open: 1,
  open: 2,
};

/** Reads the circuits of the backend instances in use, one entry per tenant and backend. */
export type CircuitSource = () => Iterable<{ backend: string; tenant: string; state: CircuitStateName }>;

const circuitSources = new Set<CircuitSource>();

/** A tenant as the metrics know it up front: its id, the policies it may use, the backends it has. */
export interface TenantSeries {
  tenant: string;
  policies: readonly string[];
  backends: readonly string[];
}

/** Reads the tenants (and the policies each may use) whose retrieval counters start at 0. */
export type TenantSource = () => Iterable<TenantSeries>;

const tenantSources = new Set<TenantSource>();

/** The outcomes of an answered retrieval (`retrieval.requests`, `retrieval.latency_ms`). */
const RETRIEVAL_OUTCOMES = ["ok", "fallback"] as const;

/** One /readyz check as the `readiness.check` gauge reads it. */
export interface ReadinessReading {
  /** False while draining (graceful shutdown): /readyz answers 503 whatever the checks say. */
  serving: boolean;
  checks: ReadonlyArray<{ name: string; ok: boolean; degraded?: boolean }>;
}

/** Reads the readiness checks of this process (src/server/services.ts), at each collection. */
export type ReadinessSource = () => Promise<ReadinessReading>;

const readinessSources = new Set<ReadinessSource>();

/** The `readiness.check` gauge's encoding: the higher, the worse. */
const READINESS_VALUES = { ok: 0, degraded: 1, failing: 2 } as const;

/**
 * The counters of every known tenant start at 0: `retrieval.requests` for each policy it may use and each
 * outcome, `retrieval.cache.lookups` for each backend it has and each cache result (door `retrieve`).
 */
function zeroTenants(i: Instruments, source: TenantSource): void {
  for (const { tenant, policies, backends } of source()) {
    for (const policy of policies)
      for (const outcome of RETRIEVAL_OUTCOMES) i.retrievals.add(0, { tenant, policy, outcome });
    for (const policy of policies)
      for (const backend of backends)
        for (const cache of CACHE_STATUSES)
          i.cacheLookups.add(0, { backend, cache, door: "retrieve", policy, tenant });
  }
}

function create(provider: MeterProvider): Instruments {
  const meter = provider.getMeter(METER_NAME);
  const counter = (spec: (typeof METRICS)[keyof typeof METRICS]) =>
    meter.createCounter(spec.otel, { description: spec.description, unit: spec.unit });

  const hitRate = meter.createObservableGauge(METRICS.cacheHitRate.otel, {
    description: METRICS.cacheHitRate.description,
    unit: METRICS.cacheHitRate.unit,
  });
  hitRate.addCallback((result: ObservableResult) => {
    // Every collection runs the observable callbacks before it reads the other instruments: the in-flight
    // requests' pending changes go in first.
    flushActiveRequests(instruments);
    flushRetrievals(instruments);
    const ratio = cacheHitWindow.ratio();
    if (ratio !== undefined) result.observe(ratio);
  });

  // One series per tenant and backend instance in use (a tenant id comes from the operator's tenants file, so
  // the count is bounded by tenants × 3); an instance never used has none.
  const circuits = meter.createObservableGauge(METRICS.circuitState.otel, {
    description: METRICS.circuitState.description,
    unit: METRICS.circuitState.unit,
  });
  circuits.addCallback((result: ObservableResult) => {
    for (const source of circuitSources) {
      for (const c of source())
        result.observe(CIRCUIT_STATE_VALUES[c.state], { backend: c.backend, tenant: c.tenant });
    }
  });

  // One series per /readyz check, and whether /readyz answers 200: the Redis-degraded and readiness alerts.
  const readinessCheck = meter.createObservableGauge(METRICS.readiness.otel, {
    description: METRICS.readiness.description,
    unit: METRICS.readiness.unit,
  });
  const ready = meter.createObservableGauge(METRICS.ready.otel, {
    description: METRICS.ready.description,
    unit: METRICS.ready.unit,
  });
  meter.addBatchObservableCallback(
    async (result) => {
      for (const source of readinessSources) {
        // A check that throws (none should: each catches its own failure) would fail every collection; it
        // counts as not ready instead.
        const { serving, checks } = await source().catch(() => ({ serving: false, checks: [] }));
        for (const c of checks) {
          const value = c.ok
            ? READINESS_VALUES.ok
            : c.degraded === true
              ? READINESS_VALUES.degraded
              : READINESS_VALUES.failing;
          result.observe(readinessCheck, value, { check: c.name });
        }
        const failing = checks.some((c) => !c.ok && c.degraded !== true);
        result.observe(ready, serving && !failing ? 1 : 0);
      }
    },
    [readinessCheck, ready],
  );

  // memgate_build_info{version,node} 1: which build runs where (joins onto other series by instance).
  const buildInfo = meter.createObservableGauge(METRICS.buildInfo.otel, {
    description: METRICS.buildInfo.description,
    unit: METRICS.buildInfo.unit,
  });
  buildInfo.addCallback((result: ObservableResult) => {
    result.observe(1, { version: MEMGATE_VERSION, node: process.versions.node });
  });

  const instruments: Instruments = {
    redactions: counter(METRICS.redactions),
    retrievals: counter(METRICS.retrievals),
    cacheLookups: counter(METRICS.cacheLookups),
    fallbacks: counter(METRICS.fallbacks),
    policyReloads: counter(METRICS.policyReloads),
    policyRejections: counter(METRICS.policyRejections),
    policyOrphans: counter(METRICS.policyOrphans),
    rateLimited: counter(METRICS.rateLimited),
    upstreamOversized: counter(METRICS.upstreamOversized),
    injectionFlags: counter(METRICS.injectionFlags),
    sufficiency: counter(METRICS.sufficiency),
    reinforcement: counter(METRICS.reinforcement),
    shadowRuns: counter(METRICS.shadowRuns),
    shadowExclusive: counter(METRICS.shadowExclusive),
    tenantsReloads: counter(METRICS.tenantsReloads),
    httpActiveRequests: meter.createUpDownCounter("http.server.active_requests", {
      description: "Number of active HTTP server requests.",
      unit: "{request}",
    }),
    activePending: new Map(),
    retrievalPending: new Map(),
  };
  // Counters whose label sets are known up front start at 0: a series that exists before its first event keeps
  // `rate()` and `increase()` alerts correct (no "absent" series).
  for (const scope of RATE_LIMIT_SCOPES) instruments.rateLimited.add(0, { scope });
  for (const detector of REDACTION_LABELS) instruments.redactions.add(0, { detector });
  for (const type of ["loaded", "reloaded"]) instruments.policyReloads.add(0, { type });
  instruments.policyRejections.add(0);
  instruments.policyOrphans.add(0);
  for (const outcome of ["reloaded", "rejected"]) instruments.tenantsReloads.add(0, { outcome });
  for (const backend of ["zep", "openmemory"]) instruments.upstreamOversized.add(0, { backend });
  for (const verdict of ["sufficient", "partial", "insufficient"]) {
    instruments.sufficiency.add(0, { verdict, expanded: "false", with: "none" });
    for (const searched of EXPANDED_WITH)
      for (const expanded of ["true", "false"])
        instruments.sufficiency.add(0, { verdict, expanded, with: searched });
  }
  for (const operation of ["read", "increment"])
    for (const outcome of ["ok", "unavailable"]) instruments.reinforcement.add(0, { operation, outcome });
  for (const detector of INJECTION_DETECTORS) {
    for (const action of INJECTION_ACTIONS) instruments.injectionFlags.add(0, { detector, action });
  }
  for (const pair of shadowPairs) primeShadow(instruments, pair);
  for (const method of ["GET", "POST"])
    instruments.httpActiveRequests.add(0, { "http.request.method": method, "url.scheme": "http" });
  for (const source of tenantSources) zeroTenants(instruments, source);
  return instruments;
}

let current: { provider: MeterProvider; instruments: Instruments } | undefined;

/**
 * The instruments of the MeterProvider registered now. The metrics API has no proxy provider: a meter taken
 * before the SDK starts stays a no-op forever, so instruments are (re)made whenever the global provider changes.
 */
function instruments(): Instruments {
  const provider = metrics.getMeterProvider();
  if (current?.provider !== provider) current = { provider, instruments: create(provider) };
  return current.instruments;
}

/** One HTTP request answered (src/telemetry/http-server.ts), in seconds, with the conventions' attributes. */
export function recordHttpServerDuration(seconds: number, attributes: Attributes): void {
  H.httpServerDuration.record(seconds, attributes);
}

/** One upstream call made (src/telemetry/http-client.ts), in seconds, with the conventions' attributes. */
export function recordHttpClientDuration(seconds: number, attributes: Attributes): void {
  H.httpClientDuration.record(seconds, attributes);
}

/** One HTTP request started (+1) or ended (-1): `http.server.active_requests`, the in-flight gauge. */
export function recordActiveRequest(delta: 1 | -1, method: string): void {
  const pending = instruments().activePending;
  pending.set(method, (pending.get(method) ?? 0) + delta);
}

/** The pending `http.server.active_requests` changes added (a method seen since the last read is added, 0 too). */
function flushActiveRequests(i: Instruments): void {
  for (const [method, delta] of i.activePending)
    i.httpActiveRequests.add(delta, { "http.request.method": method, "url.scheme": "http" });
  i.activePending.clear();
}

/**
 * One answered retrieval (success or fallback), from the metadata the caller received. `tenant` is the tenant's
 * id from the operator's tenants file (`dev` in dev mode), never anything the request carries.
 */
export function recordRetrieval(
  meta: RetrievalMetadata,
  elapsedMs: number,
  door: string,
  tenant: string,
): void {
  const i = instruments();
  const outcome = meta.fallback === null ? "ok" : "fallback";
  // `door`: which door asked (`retrieve`, a drop-in door's call, `mcp`), a bounded set of values.
  // `policy`: the served policy's name (a loaded policy file's, or a canary's), so canary and stable compare.
  const policy = meta.policy.name;
  const series = retrievalSeriesOf(meta.backend, meta.cache, outcome, door, policy, tenant);
  H.latency.record(elapsedMs, series.latency);
  // retrieval.requests and retrieval.cache.lookups: counted here, added at the next collection.
  i.retrievalPending.set(series, (i.retrievalPending.get(series) ?? 0) + 1);
  H.results.record(meta.includedResults, series.base);
  H.tokens.record(meta.totalTokens, series.base);
  // Tokens used against the budget they were packed into (the policy's maxTokens after request overrides).
  if (meta.config.maxTokens > 0)
    H.tokenBudgetUsed.record(meta.totalTokens / meta.config.maxTokens, series.base);
  if (meta.cache !== "bypass") cacheHitWindow.record(meta.cache === "hit" || meta.cache === "stale");
  if (meta.fallback !== null)
    i.fallbacks.add(1, { code: meta.fallback.code, action: meta.fallback.action, policy, tenant });
}

/** The retrievals counted since the last read added to `retrieval.requests` and `retrieval.cache.lookups`. */
function flushRetrievals(i: Instruments): void {
  for (const [series, n] of i.retrievalPending) {
    i.retrievals.add(n, series.requests);
    i.cacheLookups.add(n, series.lookups);
  }
  i.retrievalPending.clear();
}

/** What an expansion round searched with (`metadata.sufficiency.expansion.with`): the metric's `with` label. */
const EXPANDED_WITH = ["more", "missing"] as const;

/**
 * One shaped context's sufficiency verdict (policy `sufficiency`): `expanded`, whether the answer is an expansion
 * round's (`metadata.sufficiency.expanded`), and `with`, what a round that ran searched with, kept or not (`more`:
 * the question for more candidates; `missing`: its missing words; `none`: no round ran).
 */
export function recordSufficiency(
  verdict: string,
  expanded: boolean,
  searched: (typeof EXPANDED_WITH)[number] | undefined,
): void {
  instruments().sufficiency.add(1, { verdict, expanded: String(expanded), with: searched ?? "none" });
}

/** One reinforcement store operation (policy `ranking.reinforcement`): `unavailable` = the store was not reached. */
export function recordReinforcement(operation: "read" | "increment", outcome: "ok" | "unavailable"): void {
  instruments().reinforcement.add(1, { operation, outcome });
}

/** The dedup stage of one pipeline run: `duplicates` of `input` candidates were removed as duplicates. */
export function recordDedup(policy: string, backend: string, input: number, duplicates: number): void {
  if (input <= 0) return;
  H.dedup.record(duplicates / input, { policy, backend });
}

/** The `detector` label values: the built-in detectors, and `custom` for every custom pattern. */
const REDACTION_LABELS: readonly string[] = [...DETECTORS, "custom"];
const BUILTIN_DETECTOR_NAMES: ReadonlySet<string> = new Set(DETECTORS);

/**
 * The redaction stage of one pipeline run, from its trace: each `redacted:<detector>` change is one memory in
 * which that detector replaced something. Custom patterns count as `custom` (their names come from policies
 * and request overrides, so they are not a bounded label); a custom pattern named like a built-in counts as
 * that built-in. Only names are read, never text.
 */
export function recordRedactions(changes: ReadonlyArray<{ reason: string }>): void {
  if (changes.length === 0) return;
  const counts = new Map<string, number>();
  for (const { reason } of changes) {
    if (!reason.startsWith("redacted:")) continue;
    const name = reason.slice("redacted:".length);
    const detector = BUILTIN_DETECTOR_NAMES.has(name) ? name : "custom";
    counts.set(detector, (counts.get(detector) ?? 0) + 1);
  }
  if (counts.size === 0) return;
  const { redactions } = instruments();
  for (const [detector, n] of counts) redactions.add(n, { detector });
}

/**
 * The injection stage of one pipeline run: one count per memory and detector that fired, from its trace changes
 * (`injection:<detector>:<action>`). Labels come from the policy schema's closed lists, never from the memory.
 */
export function recordInjection(changes: ReadonlyArray<{ reason: string }>): void {
  if (changes.length === 0) return;
  const counter = instruments().injectionFlags;
  for (const { reason } of changes) {
    const [kind, detector, action] = reason.split(":");
    if (kind !== "injection" || detector === undefined || action === undefined) continue;
    counter.add(1, { detector, action });
  }
}

/** One call to a backend adapter; `outcome` is "ok" or the BackendError kind ("error" for anything else). */
export function recordBackendCall(
  backend: string,
  operation: BackendOperation,
  outcome: string,
  elapsedMs: number,
): void {
  H.backendLatency.record(elapsedMs, { backend, operation, outcome });
}

/**
 * Feeds the `backend.circuit_state` gauge from `source`, read at each collection (a scrape of /metrics, an OTLP
 * export). Returns the function that stops it (the services closed).
 */
export function observeCircuits(source: CircuitSource): () => void {
  circuitSources.add(source);
  instruments(); // the gauge exists from the first scrape, before any retrieval made the instruments
  return () => {
    circuitSources.delete(source);
  };
}

/**
 * Starts the retrieval counters of `source`'s tenants at 0 (each policy they may use × outcome; each backend they
 * have × cache result), now and whenever the instruments are remade; `refreshTenantSeries` adds policies loaded
 * later. Returns the function that stops it (the services closed).
 */
export function initTenantSeries(source: TenantSource): () => void {
  tenantSources.add(source);
  zeroTenants(instruments(), source);
  return () => {
    tenantSources.delete(source);
  };
}

/** A policy was loaded or reloaded: tenants that may use any policy get its series at 0 too. */
function refreshTenantSeries(i: Instruments): void {
  for (const source of tenantSources) zeroTenants(i, source);
}

/** Feeds the `readiness.check` and `readiness.ready` gauges from `source`, read at each collection. */
export function observeReadiness(source: ReadinessSource): () => void {
  readinessSources.add(source);
  instruments();
  return () => {
    readinessSources.delete(source);
  };
}

/** An upstream answer over the read bound (src/backends/body.ts); the call failed as unavailable. */
export function recordUpstreamOversized(backend: string): void {
  instruments().upstreamOversized.add(1, { backend });
}

export function recordRateLimitRejection(scope: RateLimitScope): void {
  instruments().rateLimited.add(1, { scope });
}

/** The tenants file's reload listener (src/tenants/watch.ts). */
export function recordTenantsReload(outcome: "reloaded" | "rejected"): void {
  instruments().tenantsReloads.add(1, { outcome });
}

/** The policy registry's `onEvent` listener. */
export function recordPolicyEvent(e: RegistryEvent): void {
  const i = instruments();
  switch (e.type) {
    case "loaded":
    case "reloaded":
      i.policyReloads.add(1, { type: e.type });
      refreshTenantSeries(i);
      return;
    case "rejected":
      i.policyRejections.add(1);
      return;
    case "retired":
      i.policyOrphans.add(1);
      return;
  }
}

/** The labels of a shadow run: the tenant (from the tenants file), the served and the shadow policy's names. */
export interface ShadowLabels {
  tenant: string;
  policy: string;
  shadow: string;
}

const SHADOW_OUTCOMES = ["ran", "dropped", "error"] as const;
export type ShadowOutcome = (typeof SHADOW_OUTCOMES)[number];

/** Label sets known at boot (each tenant's default and canary policy with its shadow): their counters start at 0. */
const shadowPairs: ShadowLabels[] = [];

function primeShadow(i: Instruments, labels: ShadowLabels): void {
  for (const outcome of SHADOW_OUTCOMES) i.shadowRuns.add(0, { ...labels, outcome });
  for (const side of ["primary", "shadow"]) i.shadowExclusive.add(0, { ...labels, side });
}

/** Starts the shadow counters of these label sets at 0 (now and in any MeterProvider registered later). */
export function primeShadowSeries(pairs: readonly ShadowLabels[]): void {
  const i = instruments();
  for (const pair of pairs) {
    if (
      shadowPairs.some(
        (p) => p.tenant === pair.tenant && p.policy === pair.policy && p.shadow === pair.shadow,
      )
    )
      continue;
    shadowPairs.push({ ...pair });
    primeShadow(i, pair);
  }
}

/** One cache miss offered to a shadow policy and what became of it. */
export function recordShadowRun(labels: ShadowLabels, outcome: ShadowOutcome): void {
  instruments().shadowRuns.add(1, { ...labels, outcome });
}

/** What one shadow run found: the token delta, the overlap and the memories only one side kept. */
export function recordShadowComparison(
  labels: ShadowLabels,
  c: { tokenDelta: number; overlap: number; primaryOnly: number; shadowOnly: number },
): void {
  const i = instruments();
  const attributes: Attributes = { ...labels };
  // `direction`: more (the shadow kept more tokens), fewer, same; the value is the size of the difference.
  const direction = c.tokenDelta > 0 ? "more" : c.tokenDelta < 0 ? "fewer" : "same";
  H.shadowTokenDelta.record(Math.abs(c.tokenDelta), { ...attributes, direction });
  H.shadowOverlap.record(c.overlap, attributes);
  i.shadowExclusive.add(c.primaryOnly, { ...labels, side: "primary" });
  i.shadowExclusive.add(c.shadowOnly, { ...labels, side: "shadow" });
}
