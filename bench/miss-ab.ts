/**
 * Two parts of a cache miss, this build against another one (issue 29), in one process, interleaved batch by batch
 * (process.cpuUsage per miss; the median of the per-batch ratios): steadier on a busy machine than two gateways.
 * Also each batch's wall time per miss (misses one after the other: their mean latency), as a ratio the same way.
 *   - `redis`: the Redis part of a miss — admission, flight lock, generation, store, release — through each build's
 *     own `createSharedState` (a private redis-server, no OpenTelemetry). The other build is driven as it was
 *     before issue 29 (lock and generation by the flight, release after the store); this one as its service does.
 *   - `zep`: the Zep adapter's search with replies on (2 scopes + the reply thread call; not the default's `following`) against the
 *     bench's fake Zep (bench/gateway/servers.ts), each build's `createZepBackend`.
 *   - `zep-slow`: the same with every answer of the fake Zep `ZEP_SLOW_MS` (default 5) ms late, its thread reads
 *     too, as a remote Zep's would be: what the calls' order costs in latency (searches and thread read in turn,
 *     or side by side).
 *
 *   - `zep-otel` (and `zep-otel-slow`): `zep` (`zep-slow`) with OpenTelemetry as `memgate serve` runs it with spans
 *     exported: one NodeSDK (this build's context manager and Prometheus reader, a batch span processor whose
 *     exporter serializes each batch to OTLP protobuf and drops it), and each build's own instrumentation of its
 *     upstream calls — the other build's undici instrumentation (as its createInstrumentations configures it,
 *     if it has one) enabled only during the other build's batches: the diagnostics channels are process-wide.
 *     `MISS_AB_SPANS=none`: no span processor (as `serve` without OTEL_TRACES_EXPORTER; metrics still read).
 *
 *   npx tsx bench/miss-ab.ts <other build's root> [redis|zep|zep-slow|zep-otel|zep-otel-slow] [batches=20]
 *                            [per batch=150]
 *
 * The other root holds a built dist/ (e.g. `git archive <commit>` + `npx tsc -p tsconfig.build.json`, node_modules
 * linked). Both builds read the dist/ they were compiled to: run `npm run build` here first.
 */
import { join, resolve } from "node:path";
import { Helper, startRedis, stopChild } from "./gateway/procs";
import type { ServerReply, ServerRequest } from "./gateway/servers";

const [OTHER, PART = "redis", BATCHES = "20", PER = "150"] = process.argv.slice(2);
const THIS = resolve(__dirname, "..");
// biome-ignore lint/suspicious/noExplicitAny: two builds' modules, loaded at run time
type Any = any;

const payload = {
  memories: Array.from({ length: 12 }, (_, i) => ({
    id: `m${i}`,
    content: `${"x".repeat(420)}${i}`,
    score: 0.5,
    timestamp: "2026-03-01T09:00:00.000Z",
    sessionId: "s-1",
    type: "fact",
    provenance: { collection: "user:u", searchType: "hybrid", originalLength: 420, wasRedacted: false },
  })),
  metadata: {
    queryTime: 1,
    totalResults: 12,
    includedResults: 12,
    totalTokens: 400,
    appliedFilters: [],
    config: { topK: 8, clipSentences: 2, maxTokens: 450, searchType: "hybrid", minScore: 0.05 },
    policy: { name: "default", version: 5, hash: "h" },
    backend: "zep",
    cache: "miss",
    fallback: null,
  },
  systemPrompt: "y".repeat(1500),
};
const flightPolicy = { timeouts: { backendMs: 1500 }, cache: { ttlSeconds: 60 } };
const rule = { points: 1e9, durationSeconds: 60 };
const zepPolicy = {
  zep: { scopes: ["edges", "episodes"], reranker: "cross_encoder" },
  retrieval: { replies: true },
  timeouts: { backendMs: 1500 },
};
let n = 0;

function redisParts(root: string, url: string, prefix: string) {
  const dist = (m: string) => require(join(root, "dist", m));
  const env = dist("config/env.js").parseEnv({ REDIS_URL: url, MEMGATE_REDIS_PREFIX: prefix });
  return {
    st: dist("server/shared-state.js").createSharedState(env, dist("logging/logger.js").silentLogger()),
    key: dist("cache/key.js").payloadCacheKey,
    options: dist("cache/singleflight.js").flightOptionsFor,
    PayloadText: dist("retrieval/payload-text.js").PayloadText,
  };
}

/** A miss as the retrieval service made it before issue 29. */
async function missBefore(m: Any): Promise<void> {
  const key = m.key({ tenantId: "t", backend: "zep", userId: "u", query: `q${n++}`, policyHash: "h" });
  const checks = m.st.admission.check({ rateKey: "t:u", rule, cooldownKey: "t:zep", cacheKey: key });
  await checks.limit;
  await checks.cooldownMs;
  await checks.cached;
  let generation: Promise<number | undefined> = Promise.resolve(undefined);
  const compute = async () => {
    generation = m.st.cache.generation(key);
    return payload;
  };
  const store = async (p: Any) => {
    await m.st.cache.set(key, p, 60, 3600, await generation, m.PayloadText.of(p));
  };
  await m.st.flights.run(key, m.options(flightPolicy), compute, store);
  await m.st.flights.idle();
}

/** A miss as src/retrieval/service.ts makes it now. */
async function missNow(m: Any): Promise<void> {
  const key = m.key({ tenantId: "t", backend: "zep", userId: "u", query: `q${n++}`, policyHash: "h" });
  const opts = m.options(flightPolicy);
  const checks = m.st.admission.check({
    rateKey: "t:u",
    rule,
    cooldownKey: "t:zep",
    cacheKey: key,
    flight: { lockMs: opts.lockMs },
  });
  await checks.limit;
  await checks.cooldownMs;
  await checks.cached;
  const pre = await checks.flight;
  let generation: Promise<number | undefined> = Promise.resolve(undefined);
  const compute = async () => {
    generation =
      pre?.token != null && pre.generation !== undefined
        ? Promise.resolve(pre.generation)
        : m.st.cache.generation(key);
    return payload;
  };
  const store = async (p: Any, unlock: Any) =>
    m.st.cache.set(key, p, 60, 3600, await generation, m.PayloadText.of(p).encoded(), unlock);
  await m.st.flights.run(key, opts, compute, store, pre);
  await m.st.flights.idle();
}

/**
 * OpenTelemetry for `zep-otel`: one SDK for both builds; `switchTo(name)` enables the other build's undici
 * instrumentation for its batches only.
 */
function startOtel(other: string): { sdk: Any; switchTo: (name: string) => void } {
  const { NodeSDK } = require("@opentelemetry/sdk-node");
  const { BatchSpanProcessor } = require("@opentelemetry/sdk-trace-base");
  const { ProtobufTraceSerializer } = require("@opentelemetry/otlp-transformer");
  const { contextManager } = require(join(THIS, "dist/telemetry/log-context.js"));
  const { createPrometheusReader } = require(join(THIS, "dist/telemetry/prometheus.js"));
  let exportedBytes = 0;
  const exporter = {
    export(spans: unknown[], done: (r: { code: number }) => void) {
      exportedBytes += ProtobufTraceSerializer.serializeRequest(spans)?.length ?? 0;
      done({ code: 0 });
    },
    shutdown: async () => undefined,
  };
  const theirs: Any[] = require(join(other, "dist/telemetry/instrumentations.js"))
    .createInstrumentations()
    .flat()
    .filter((i: Any) => i.instrumentationName === "@opentelemetry/instrumentation-undici");
  const sdk = new NodeSDK({
    contextManager,
    instrumentations: theirs,
    metricReaders: [createPrometheusReader()],
    logRecordProcessors: [],
    // MISS_AB_SPANS=none: no span processor, as `memgate serve` runs without OTEL_TRACES_EXPORTER.
    spanProcessors: process.env.MISS_AB_SPANS === "none" ? [] : [new BatchSpanProcessor(exporter)],
  });
  sdk.start();
  process.on("exit", () =>
    console.log(`(spans serialized and dropped: ${(exportedBytes / 1e6).toFixed(1)} MB)`),
  );
  return {
    sdk,
    switchTo(name: string) {
      for (const i of theirs) name === "other" ? i.enable() : i.disable();
    },
  };
}

async function measure(
  runs: Array<[string, () => Promise<void>]>,
  switchTo: (name: string) => void = () => undefined,
): Promise<void> {
  for (let i = 0; i < 300; i++)
    for (const [name, run] of runs) {
      switchTo(name);
      await run();
    }
  const per = Number(PER);
  const cpu = new Map<string, number[]>(runs.map(([name]) => [name, []]));
  const wall = new Map<string, number[]>(runs.map(([name]) => [name, []]));
  for (let batch = 0; batch < Number(BATCHES); batch++) {
    for (const [name, run] of batch % 2 === 0 ? runs : [...runs].reverse()) {
      switchTo(name);
      const c0 = process.cpuUsage();
      const t0 = performance.now();
      for (let i = 0; i < per; i++) await run();
      wall.get(name)?.push(((performance.now() - t0) * 1000) / per);
      const c = process.cpuUsage(c0);
      cpu.get(name)?.push((c.user + c.system) / per);
    }
  }
  const median = (xs: number[]) =>
    [...xs].sort((x, y) => x - y)[Math.floor((xs.length - 1) / 2)] ?? Number.NaN;
  const mine = cpu.get("this") ?? [];
  const other = cpu.get("other") ?? [];
  const ratios = mine.map((x, i) => x / (other[i] ?? Number.NaN));
  console.log(
    `${PART}: CPU µs per miss, medians of ${BATCHES} batches × ${per}: this build ${median(mine).toFixed(0)}, ` +
      `the other ${median(other).toFixed(0)}; median per-batch ratio ${(100 * median(ratios)).toFixed(0)} %`,
  );
  // Misses one after the other: a batch's wall time per miss is its mean latency (on a busy machine, noisier).
  const wallMine = wall.get("this") ?? [];
  const wallOther = wall.get("other") ?? [];
  const wallRatios = wallMine.map((x, i) => x / (wallOther[i] ?? Number.NaN));
  console.log(
    `${PART}: wall µs per miss (one at a time), medians: this build ${median(wallMine).toFixed(0)}, ` +
      `the other ${median(wallOther).toFixed(0)}; median per-batch ratio ${(100 * median(wallRatios)).toFixed(0)} %`,
  );
}

async function main(): Promise<void> {
  if (OTHER === undefined)
    throw new Error(
      "usage: npx tsx bench/miss-ab.ts <other build's root> [redis|zep|zep-slow|zep-otel|zep-otel-slow]",
    );
  const other = resolve(OTHER);
  if (PART === "redis") {
    const redis = await startRedis();
    const mine = redisParts(THIS, redis.url, "this:");
    const theirs = redisParts(other, redis.url, "other:");
    await new Promise((r) => setTimeout(r, 300));
    try {
      await measure([
        ["this", () => missNow(mine)],
        ["other", () => missBefore(theirs)],
      ]);
    } finally {
      await mine.st.close();
      await theirs.st.close();
      await stopChild(redis.child, 5000);
    }
    return;
  }
  const otel = PART.startsWith("zep-otel") ? startOtel(other) : undefined;
  const zep = await Helper.start<ServerRequest, ServerReply>(join(__dirname, "gateway/servers.ts"), ["zep"]);
  if (PART === "zep-slow" || PART === "zep-otel-slow")
    await zep.helper.ask({ op: "delay", ms: Number(process.env.ZEP_SLOW_MS ?? 5), every: true });
  const baseUrl = `http://127.0.0.1:${zep.hello.port ?? 0}/api/v2`;
  const backend = (root: string) =>
    require(join(root, "dist/backends/zep/index.js")).createZepBackend({ apiKey: "k", baseUrl });
  const mine = backend(THIS);
  const theirs = backend(other);
  const search = (b: Any) =>
    b.search({
      userId: "bench-user",
      query: `what do I order? ${n++}`,
      limit: 100,
      searchType: "hybrid",
      policy: zepPolicy,
      signal: new AbortController().signal,
    });
  try {
    const [a, b] = [await search(mine), await search(theirs)];
    if (JSON.stringify(a) !== JSON.stringify(b)) throw new Error("the two builds' candidates differ");
    await measure(
      [
        ["this", () => search(mine)],
        ["other", () => search(theirs)],
      ],
      otel?.switchTo,
    );
  } finally {
    await mine.close();
    await theirs.close();
    await zep.helper.stop();
    await otel?.sdk.shutdown();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
