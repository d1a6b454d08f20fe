/**
 * Push metric readers from OTEL_METRICS_EXPORTER. memgate builds them itself (rather than letting the SDK read
 * the variable) because the SDK's MeterProvider takes its readers once, and the Prometheus `/metrics` reader
 * must be among them whatever the variable says.
 *
 * `otlp` honours OTEL_EXPORTER_OTLP_(METRICS_)PROTOCOL: http/protobuf (the default), http/json or grpc; the
 * exporters read their own endpoint/headers/timeout variables. `prometheus` is served at `/metrics` on the
 * gateway's port (no second server on 9464). Interval and timeout: OTEL_METRIC_EXPORT_INTERVAL (60 s) and
 * OTEL_METRIC_EXPORT_TIMEOUT (30 s).
 */
import { OTLPMetricExporter as GrpcMetricExporter } from "@opentelemetry/exporter-metrics-otlp-grpc";
import { OTLPMetricExporter as JsonMetricExporter } from "@opentelemetry/exporter-metrics-otlp-http";
import { OTLPMetricExporter as ProtoMetricExporter } from "@opentelemetry/exporter-metrics-otlp-proto";
import {
  AggregationTemporality,
  ConsoleMetricExporter,
  type IMetricReader,
  InstrumentType,
  PeriodicExportingMetricReader,
  type PushMetricExporter,
} from "@opentelemetry/sdk-metrics";
import type { OtlpProtocol, TelemetryConfig } from "./config";
import { createHistogramProducer, type HistogramProducer } from "./histograms";

function otlpExporter(protocol: OtlpProtocol): PushMetricExporter {
  switch (protocol) {
    case "grpc":
      return new GrpcMetricExporter();
    case "http/json":
      return new JsonMetricExporter();
    case "http/protobuf":
      return new ProtoMetricExporter();
  }
}

function millis(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const n = Number(env[name]);
  return env[name] !== undefined && env[name] !== "" && Number.isFinite(n) && n > 0 ? n : fallback;
}

/**
 * The push readers; each is given a producer of memgate's histograms (./histograms.ts) with its exporter's
 * temporality, added to `producers` (released by the caller when the readers are shut down).
 */
export function pushMetricReaders(
  cfg: TelemetryConfig,
  env: NodeJS.ProcessEnv,
  producers: HistogramProducer[],
): IMetricReader[] {
  const exportIntervalMillis = millis(env, "OTEL_METRIC_EXPORT_INTERVAL", 60_000);
  const exportTimeoutMillis = Math.min(
    millis(env, "OTEL_METRIC_EXPORT_TIMEOUT", 30_000),
    exportIntervalMillis,
  );
  const readers: IMetricReader[] = [];
  for (const name of cfg.metrics) {
    if (name === "otlp" || name === "console") {
      const exporter = name === "otlp" ? otlpExporter(cfg.metricsProtocol) : new ConsoleMetricExporter();
      const producer = createHistogramProducer(
        exporter.selectAggregationTemporality?.(InstrumentType.HISTOGRAM) ??
          AggregationTemporality.CUMULATIVE,
      );
      producers.push(producer);
      readers.push(
        new PeriodicExportingMetricReader({
          exporter,
          exportIntervalMillis,
          exportTimeoutMillis,
          metricProducers: [producer],
        }),
      );
    }
  }
  return readers;
}
