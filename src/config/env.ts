import { z } from "zod";
import { BACKEND_NAMES, POLICY_NAME } from "../policy/schema";
import { parseAddresses } from "../redis/topology";
import { STAGE_TRACING } from "../telemetry/config";

const LEVELS = ["fatal", "error", "warn", "info", "debug", "trace", "silent"] as const;

/** `host:port,host:port` → addresses (src/redis/topology.ts), or an error naming the expected form. */
const addresses = (example: string) =>
  z.string().transform((v, ctx) => {
    const parsed = parseAddresses(v);
    if (parsed === undefined) {
      ctx.addIssue({ code: "custom", message: `must be host:port[,host:port…] (e.g. ${example})` });
      return z.NEVER;
    }
    return parsed;
  });

/**
 * A whole number written in decimal digits only, from `min` to `max`: `Number()` would also take "0x50", "1e3",
 * "0b1", " 80" and "Infinity" (issue 26, finding 13), so every numeric variable goes through this.
 */
const whole = (min: number, max: number, error = `must be a whole number from ${min} to ${max}`) =>
  z
    .string()
    .regex(/^[0-9]{1,10}$/, { error })
    .transform(Number)
    .pipe(z.number().min(min, { error }).max(max, { error }));

/** A decimal number (`0.5`, `1`), digits and at most one point. */
const decimal = (error: string) =>
  z
    .string()
    .regex(/^[0-9]{1,10}(?:\.[0-9]{1,10})?$/, { error })
    .transform(Number);

/** A share: a `decimal` from 0 to 1 (`exclusive`: strictly between), one `error` for every way it is wrong. */
const share = (error: string, { exclusive = false } = {}) =>
  decimal(error).pipe(
    exclusive ? z.number().gt(0, { error }).lt(1, { error }) : z.number().min(0, { error }).max(1, { error }),
  );

const url = (what: string) => z.url({ protocol: /^https?$/, error: `must be an http(s) URL (${what})` });

/** The environment (docs/configuration.md#environment-variables). Parsed once at boot; a bad value exits non-zero with a one-line reason naming the variable. */
export const envSchema = z.object({
  HOST: z.string().min(1).default("127.0.0.1"),
  PORT: whole(0, 65535, "must be a port number from 0 to 65535").default(8787),
  MEMGATE_BACKEND: z.enum(BACKEND_NAMES).default("local"),
  ZEP_API_KEY: z.string().min(1).optional(),
  ZEP_BASE_URL: url("e.g. https://api.getzep.com/api/v2")
    .refine((u) => /\/api\/v2\/?$/.test(u), "must include /api/v2 (e.g. https://api.getzep.com/api/v2)")
    .default("https://api.getzep.com/api/v2"),
  OPENMEMORY_URL: url("e.g. http://localhost:8080").optional(),
  OPENMEMORY_API_KEY: z.string().min(1).optional(),
  OPENMEMORY_USER_SCOPING: z.enum(["user_id", "api_key"]).default("user_id"),
  MEMGATE_LOCAL_DATA: z.string().min(1).default("config/demo-memories.jsonl"),
  REDIS_URL: z
    .string()
    .regex(/^rediss?:\/\//, "must be a redis:// or rediss:// URL")
    .optional(),
  /** Redis Cluster: seed nodes (any few of its nodes; ioredis discovers the others). Instead of REDIS_URL. */
  REDIS_CLUSTER_NODES: addresses("10.0.0.1:6379,10.0.0.2:6379").optional(),
  /** Redis Sentinel: the sentinels to ask for the master of REDIS_SENTINEL_MASTER. Instead of REDIS_URL. */
  REDIS_SENTINELS: addresses("10.0.0.1:26379,10.0.0.2:26379,10.0.0.3:26379").optional(),
  REDIS_SENTINEL_MASTER: z
    .string()
    .regex(
      /^[A-Za-z0-9._-]{1,64}$/,
      "must be the master's name in the sentinels' configuration (e.g. mymaster)",
    )
    .optional(),
  /** Password of the sentinels themselves (their `requirepass`), when they have one. */
  REDIS_SENTINEL_PASSWORD: z.string().min(1).optional(),
  /** Credentials and TLS of the Cluster or Sentinel data nodes (a REDIS_URL carries its own: rediss://user:pass@…). */
  REDIS_USERNAME: z.string().min(1).optional(),
  REDIS_PASSWORD: z.string().min(1).optional(),
  REDIS_TLS: z
    .enum(["true", "false", "1", "0"], { error: "must be true or false" })
    .default("false")
    .transform((v) => v === "true" || v === "1"),
  /**
   * Auto-pipelining of one node's or Sentinel's master's commands (ioredis `enableAutoPipelining`): on unless
   * "false". Not with a Cluster (ioredis does not follow MOVED/ASK for a batch of several slots' writes).
   */
  REDIS_AUTO_PIPELINING: z.enum(["true", "false", "1", "0"], { error: "must be true or false" }).optional(),
  /** Prefix of every key memgate writes in Redis (several deployments can share one Redis). */
  MEMGATE_REDIS_PREFIX: z
    .string()
    .regex(/^[A-Za-z0-9:_.-]{0,64}$/, "must be 0–64 of A-Z a-z 0-9 : _ . - (e.g. memgate:)")
    .default("memgate:"),
  /**
   * Default per-API-key request rate, `<points>/<seconds>` (a key's `rateLimit` in the tenants file wins). A key
   * belongs to an application, not a person, so the default is sized for one application's traffic (100/s on
   * average over a minute): it stops a runaway client or a leaked key, not normal use. Per-user limits are the
   * policies' `rateLimit.perUser`.
   */
  MEMGATE_KEY_RATE_LIMIT: z
    .string()
    .regex(/^[1-9][0-9]{0,6}\/[1-9][0-9]{0,5}$/, 'must be "<requests>/<seconds>", e.g. 6000/60')
    .default("6000/60")
    .transform((v) => {
      const [points, seconds] = v.split("/").map(Number);
      return { points: points ?? 6000, durationSeconds: seconds ?? 60 };
    }),
  /**
   * With Redis: how often each replica reports the per-key counts it kept locally and reads the fleet's (ms). 0 =
   * exact, one Redis call per request. A batch lets the fleet overshoot a key's limit by what the replicas receive
   * in about two intervals (src/limits/synced.ts, docs/configuration.md#per-key-limit-synchronization).
   */
  MEMGATE_KEY_LIMIT_SYNC_MS: whole(0, 60_000).default(250),
  MEMGATE_POLICY_DIR: z.string().min(1).default("policies"),
  MEMGATE_TENANTS_FILE: z.string().min(1).optional(),
  MEMGATE_SHUTDOWN_TIMEOUT_MS: whole(0, 120_000).default(10_000),
  // --- the HTTP server's own limits (src/server/serve.ts): a slow or idle client cannot hold a connection ---
  /** All request headers must arrive within this time (slow-headers clients get 408 and are cut off). */
  MEMGATE_HEADERS_TIMEOUT_MS: whole(1000, 120_000).default(10_000),
  /** The whole request, body included, must arrive within this time; 0 = no limit (proxied uploads). */
  MEMGATE_REQUEST_TIMEOUT_MS: whole(0, 3_600_000).default(30_000),
  /** An idle keep-alive connection is closed after this time. */
  MEMGATE_KEEPALIVE_TIMEOUT_MS: whole(1000, 600_000).default(5_000),
  /** Open connections at most; more are closed at once; 0 = no cap. */
  MEMGATE_MAX_CONNECTIONS: whole(0, 1_000_000).default(10_000),
  /**
   * Requests one connection may have in flight (pipelined, not yet answered); one more cuts the connection.
   * 0 = no cap. A client that pipelines thousands of requests in one write no longer makes thousands of answers.
   */
  MEMGATE_MAX_PIPELINED: whole(0, 10_000).default(16),
  // --- GET /metrics (src/telemetry/metrics-endpoint.ts) ---
  /** Serve /metrics on this port only (its own listener, on MEMGATE_METRICS_HOST), not on the gateway's. */
  MEMGATE_METRICS_PORT: whole(0, 65535, "must be a port number from 0 to 65535").optional(),
  MEMGATE_METRICS_HOST: z.string().min(1).default("127.0.0.1"),
  /** When set, /metrics needs `Authorization: Bearer <token>` (Prometheus `authorization: { credentials }`). */
  MEMGATE_METRICS_TOKEN: z.string().min(16, "must be at least 16 characters").optional(),
  /** How long one rendered /metrics text answers every scrape (ms). */
  MEMGATE_METRICS_CACHE_MS: whole(0, 60_000).default(1000),
  /** /metrics scrapes in flight at most; more get 503 with Retry-After. */
  MEMGATE_METRICS_MAX_CONCURRENT: whole(1, 1000).default(8),
  // --- resilience: per tenant and backend (src/resilience, docs/resilience.md); unset = the defaults there ---
  MEMGATE_RETRY_MAX: whole(0, 3).optional(),
  MEMGATE_BREAKER_CONSECUTIVE: whole(1, 1000).optional(),
  MEMGATE_BREAKER_RATIO: share("must be a failure share between 0 and 1 (exclusive), e.g. 0.5", {
    exclusive: true,
  }).optional(),
  MEMGATE_BREAKER_WINDOW: whole(2, 10_000).optional(),
  MEMGATE_BREAKER_HALF_OPEN_MS: whole(100, 600_000).optional(),
  MEMGATE_BULKHEAD_LIMIT: whole(1, 10_000).optional(),
  MEMGATE_BULKHEAD_QUEUE: whole(0, 100_000).optional(),
  // --- end resilience ---
  /**
   * The transparent proxy (src/compat/proxy.ts): the whole exchange, the answer's last byte included, must end
   * within this time, however steadily an upstream trickles bytes (the 30 s idle timeout alone would not end it).
   */
  MEMGATE_PROXY_DEADLINE_MS: whole(1000, 3_600_000).default(120_000),
  /**
   * Key of the telemetry user hash (`memgate.user.hash`: HMAC-SHA256 of tenant and user id). Unset: a random key
   * per process (hashes group one process's spans only); set the same key on every replica to group fleet-wide.
   */
  MEMGATE_USER_HASH_KEY: z.string().min(16, { error: "must be at least 16 characters" }).optional(),
  /**
   * How a retrieval's internal steps and policy stages are traced (src/telemetry/tracing.ts): `events` on the
   * `memgate.retrieve` and `memgate.pipeline` spans, or `spans`, one child span each (deep debugging).
   */
  MEMGATE_TRACE_STAGES: z.enum(STAGE_TRACING, { error: 'must be "events" or "spans"' }).default("events"),
  // --- the policy playground (src/http/routes/playground.ts, README "Policy playground") ---
  /** The page at /ui and its admin API under /v1/playground: "on" serves them; off (404) unless set. */
  MEMGATE_PLAYGROUND: z.enum(["on", "off"], { error: 'must be "on" or "off"' }).default("off"),
  /** A golden set (`memgate eval`'s questions JSONL) the playground measures policies on; unset: no eval table. */
  MEMGATE_PLAYGROUND_GOLDEN: z.string().min(1).optional(),
  // --- end playground ---
  // --- shadow policy in dev mode (docs/rollouts.md#shadow; with a tenants file: its policies.shadow) ---
  /** A policy run beside the served one on a sampled share of cache misses; the answer never changes. */
  MEMGATE_SHADOW_POLICY: z
    .string()
    .regex(POLICY_NAME, "must be a policy name (1–64 of a-z, 0-9, _ . -)")
    .optional(),
  /** Share of cache misses that also run MEMGATE_SHADOW_POLICY, from 0 to 1 (default 1: every miss). */
  MEMGATE_SHADOW_SAMPLE: share("must be a share from 0 to 1, e.g. 0.1").optional(),
  // --- end shadow ---
  LOG_LEVEL: z.enum(LEVELS).default("info"),
});

/**
 * The rules across variables: one Redis topology at most, each Redis option only with its topology, the playground's
 * golden set only with the playground, the shadow sample only with a shadow policy.
 */
const checkedEnvSchema = envSchema.superRefine((env, ctx) => {
  const set = (["REDIS_URL", "REDIS_CLUSTER_NODES", "REDIS_SENTINELS"] as const).filter(
    (k) => env[k] !== undefined,
  );
  const fail = (path: string, message: string) => ctx.addIssue({ code: "custom", path: [path], message });
  if (set.length > 1)
    fail(
      set[1] ?? "",
      `set only one of REDIS_URL, REDIS_CLUSTER_NODES, REDIS_SENTINELS (${set.join(" and ")} are set)`,
    );
  if (env.REDIS_SENTINELS !== undefined && env.REDIS_SENTINEL_MASTER === undefined)
    fail("REDIS_SENTINEL_MASTER", "is required with REDIS_SENTINELS (the master's name, e.g. mymaster)");
  if (env.REDIS_SENTINELS === undefined) {
    for (const k of ["REDIS_SENTINEL_MASTER", "REDIS_SENTINEL_PASSWORD"] as const)
      if (env[k] !== undefined) fail(k, "only applies with REDIS_SENTINELS");
  }
  if (env.REDIS_CLUSTER_NODES === undefined && env.REDIS_SENTINELS === undefined) {
    const where =
      env.REDIS_URL === undefined
        ? "without REDIS_CLUSTER_NODES or REDIS_SENTINELS"
        : "with REDIS_URL: put it in the URL (rediss://user:password@host:port)";
    for (const k of ["REDIS_USERNAME", "REDIS_PASSWORD"] as const)
      if (env[k] !== undefined) fail(k, `does not apply ${where}`);
    if (env.REDIS_TLS) fail("REDIS_TLS", `does not apply ${where}`);
  }
  const pipelining = env.REDIS_AUTO_PIPELINING;
  if (pipelining !== undefined && set.length === 0)
    fail("REDIS_AUTO_PIPELINING", "only applies with REDIS_URL or REDIS_SENTINELS");
  if ((pipelining === "true" || pipelining === "1") && env.REDIS_CLUSTER_NODES !== undefined)
    fail(
      "REDIS_AUTO_PIPELINING",
      "does not apply with REDIS_CLUSTER_NODES (ioredis does not follow MOVED/ASK for an auto-pipelined batch)",
    );
  if (env.MEMGATE_PLAYGROUND !== "on" && env.MEMGATE_PLAYGROUND_GOLDEN !== undefined)
    fail("MEMGATE_PLAYGROUND_GOLDEN", "only applies with MEMGATE_PLAYGROUND=on");
  if (env.MEMGATE_SHADOW_SAMPLE !== undefined && env.MEMGATE_SHADOW_POLICY === undefined)
    fail("MEMGATE_SHADOW_SAMPLE", "only applies with MEMGATE_SHADOW_POLICY");
});

export type Env = z.output<typeof envSchema>;

export class EnvError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "EnvError";
  }
}

/** Empty strings count as unset (a common way to "unset" in compose files and CI). */
function withoutEmpty(env: NodeJS.ProcessEnv): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(env)) if (v !== undefined && v !== "") out[k] = v;
  return out;
}

/** Throws EnvError with one line: `PORT: must be a port number from 0 to 65535 (got "80a")`. */
export function parseEnv(env: NodeJS.ProcessEnv): Env {
  const source = withoutEmpty(env);
  const parsed = checkedEnvSchema.safeParse(source);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  const name = String(issue?.path[0] ?? "environment");
  const got = source[name];
  const shown =
    got === undefined || /KEY|TOKEN|SECRET|PASSWORD/.test(name) ? "" : ` (got ${JSON.stringify(got)})`;
  throw new EnvError(`${name}: ${issue?.message ?? "invalid"}${shown}`);
}

/** True for loopback listen addresses (dev mode may only listen there). */
export function isLoopback(host: string): boolean {
  return host === "localhost" || host === "::1" || host === "[::1]" || /^127(\.\d{1,3}){3}$/.test(host);
}
