/**
 * Every dashboard and alert expression resolves against a running server (issue 28, "Done when"): the real binary
 * (`node bin/memgate.js serve`, the OpenTelemetry SDK started by src/telemetry/register.ts, as in production) on
 * the local backend with a tenants file of three tenants and Redis, a few requests (misses, hits, first-time
 * users, each caller-side fallback, a key over its rate limit), then `GET /metrics`: every metric, label and
 * label value named by a panel of deploy/grafana/dashboards/memgate.json or a rule of
 * deploy/prometheus/alerts.yml must be in that scrape. Left out, by name and reason: Prometheus's own `up`, and
 * the series of features this server does not run (test/ops/monitoring-files.ts, FEATURE_GATES).
 *
 * To turn a feature on, add it to FEATURES: the server's setup follows (FEATURE_SETUP), and its series are then
 * required. Also here: scrapes log nothing at warn or above; the tenant label and the zero-initialized series;
 * the runtime and process metrics.
 */
import type { ChildProcess } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { stringify } from "yaml";
import { ensureBuilt, startGateway } from "../redis/gateway-process";
import { keysUnder, REDIS_URL, requireRedis, testPrefix } from "../redis/redis-helpers";
import { type Family, parsePrometheusText } from "../telemetry/prom-parse";
import {
  dashboardTargets,
  type Feature,
  interpolate,
  loadRules,
  notExpected,
  ROOT,
  rulesText,
} from "./monitoring-files";
import { indexSeries, problemsOf, type SeriesIndex } from "./promql";

/** The features this server runs. */
const FEATURES: ReadonlySet<Feature> = new Set<Feature>(["redis", "shadow", "canary"]);

const REDIS_PREFIX = testPrefix("real-server");
const key = () => `mg_test_${randomBytes(12).toString("hex")}`;
const sha256 = (k: string) => createHash("sha256").update(k).digest("hex");
const KEYS = { acme: key(), globex: key(), idle: key() };

/** What each feature adds to the server: environment variables, and fields of every tenant's `policies`. */
const FEATURE_SETUP: Record<Feature, { env?: Record<string, string>; policies?: Record<string, unknown> }> = {
  redis: { env: { REDIS_URL, MEMGATE_REDIS_PREFIX: REDIS_PREFIX } },
  shadow: { policies: { shadow: { policy: "recency-heavy", sample: 1 } } },
  canary: { policies: { canary: { policy: "recency-heavy", percent: 50 } } },
};
const featureEnv = Object.assign({}, ...[...FEATURES].map((f) => FEATURE_SETUP[f].env ?? {}));
const featurePolicies = Object.assign({}, ...[...FEATURES].map((f) => FEATURE_SETUP[f].policies ?? {}));

function tenantsFile(): string {
  const tenant = (id: string, k: string, rateLimit?: { points: number; durationSeconds: number }) => ({
    id,
    keys: [
      { name: "app", sha256: sha256(k), scopes: ["retrieve", "admin"], ...(rateLimit ? { rateLimit } : {}) },
    ],
    policies: { allowed: ["*"], default: "default", ...featurePolicies },
    defaultBackend: "local",
    backends: { local: { dataFile: join(ROOT, "config/demo-memories.jsonl") } },
  });
  return stringify({
    tenants: [
      tenant("acme", KEYS.acme),
      tenant("globex", KEYS.globex, { points: 2, durationSeconds: 60 }),
      tenant("idle", KEYS.idle), // no request at all: its series exist at 0
    ],
  });
}

interface LogLine {
  level: number;
  msg?: string;
  path?: string;
  [k: string]: unknown;
}

describe("memgate serve: GET /metrics resolves every dashboard and alert expression", () => {
  let dir: string;
  let child: ChildProcess;
  let base: string;
  let stdout: () => string;
  let stderr: () => string;
  let scrape: string;
  let families: Map<string, Family>;
  let series: SeriesIndex;
  /** The log lines written while the scrapes were answered, and stderr meanwhile. */
  let scrapeLog: { lines: LogLine[]; stderr: string };
  const skip = notExpected(FEATURES);

  const retrieve = (k: string, body: Record<string, unknown>) =>
    fetch(`${base}/v1/retrieve`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-api-key": k },
      body: JSON.stringify({ sessionId: "s-1", useMemory: true, ...body }),
    });
  const answered = async (k: string, body: Record<string, unknown>) => {
    const res = await retrieve(k, body);
    expect(res.status).toBe(200);
    return (await res.json()) as { metadata: { cache: string; fallback: { code: string } | null } };
  };
  const logLines = (text: string): LogLine[] =>
    text
      .split("\n")
      .filter((l) => l.startsWith("{"))
      .map((l) => JSON.parse(l) as LogLine);

  beforeAll(async () => {
    ensureBuilt();
    dir = mkdtempSync(join(tmpdir(), "memgate-real-server-"));
    writeFileSync(join(dir, "tenants.yaml"), tenantsFile());
    const gateway = await startGateway(
      {
        PORT: "0",
        HOST: "127.0.0.1",
        LOG_LEVEL: "debug",
        MEMGATE_TENANTS_FILE: join(dir, "tenants.yaml"),
        MEMGATE_METRICS_CACHE_MS: "0",
        ...featureEnv,
      },
      "dist",
    );
    child = gateway.child;
    base = gateway.url;
    stdout = gateway.stdout;
    stderr = gateway.stderr;

    // As a load balancer would: traffic once /readyz says ready (Redis connected: a request before that is answered
    // with the cache bypassed, which a slow boot on a loaded machine shows: give it 40 s, then say so).
    const until = Date.now() + 40_000;
    let readiness = "";
    for (;;) {
      readiness = ((await (await fetch(`${base}/readyz`)).json()) as { status: string }).status;
      if (readiness === "ready" || Date.now() > until) break;
      await new Promise((r) => setTimeout(r, 250));
    }
    expect(readiness).toBe("ready");

    // A miss, then a hit; a user the store has no memories for; the caller-side fallbacks.
    expect((await answered(KEYS.acme, { userId: "ana", query: "what do I order?" })).metadata.cache).toBe(
      "miss",
    );
    expect((await answered(KEYS.acme, { userId: "ana", query: "what do I order?" })).metadata.cache).toBe(
      "hit",
    );
    await answered(KEYS.acme, { userId: "sam", query: "where do I live?", policy: "strict-pii" });
    const codes = [
      (await answered(KEYS.acme, { userId: "first-timer", query: "hello" })).metadata.fallback?.code,
      (await answered(KEYS.acme, { userId: "ana", query: "coffee", useMemory: false })).metadata.fallback
        ?.code,
      (await answered(KEYS.acme, { userId: "ana", query: "coffee", sessionId: "no spaces allowed" })).metadata
        .fallback?.code,
      (await answered(KEYS.acme, { userId: "ana", query: "   " })).metadata.fallback?.code,
    ];
    expect(codes).toEqual(["COLLECTION_NOT_FOUND", "MEMORY_DISABLED", "SESSION_INVALID", "INVALID_QUERY"]);
    // globex's key allows 2 requests a minute: the third is 429 (the key scope of the rate-limit counter).
    const statuses: number[] = [];
    for (let i = 0; i < 3; i++)
      statuses.push((await retrieve(KEYS.globex, { userId: "wei", query: `tea ${i}` })).status);
    expect(statuses).toEqual([200, 200, 429]);
    expect((await fetch(`${base}/readyz`)).status).toBe(200);

    // The scrapes: one alone, then five at once; what the process logs meanwhile is kept.
    const before = { out: stdout().length, err: stderr().length };
    const first = await fetch(`${base}/metrics`);
    expect(first.status).toBe(200);
    scrape = await first.text();
    const more = await Promise.all([1, 2, 3, 4, 5].map(() => fetch(`${base}/metrics`)));
    expect(more.map((r) => r.status)).toEqual([200, 200, 200, 200, 200]);
    await Promise.all(more.map((r) => r.text()));
    await new Promise((r) => setTimeout(r, 200)); // the access log line is written when the response closes
    scrapeLog = { lines: logLines(stdout().slice(before.out)), stderr: stderr().slice(before.err) };
    families = parsePrometheusText(scrape);
    series = indexSeries(families);
  }, 90_000);

  afterAll(async () => {
    if (child?.exitCode === null) child.kill("SIGKILL");
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
    if (FEATURES.has("redis")) {
      const redis = await requireRedis();
      const keys = await keysUnder(redis, REDIS_PREFIX);
      if (keys.length > 0) await redis.del(...keys);
      redis.disconnect();
    }
  });

  const samples = (name: string, match: Record<string, string> = {}) =>
    (series.get(name) ?? []).length === 0
      ? []
      : [...families.values()]
          .flatMap((f) => f.samples)
          .filter((s) => s.name === name && Object.entries(match).every(([k, v]) => s.labels[k] === v));
  const total = (name: string, match: Record<string, string> = {}) =>
    samples(name, match).reduce((t, s) => t + s.value, 0);

  test("every panel query names only metrics, labels and values this server's /metrics has", () => {
    const targets = dashboardTargets();
    expect(targets.length).toBeGreaterThan(30);
    const problems = targets.flatMap((t) =>
      problemsOf(interpolate(t.expr), series, skip).map((p) => `${t.panel} [${t.refId}]: ${p}`),
    );
    expect(problems).toEqual([]);
  });

  test("every alert rule names only metrics, labels and values this server's /metrics has", () => {
    const rules = loadRules(rulesText);
    expect(rules.length).toBeGreaterThanOrEqual(9);
    const problems = rules.flatMap((r) => problemsOf(r.expr, series, skip).map((p) => `${r.alert}: ${p}`));
    expect(problems).toEqual([]);
  });

  test("the retrieval metrics carry the tenant, and every known tenant's counters exist at 0", () => {
    expect(total("memgate_retrievals_total", { tenant: "acme", policy: "default", outcome: "ok" })).toBe(2);
    expect(total("memgate_retrievals_total", { tenant: "acme", outcome: "fallback" })).toBe(4);
    expect(total("memgate_retrievals_total", { tenant: "acme", policy: "strict-pii", outcome: "ok" })).toBe(
      1,
    );
    expect(total("memgate_retrievals_total", { tenant: "globex" })).toBe(2);
    expect(total("memgate_retrieval_fallbacks_total", { tenant: "acme", code: "COLLECTION_NOT_FOUND" })).toBe(
      1,
    );
    expect(total("memgate_retrieval_latency_milliseconds_count", { tenant: "acme" })).toBe(7);
    expect(total("memgate_retrieval_tokens_count", { tenant: "globex" })).toBe(2);
    // The idle tenant: no request, yet a series at 0 for each policy × outcome and cache result.
    const idle = samples("memgate_retrievals_total", { tenant: "idle" });
    expect(new Set(idle.map((s) => `${s.labels.policy}/${s.labels.outcome}`))).toEqual(
      new Set(
        ["default", "recency-heavy", "strict-injection", "strict-pii", "strict-secrets"].flatMap((p) => [
          `${p}/ok`,
          `${p}/fallback`,
        ]),
      ),
    );
    expect(idle.every((s) => s.value === 0)).toBe(true);
    // …and per policy it may use × cache result (the served policy is a label, so canary and stable compare).
    const idleLookups = samples("memgate_retrieval_cache_lookups_total", {
      tenant: "idle",
      backend: "local",
    });
    expect(new Set(idleLookups.map((s) => `${s.labels.policy}/${s.labels.cache}`))).toEqual(
      new Set(
        ["default", "recency-heavy", "strict-injection", "strict-pii", "strict-secrets"].flatMap((p) =>
          ["bypass", "hit", "miss", "stale"].map((c) => `${p}/${c}`),
        ),
      ),
    );
    expect(idleLookups.every((s) => s.value === 0)).toBe(true);
    // Only the tenants file's ids, never a user id or anything else the request carried.
    const tenants = new Set(
      [...families.values()].flatMap((f) => f.samples.map((s) => s.labels.tenant)).filter((t) => t),
    );
    expect([...tenants].sort()).toEqual(["acme", "globex", "idle"]);
    for (const leaked of ["ana", "sam", "wei", "first-timer", "what do I order?", KEYS.acme])
      expect(scrape).not.toContain(`"${leaked}"`);
  });

  test("Node runtime and process metrics: event-loop delay, heap, GC, CPU, handles, in-flight requests", () => {
    expect(total("nodejs_eventloop_delay_p99_seconds")).toBeGreaterThan(0);
    expect(total("nodejs_eventloop_utilization")).toBeGreaterThan(0);
    expect(total("v8js_memory_heap_used_bytes", { v8js_heap_space_name: "old_space" })).toBeGreaterThan(0);
    expect(total("v8js_gc_duration_seconds_count")).toBeGreaterThan(0);
    expect(total("process_cpu_time_seconds_total", { process_cpu_state: "user" })).toBeGreaterThan(0);
    expect(total("process_memory_usage")).toBeGreaterThan(10_000_000);
    expect(total("v8js_resource_active", { v8js_resource_type: "TCPServerWrap" })).toBeGreaterThanOrEqual(1);
    // Scrapes are not counted in flight; every retrieval has ended.
    expect(samples("http_server_active_requests").map((s) => s.value)).toEqual([0, 0]);
    expect(total("http_server_request_duration_seconds_count", { http_response_status_code: "429" })).toBe(1);
  });

  test("readiness gauges: ready, with the Redis check", () => {
    expect(total("memgate_ready")).toBe(1);
    const checks = Object.fromEntries(
      samples("memgate_readiness_check").map((s) => [s.labels.check, s.value]),
    );
    expect(checks).toEqual({ policies: 0, backends: 0, ...(FEATURES.has("redis") ? { redis: 0 } : {}) });
  });

  test("GET /metrics logs nothing at warn or above (its access line is debug)", () => {
    const scrapes = scrapeLog.lines.filter((l) => l.msg === "request" && l.path === "/metrics");
    expect(scrapes.map((l) => l.level)).toEqual([20, 20, 20, 20, 20, 20]);
    expect(scrapeLog.lines.filter((l) => l.level >= 40)).toEqual([]);
    expect(scrapeLog.stderr).toBe("");
  });

  test("SIGTERM: the server drains and exits 0", async () => {
    const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
    child.kill("SIGTERM");
    expect(await exited).toBe(0);
    expect(logLines(stdout()).filter((l) => l.level >= 50)).toEqual([]);
  });
});
