/**
 * Every metric memgate records: the OpenTelemetry name (seed 000's names where it has one, exported as is over
 * OTLP) and the name `GET /metrics` shows, which follows Prometheus conventions (a `memgate_` namespace, the unit
 * as a plural suffix, `_total` on counters, `_ratio` for ratios). docs/observability.md is the prose version.
 */
export interface MetricSpec {
  /** OpenTelemetry instrument name. */
  otel: string;
  /** Prometheus name (counters include `_total`). */
  prometheus: string;
  description: string;
  /** UCUM unit. */
  unit: string;
}

export const METRICS = {
  latency: {
    otel: "retrieval.latency_ms",
    prometheus: "memgate_retrieval_latency_milliseconds",
    description: "End-to-end time of one retrieval, fallbacks included",
    unit: "ms",
  },
  results: {
    otel: "retrieval.results_count",
    prometheus: "memgate_retrieval_results",
    description: "Memories returned by one retrieval",
    unit: "{memory}",
  },
  tokens: {
    otel: "retrieval.tokens_used",
    prometheus: "memgate_retrieval_tokens",
    description: "Tokens of the memories returned by one retrieval, by the policy's tokenizer",
    unit: "{token}",
  },
  tokenBudgetUsed: {
    otel: "retrieval.token_budget_used",
    prometheus: "memgate_retrieval_token_budget_used_ratio",
    description:
      "Share of the policy's token budget (retrieval.maxTokens) taken by the memories one retrieval returned (0–1)",
    unit: "1",
  },
  dedup: {
    otel: "retrieval.dedup_ratio",
    prometheus: "memgate_retrieval_dedup_ratio",
    description: "Share of the candidates entering dedup that were duplicates (0–1)",
    unit: "1",
  },
  redactions: {
    otel: "redaction.redactions",
    prometheus: "memgate_redactions_total",
    description:
      "Memories in which a redaction detector replaced something, by detector (custom patterns: custom)",
    unit: "{memory}",
  },
  retrievals: {
    otel: "retrieval.requests",
    prometheus: "memgate_retrievals_total",
    description:
      "Answered retrievals by tenant, policy and outcome (ok, fallback); every tenant's policies start at 0",
    unit: "{retrieval}",
  },
  cacheLookups: {
    otel: "retrieval.cache.lookups",
    prometheus: "memgate_retrieval_cache_lookups_total",
    description: "Retrievals by cache result (label cache: hit, miss, stale, bypass)",
    unit: "{retrieval}",
  },
  cacheHitRate: {
    otel: "retrieval.cache_hit_rate",
    prometheus: "memgate_retrieval_cache_hit_ratio",
    description:
      "Share of cache-eligible retrievals answered from the cache over the last 5 minutes (this process)",
    unit: "1",
  },
  fallbacks: {
    otel: "retrieval.fallbacks",
    prometheus: "memgate_retrieval_fallbacks_total",
    description: "Retrievals answered with a fallback, by code and action",
    unit: "{retrieval}",
  },
  backendLatency: {
    otel: "backend.latency_ms",
    prometheus: "memgate_backend_latency_milliseconds",
    description: "Time of one backend call, by backend, operation and outcome",
    unit: "ms",
  },
  policyReloads: {
    otel: "policy.reloads",
    prometheus: "memgate_policy_reloads_total",
    description: "Policies loaded or reloaded from the policy directory",
    unit: "{policy}",
  },
  policyRejections: {
    otel: "policy.rejections",
    prometheus: "memgate_policy_rejections_total",
    description: "Policy file changes rejected (the previous version kept serving)",
    unit: "{policy}",
  },
  policyOrphans: {
    otel: "policy.orphans",
    prometheus: "memgate_policy_orphans_total",
    description:
      "Policies retired because their file was deleted (requests naming them are refused; a tenant whose default it was keeps its last version)",
    unit: "{policy}",
  },
  rateLimited: {
    otel: "ratelimit.rejections",
    prometheus: "memgate_rate_limit_rejections_total",
    description: "Requests refused by a rate limit, by scope (key, user, backend)",
    unit: "{request}",
  },
  upstreamOversized: {
    otel: "upstream.oversized",
    prometheus: "memgate_upstream_oversized_total",
    description:
      "Upstream answers over the read bound (8 MiB) on shaped calls, by backend: the read stopped, the fallback answered",
    unit: "{response}",
  },
  injectionFlags: {
    otel: "injection.flags",
    prometheus: "memgate_injection_flags_total",
    description:
      "Recalled memories an injection detector fired on (policy injection), by detector and the action taken (flag, neutralize, drop)",
    unit: "{memory}",
  },
  sufficiency: {
    otel: "retrieval.sufficiency",
    prometheus: "memgate_retrieval_sufficiency_total",
    description:
      "Shaped contexts by sufficiency verdict (policy sufficiency: sufficient, partial, insufficient), whether the answer is an expansion round's, and what a round that ran searched with (more, missing; none without one)",
    unit: "{retrieval}",
  },
  reinforcement: {
    otel: "reinforcement.operations",
    prometheus: "memgate_reinforcement_operations_total",
    description:
      "Reinforcement count reads (before ranking) and increments (after the answer) by operation (read, increment) and outcome (ok, unavailable: the store could not be reached, the signal is 0)",
    unit: "{operation}",
  },
  circuitState: {
    otel: "backend.circuit_state",
    prometheus: "memgate_backend_circuit_state",
    description:
      "Circuit breaker state of each backend instance in use, by backend and tenant: 0 closed, 1 half-open, 2 open",
    unit: "1",
  },
  shadowRuns: {
    otel: "shadow.runs",
    prometheus: "memgate_shadow_runs_total",
    description:
      "Cache misses offered to a shadow policy (docs/rollouts.md#shadow), by tenant, served policy, shadow policy and outcome (ran; dropped: too many shadow runs pending; error: the shadow policy is not loaded or its pipeline threw)",
    unit: "{run}",
  },
  shadowTokenDelta: {
    otel: "shadow.token_delta",
    prometheus: "memgate_shadow_token_delta",
    description:
      "Size of the difference between the tokens the shadow and the served policy kept on the same candidates, one per shadow run, by direction (more: the shadow kept more; fewer; same). Signed mean: (sum{more} − sum{fewer}) / count",
    unit: "{token}",
  },
  shadowOverlap: {
    otel: "shadow.overlap_ratio",
    prometheus: "memgate_shadow_overlap_ratio",
    description:
      "Jaccard overlap of the memory ids the served and the shadow policy kept (1: the same memories; 1 when both kept none)",
    unit: "1",
  },
  shadowExclusive: {
    otel: "shadow.exclusive_memories",
    prometheus: "memgate_shadow_exclusive_memories_total",
    description:
      "Memories only one side of a shadow run kept, by side (primary: only the served policy; shadow: only the shadow policy)",
    unit: "{memory}",
  },
  readiness: {
    otel: "readiness.check",
    prometheus: "memgate_readiness_check",
    description:
      "Each /readyz check of this process (policies, backends, redis when configured, backend:<name> when degraded): 0 ok, 1 degraded, 2 failing",
    unit: "1",
  },
  ready: {
    otel: "readiness.ready",
    prometheus: "memgate_ready",
    description:
      "1 when /readyz answers 200 (ready or degraded), 0 when it answers 503 (not ready, draining)",
    unit: "1",
  },
  tenantsReloads: {
    otel: "tenants.reloads",
    prometheus: "memgate_tenants_reloads_total",
    description:
      "Changes of the tenants file by outcome (reloaded; rejected: the previous file kept serving, /readyz degraded)",
    unit: "{reload}",
  },
  buildInfo: {
    otel: "build.info",
    prometheus: "memgate_build_info",
    description: "Always 1; the labels say which memgate version (package.json) and Node.js version run",
    unit: "1",
  },
} as const satisfies Record<string, MetricSpec>;

/** OpenTelemetry name → Prometheus name, for the `/metrics` serializer. */
export const PROMETHEUS_NAMES: ReadonlyMap<string, string> = new Map(
  Object.values(METRICS).map((m) => [m.otel, m.prometheus]),
);
