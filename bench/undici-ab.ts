/**
 * What the OpenTelemetry undici instrumentation costs the Zep adapter's search (issue 29): this build's
 * `createZepBackend` against the bench's fake Zep (bench/gateway/servers.ts) in one process, with the instrumentation
 * as memgate configured it (its `startSpanHook`), the Prometheus reader and memgate's context manager, switched on and off
 * batch by batch (interleaved; process.cpuUsage per search; the median of the per-batch ratios). Without a span
 * processor, as `memgate serve` runs without OTEL_TRACES_EXPORTER: the spans are not recorded, the rest of the
 * instrumentation's work (URL and header parsing, `traceparent`, the `http.client.request.duration` record) is done.
 *
 * Since issue 29's round 8 memgate no longer installs this instrumentation (its upstream calls have memgate's own
 * CLIENT span, src/telemetry/http-client.ts): "on" is now what installing it again would add on top of that.
 *
 *   npx tsx bench/undici-ab.ts [batches=30] [per batch=150]
 *
 * Reads dist/: run `npx tsc -p tsconfig.build.json` first.
 */
import { join, resolve } from "node:path";
import { UndiciInstrumentation } from "@opentelemetry/instrumentation-undici";
import { NodeSDK } from "@opentelemetry/sdk-node";
import { Helper } from "./gateway/procs";
import type { ServerReply, ServerRequest } from "./gateway/servers";

const [BATCHES = "30", PER = "150"] = process.argv.slice(2);
const DIST = join(resolve(__dirname, ".."), "dist");

async function main(): Promise<void> {
  const { safePath, safeQuery, safeUrl, splitUrl } = await import(join(DIST, "telemetry/redact.js"));
  // The startSpanHook memgate configured until issue 29's round 8 (URL attributes as templates).
  const requestUrlAttributes = (origin: string, target: string) => {
    const { path, search } = splitUrl(target);
    return {
      "url.full": safeUrl(`${origin}${target}`),
      "url.path": safePath(path),
      "url.query": safeQuery(search),
    };
  };
  const { createPrometheusReader } = await import(join(DIST, "telemetry/prometheus.js"));
  const { contextManager } = await import(join(DIST, "telemetry/log-context.js"));
  const { createZepBackend } = await import(join(DIST, "backends/zep/index.js"));
  const instrumentation = new UndiciInstrumentation({
    startSpanHook: (r) => requestUrlAttributes(r.origin, r.path),
  });
  const sdk = new NodeSDK({
    contextManager,
    instrumentations: [instrumentation],
    metricReaders: [createPrometheusReader()],
    logRecordProcessors: [],
    spanProcessors: [],
  });
  sdk.start();
  const zep = await Helper.start<ServerRequest, ServerReply>(join(__dirname, "gateway/servers.ts"), ["zep"]);
  const backend = createZepBackend({
    apiKey: "k",
    baseUrl: `http://127.0.0.1:${zep.hello.port ?? 0}/api/v2`,
  });
  const policy = {
    zep: { scopes: ["edges", "episodes"], reranker: "cross_encoder" },
    retrieval: { replies: true },
    timeouts: { backendMs: 1500 },
  };
  let n = 0;
  const search = () =>
    backend.search({
      userId: "bench-user",
      query: `what do I order? ${n++}`,
      limit: 24,
      searchType: "hybrid",
      policy,
      signal: new AbortController().signal,
    });
  try {
    for (let i = 0; i < 300; i++) await search();
    const cpu = { on: [] as number[], off: [] as number[] };
    for (let batch = 0; batch < Number(BATCHES); batch++) {
      for (const mode of batch % 2 === 0 ? (["off", "on"] as const) : (["on", "off"] as const)) {
        if (mode === "on") instrumentation.enable();
        else instrumentation.disable();
        const c0 = process.cpuUsage();
        for (let i = 0; i < Number(PER); i++) await search();
        const c = process.cpuUsage(c0);
        cpu[mode].push((c.user + c.system) / Number(PER));
      }
    }
    const median = (xs: number[]) =>
      [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)] ?? Number.NaN;
    const ratios = cpu.on.map((x, i) => x / (cpu.off[i] ?? Number.NaN));
    console.log(
      `undici instrumentation on / off: CPU µs per search (2 scopes + the thread call), medians of ${BATCHES} ` +
        `batches × ${PER}: ${median(cpu.on).toFixed(0)} / ${median(cpu.off).toFixed(0)}; median per-batch ratio ` +
        `${(100 * median(ratios)).toFixed(0)} %`,
    );
  } finally {
    await backend.close();
    await zep.helper.stop();
    await sdk.shutdown();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
