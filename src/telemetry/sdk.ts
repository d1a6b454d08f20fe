/**
 * The OpenTelemetry Node SDK for `memgate serve`, configured by the standard OTEL_* variables, with memgate's
 * defaults (docs/configuration.md#opentelemetry-variables):
 * - service name `memgate` unless OTEL_SERVICE_NAME / OTEL_RESOURCE_ATTRIBUTES name one;
 * - no span exporter unless OTEL_TRACES_EXPORTER is set (the SDK alone would default to OTLP); when it is set the
 *   SDK builds the exporters itself (otlp over OTEL_EXPORTER_OTLP_(TRACES_)PROTOCOL grpc | http/protobuf |
 *   http/json, console, zipkin) with a batch processor (OTEL_BSP_*), sampler from OTEL_TRACES_SAMPLER;
 * - metrics: the Prometheus reader behind `GET /metrics`, always, plus OTEL_METRICS_EXPORTER's push readers;
 *   Node runtime and process metrics (./runtime.ts);
 * - propagation: OTEL_PROPAGATORS, default W3C `tracecontext,baggage` (continued from callers, sent to backends);
 * - no OpenTelemetry logs pipeline: logs are pino's, on stdout, carrying trace_id/span_id (log-context.ts).
 *
 * Instrumentations patch http, express and ioredis when those are first required, so this must run before the
 * gateway's modules load: bin/memgate.js requires dist/telemetry/register.js first for `serve`.
 */

import { metrics } from "@opentelemetry/api";
import type { IMetricReader } from "@opentelemetry/sdk-metrics";
import { NodeSDK } from "@opentelemetry/sdk-node";
import type { SpanProcessor } from "@opentelemetry/sdk-trace-base";
import { readTelemetryConfig } from "./config";
import type { HistogramProducer } from "./histograms";
import { createInstrumentations } from "./instrumentations";
import { setActiveTelemetry, type Telemetry } from "./lifecycle";
import { contextManager } from "./log-context";
import { pushMetricReaders } from "./metric-readers";
import { createPrometheusReader, releasePrometheusReader } from "./prometheus";
import { startProcessMetrics } from "./runtime";

export interface StartOptions {
  /** Replace the span processors chosen from OTEL_TRACES_EXPORTER (the overhead bench, tests). */
  spanProcessors?: SpanProcessor[];
  /** More metric readers besides Prometheus and OTEL_METRICS_EXPORTER's (tests). */
  metricReaders?: IMetricReader[];
}

/**
 * Starts and registers the SDK (global tracer/meter providers, context manager, propagator, instrumentations).
 * Reads `process.env`; throws TelemetryConfigError on an invalid OTEL_* value memgate decides on.
 */
export function startTelemetry(opts: StartOptions = {}): Telemetry {
  const cfg = readTelemetryConfig(process.env);
  if (cfg.disabled) return { shutdown: async () => undefined };

  const prometheus = createPrometheusReader();
  const traces =
    opts.spanProcessors !== undefined
      ? { spanProcessors: opts.spanProcessors }
      : cfg.traces === undefined
        ? { spanProcessors: [] }
        : {};
  const instrumentations = createInstrumentations();
  const producers: HistogramProducer[] = [];
  const sdk = new NodeSDK({
    ...(cfg.serviceName === undefined ? {} : { serviceName: cfg.serviceName }),
    // memgate's one AsyncLocalStorage: the request id rides in the same context (./log-context.ts).
    contextManager,
    instrumentations,
    metricReaders: [
      prometheus,
      ...pushMetricReaders(cfg, process.env, producers),
      ...(opts.metricReaders ?? []),
    ],
    logRecordProcessors: [],
    ...traces,
  });
  sdk.start();
  startProcessMetrics(metrics.getMeterProvider());
  const telemetry: Telemetry = {
    async shutdown() {
      releasePrometheusReader(prometheus);
      await sdk.shutdown();
      for (const producer of producers) producer.release();
      // NodeSDK's shutdown ends the providers but leaves the instrumentations patched — undici's listens on a
      // process-wide diagnostics channel, so a later SDK in the same process (tests; a restart in process) would
      // send a second, stale traceparent on every backend call. Unpatch them.
      for (const instrumentation of instrumentations.flat()) instrumentation.disable();
    },
  };
  setActiveTelemetry(telemetry);
  return telemetry;
}
