/**
 * One line per environment variable of `envSchema` (./env.ts), for `memgate serve --help`. Typed by the schema's
 * own keys: a variable added to the schema without a line here (or a line for a variable it no longer reads) does
 * not compile, so the help cannot drift from what the parser reads. Only a type is imported: `--help` stays fast.
 * The full table with defaults is docs/configuration.md#environment-variables.
 */
import type { envSchema } from "./env";

type EnvName = keyof typeof envSchema.shape;

export const ENV_HELP: { readonly [K in EnvName]: string } = {
  HOST: "listen address (default 127.0.0.1; dev mode listens on loopback only)",
  PORT: "listen port (default 8787; 0 = any free port)",
  MEMGATE_BACKEND: "default backend when a policy names none: local | zep | openmemory (default local)",
  ZEP_API_KEY: "Zep Cloud API key (dev mode)",
  ZEP_BASE_URL: "Zep base URL, must include /api/v2 (default https://api.getzep.com/api/v2)",
  OPENMEMORY_URL: "OpenMemory server URL (dev mode)",
  OPENMEMORY_API_KEY: "OpenMemory API key (dev mode)",
  OPENMEMORY_USER_SCOPING: "how OpenMemory separates users: user_id | api_key (default user_id)",
  MEMGATE_LOCAL_DATA: "JSONL file of the embedded local backend (default config/demo-memories.jsonl)",
  REDIS_URL: "redis:// or rediss:// URL for cache, single-flight and limits; unset = in-process",
  REDIS_CLUSTER_NODES: "Redis Cluster seed nodes host:port,… (instead of REDIS_URL)",
  REDIS_SENTINELS: "Redis Sentinels host:port,… (instead of REDIS_URL; with REDIS_SENTINEL_MASTER)",
  REDIS_SENTINEL_MASTER: "the master's name in the sentinels' configuration",
  REDIS_SENTINEL_PASSWORD: "password of the sentinels themselves",
  REDIS_USERNAME: "username of the Cluster or Sentinel data nodes",
  REDIS_PASSWORD: "password of the Cluster or Sentinel data nodes",
  REDIS_TLS: "TLS to the Cluster or Sentinel data nodes: true | false (default false)",
  REDIS_AUTO_PIPELINING: "ioredis auto-pipelining (one node or Sentinel): true | false (default on)",
  MEMGATE_REDIS_PREFIX: "prefix of every key memgate writes in Redis (default memgate:)",
  MEMGATE_KEY_LIMIT_SYNC_MS:
    "per-key limit: count locally, sync with Redis every N ms (default 250; 0 = exact, one Redis call per request)",
  MEMGATE_SHADOW_POLICY: "dev mode: a shadow policy run on a sample of cache misses (answers never change)",
  MEMGATE_SHADOW_SAMPLE: "dev mode: share of cache misses the shadow policy runs on, 0–1 (default 1)",
  MEMGATE_KEY_RATE_LIMIT: 'default per-API-key rate "<requests>/<seconds>" (default 6000/60)',
  MEMGATE_POLICY_DIR: "directory of policy files, hot-reloaded (default policies)",
  MEMGATE_TENANTS_FILE:
    "tenants file, hot-reloaded (default config/tenants.yaml if present; none = dev mode)",
  MEMGATE_SHUTDOWN_TIMEOUT_MS: "graceful shutdown: in-flight requests get this long (default 10000)",
  MEMGATE_HEADERS_TIMEOUT_MS: "all request headers must arrive within this time (default 10000)",
  MEMGATE_REQUEST_TIMEOUT_MS: "the whole request must arrive within this time; 0 = no limit (default 30000)",
  MEMGATE_KEEPALIVE_TIMEOUT_MS: "an idle keep-alive connection is closed after this time (default 5000)",
  MEMGATE_MAX_CONNECTIONS: "open connections at most; 0 = no cap (default 10000)",
  MEMGATE_MAX_PIPELINED: "requests in flight per connection at most; 0 = no cap (default 16)",
  MEMGATE_METRICS_PORT: "serve /metrics on this port only, on its own listener",
  MEMGATE_METRICS_HOST: "address of the MEMGATE_METRICS_PORT listener (default 127.0.0.1)",
  MEMGATE_METRICS_TOKEN: "when set, /metrics needs Authorization: Bearer <token> (16+ characters)",
  MEMGATE_METRICS_CACHE_MS: "one rendered /metrics text answers every scrape this long (default 1000)",
  MEMGATE_METRICS_MAX_CONCURRENT: "/metrics scrapes in flight at most; more get 503 (default 8)",
  MEMGATE_RETRY_MAX: "retries of a failed backend call (0–3; default docs/resilience.md)",
  MEMGATE_BREAKER_CONSECUTIVE: "consecutive failures that open a backend's circuit",
  MEMGATE_BREAKER_RATIO: "failure share (0–1) over the window that opens a backend's circuit",
  MEMGATE_BREAKER_WINDOW: "calls in the circuit breaker's sliding window",
  MEMGATE_BREAKER_HALF_OPEN_MS: "an open circuit lets one probe through after this time",
  MEMGATE_BULKHEAD_LIMIT: "backend calls in flight per tenant and backend",
  MEMGATE_BULKHEAD_QUEUE: "backend calls waiting per tenant and backend beyond the bulkhead limit",
  MEMGATE_PROXY_DEADLINE_MS: "a proxied exchange must end within this time (default 120000)",
  MEMGATE_USER_HASH_KEY: "key of the telemetry user hash (16+ characters; unset = random per process)",
  MEMGATE_PLAYGROUND: "the policy playground at /ui: on | off (default off)",
  MEMGATE_PLAYGROUND_GOLDEN: "golden set (memgate eval's questions JSONL) the playground measures on",
  MEMGATE_TRACE_STAGES:
    "events: one memgate.pipeline span with an event per stage (default) | spans: a child span per stage",
  LOG_LEVEL: "pino level: fatal | error | warn | info | debug | trace | silent (default info)",
};

/** Read by the OpenTelemetry SDK itself (src/telemetry/config.ts), not by envSchema. */
const OTEL_HELP = "the standard OpenTelemetry variables (OTEL_SERVICE_NAME, OTEL_TRACES_EXPORTER, …)";

/** The "Environment variables:" section of `memgate serve --help`, one aligned line per variable. */
export function envHelpText(): string {
  const rows: Array<[string, string]> = [...Object.entries(ENV_HELP), ["OTEL_*", OTEL_HELP]];
  const width = Math.max(...rows.map(([name]) => name.length));
  const lines = rows.map(([name, text]) => `  ${name.padEnd(width)}  ${text}`);
  return `\nEnvironment variables (docs/configuration.md#environment-variables):\n${lines.join("\n")}`;
}
