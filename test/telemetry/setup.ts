/**
 * OpenTelemetry for one test file, in memory: a tracer provider with an in-memory span exporter, a meter provider
 * with the production Prometheus reader plus an in-memory metric exporter, the AsyncLocalStorage context manager,
 * W3C tracecontext + baggage propagation, the production instrumentations (src/telemetry/instrumentations.ts,
 * runtime metrics included) and the process CPU and memory gauges (src/telemetry/runtime.ts).
 * The HTTP server span is the app's own first middleware (src/telemetry/http-server.ts): nothing to patch. Undici's
 * instrumentation listens on diagnostics channels and needs nothing special.
 */
import { context, metrics, propagation, trace } from "@opentelemetry/api";
import {
  AggregationTemporality,
  InMemoryMetricExporter,
  MeterProvider,
  PeriodicExportingMetricReader,
  type ResourceMetrics,
} from "@opentelemetry/sdk-metrics";
import {
  InMemorySpanExporter,
  NodeTracerProvider,
  type ReadableSpan,
  SimpleSpanProcessor,
} from "@opentelemetry/sdk-trace-node";
import { createHistogramProducer } from "../../src/telemetry/histograms";
import { createInstrumentations } from "../../src/telemetry/instrumentations";
import { createPrometheusReader, releasePrometheusReader } from "../../src/telemetry/prometheus";
import { startProcessMetrics } from "../../src/telemetry/runtime";

export interface TestTelemetry {
  spans(): ReadableSpan[];
  /** Forces a metric collection and returns it. */
  metrics(): Promise<ResourceMetrics>;
  reset(): void;
  close(): Promise<void>;
}

export function installTelemetry(): TestTelemetry {
  const spanExporter = new InMemorySpanExporter();
  const tracerProvider = new NodeTracerProvider({ spanProcessors: [new SimpleSpanProcessor(spanExporter)] });
  // Defaults: the AsyncLocalStorage context manager and W3C tracecontext + baggage propagation.
  tracerProvider.register();

  const metricExporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
  // memgate's histograms reach a reader through a producer of their own (src/telemetry/histograms.ts).
  const histograms = createHistogramProducer(AggregationTemporality.CUMULATIVE);
  const metricReader = new PeriodicExportingMetricReader({
    exporter: metricExporter,
    exportIntervalMillis: 3_600_000,
    metricProducers: [histograms],
  });
  const prometheus = createPrometheusReader();
  const meterProvider = new MeterProvider({ readers: [prometheus, metricReader] });
  metrics.setGlobalMeterProvider(meterProvider);
  startProcessMetrics(meterProvider);

  const instrumentations = createInstrumentations().flat();
  // As the SDK's registerInstrumentations does: the runtime instrumentation makes its instruments only then.
  for (const i of instrumentations) {
    i.setTracerProvider(tracerProvider);
    i.setMeterProvider(meterProvider);
  }

  return {
    spans: () => spanExporter.getFinishedSpans(),
    async metrics() {
      metricExporter.reset();
      await metricReader.forceFlush();
      const all = metricExporter.getMetrics();
      const last = all[all.length - 1];
      if (last === undefined) throw new Error("no metrics collected");
      return last;
    },
    reset: () => spanExporter.reset(),
    async close() {
      for (const i of instrumentations) i.disable();
      releasePrometheusReader(prometheus);
      histograms.release();
      await tracerProvider.shutdown();
      await meterProvider.shutdown();
      trace.disable();
      metrics.disable();
      propagation.disable();
      context.disable();
    },
  };
}

/** Every span attribute value as text (arrays joined), for leak scans. */
export function attributeTexts(spans: readonly ReadableSpan[]): string[] {
  return spans.flatMap((s) => [
    s.name,
    ...Object.entries(s.attributes).map(([k, v]) => `${k}=${Array.isArray(v) ? v.join(",") : String(v)}`),
    ...s.events.flatMap((e) => [e.name, ...Object.values(e.attributes ?? {}).map(String)]),
  ]);
}

/** The spans named `name` (throws when there is none, so a missing span fails loudly). */
export function spanNamed(spans: readonly ReadableSpan[], name: string): ReadableSpan {
  const span = spans.find((s) => s.name === name);
  if (span === undefined) throw new Error(`no span "${name}" among: ${spans.map((s) => s.name).join(", ")}`);
  return span;
}

/** The children of `parent` among `spans`. */
export function childrenOf(spans: readonly ReadableSpan[], parent: ReadableSpan): ReadableSpan[] {
  return spans.filter((s) => s.parentSpanContext?.spanId === parent.spanContext().spanId);
}

/** The first event named `name` of a span (throws when there is none). */
export function eventNamed(span: ReadableSpan, name: string): ReadableSpan["events"][number] {
  const event = span.events.find((e) => e.name === name);
  if (event === undefined)
    throw new Error(`no event "${name}" on ${span.name}: ${span.events.map((e) => e.name).join(", ")}`);
  return event;
}
