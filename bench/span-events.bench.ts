/**
 * What one pipeline run's tracing costs in CPU, in process: MEMGATE_TRACE_STAGES=events (one `memgate.pipeline`
 * span, a span event per stage) against `spans` (the same span and one child span per stage, as before issue 29),
 * for a default-policy run's five stages under a recording `memgate.retrieve` span, every span handed to an
 * exporter that drops it (a SimpleSpanProcessor: each span's processor and export call is counted; a real
 * exporter's serialization, off the request path, comes on top and grows with the span count). Modes alternate,
 * three rounds each, after a warm-up.
 *
 *   npx tsx bench/span-events.bench.ts [--quick]          (or: npx tsx bench/index.ts span-events)
 */
import { context, trace } from "@opentelemetry/api";
import { NodeTracerProvider, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-node";
import type { PipelineResult } from "../src/pipeline";
import type { StageTrace } from "../src/pipeline/types";
import type { StageTracing } from "../src/telemetry/config";
import { configureStageTracing, startPipelineTrace, tracer } from "../src/telemetry/tracing";
import { heading, hostInfo, table } from "./lib/stats";

const QUICK = process.argv.includes("--quick");
const RUNS = QUICK ? 5_000 : 20_000;
const exported: Record<StageTracing, number> = { events: 0, spans: 0 };
let mode: StageTracing = "events";
const provider = new NodeTracerProvider({
  spanProcessors: [
    new SimpleSpanProcessor({
      export(spans, done) {
        exported[mode] += spans.length;
        done({ code: 0 });
      },
      shutdown: async () => undefined,
    }),
  ],
});
provider.register();

/** A default-policy run's stages: counts, a dropped candidate each, numeric details. */
const STAGES: StageTrace[] = ["score_threshold", "deduplication", "interleave", "clip", "token_budget"].map(
  (stage, i) => ({
    stage: stage as StageTrace["stage"],
    in: 16 - i,
    out: 15 - i,
    changes: [{ id: `m${i}`, reason: i === 1 ? "duplicate_of:m0" : "below_min_score" }],
    detail: { minScore: 0.3, topK: 8 },
  }),
);
const RESULT = {
  totalResults: 16,
  memories: [],
  trace: STAGES,
  totalTokens: 300,
} as unknown as PipelineResult;

/** CPU µs per traced pipeline run (the retrieve span included). */
function run(m: StageTracing, n: number): number {
  mode = m;
  configureStageTracing(m);
  const started = process.cpuUsage();
  for (let i = 0; i < n; i++) {
    const retrieve = tracer().startSpan("memgate.retrieve");
    context.with(trace.setSpan(context.active(), retrieve), () => {
      const traced = startPipelineTrace({ policy: "default", backend: "zep", expanded: false });
      for (const stage of STAGES) traced.observer.stage(stage, performance.now(), performance.now());
      traced.end(RESULT);
    });
    retrieve.end();
  }
  const used = process.cpuUsage(started);
  return (used.user + used.system) / n;
}

async function main(): Promise<void> {
  console.log(heading("span events vs child spans: CPU of one pipeline run's tracing"));
  for (const line of hostInfo()) console.log(line);
  for (const m of ["events", "spans", "events", "spans"] as const) run(m, RUNS / 10);
  exported.events = 0;
  exported.spans = 0;
  const per: Record<StageTracing, number[]> = { events: [], spans: [] };
  for (let round = 0; round < 3; round++)
    for (const m of ["events", "spans"] as const) per[m].push(run(m, RUNS));
  const rows = (["events", "spans"] as const).map((m) => [
    m,
    per[m].map((us) => us.toFixed(1)).join(" / "),
    Math.min(...per[m]).toFixed(1),
    (exported[m] / (RUNS * 3)).toFixed(1),
  ]);
  console.log(table(["MEMGATE_TRACE_STAGES", "CPU µs per run (3 rounds)", "best", "spans per run"], rows));
  await provider.shutdown();
}

void main();
