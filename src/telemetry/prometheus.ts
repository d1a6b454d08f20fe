/**
 * `GET /metrics`: a pull reader on the SDK's MeterProvider, rendered in the Prometheus text exposition format
 * (0.0.4) with Prometheus-style names (catalogue.ts). Served by ./metrics-endpoint.ts: on the gateway's port or
 * its own (`MEMGATE_METRICS_PORT`), open or behind a bearer token (`MEMGATE_METRICS_TOKEN`), scrapes bounded
 * (docs/api.md#operations-endpoints).
 *
 * The reader is always on when the SDK runs (with or without any OTEL_* variable); OTLP export is separate.
 */
import { PrometheusExporter, PrometheusSerializer } from "@opentelemetry/exporter-prometheus";
import { resourceFromAttributes } from "@opentelemetry/resources";
import type { ResourceMetrics } from "@opentelemetry/sdk-metrics";
import { PROMETHEUS_NAMES } from "./catalogue";
import { createHistogramProducer, type HistogramProducer } from "./histograms";
import { METER_NAME } from "./metrics";

export const PROMETHEUS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8";

let reader: PrometheusExporter | undefined;
/** Each Prometheus reader's producer of memgate's histograms (./histograms.ts). */
const producers = new WeakMap<PrometheusExporter, HistogramProducer>();

/**
 * Makes the reader `/metrics` reads, with a (cumulative) producer of memgate's histograms; the caller binds it to its
 * MeterProvider (sdk.ts, or a test's).
 */
export function createPrometheusReader(): PrometheusExporter {
  const producer = createHistogramProducer();
  reader = new PrometheusExporter({ preventServerStart: true, metricProducers: [producer] });
  producers.set(reader, producer);
  return reader;
}

/** Forgets the reader (the SDK shut down) and stops its producer. */
export function releasePrometheusReader(r: PrometheusExporter): void {
  producers.get(r)?.release();
  producers.delete(r);
  if (reader === r) reader = undefined;
}

/** OpenTelemetry's Prometheus compatibility rule for units: the unit, spelled out, as the name's suffix. */
const UNIT_SUFFIXES: Record<string, string> = { s: "seconds", ms: "milliseconds", By: "bytes" };

/** The Prometheus name of a metric: memgate's from the catalogue; others (http, …) get their unit suffix. */
export function prometheusName(otelName: string, unit: string, scope: string): string {
  const known = scope === METER_NAME ? PROMETHEUS_NAMES.get(otelName) : undefined;
  if (known !== undefined) return known;
  const base = otelName.replace(/[^a-zA-Z0-9_:]/g, "_").replace(/_+/g, "_");
  const suffix = UNIT_SUFFIXES[unit];
  return suffix === undefined || base.endsWith(`_${suffix}`) ? base : `${base}_${suffix}`;
}

/**
 * The resource attributes `target_info` may carry: the service's identity. `/metrics` is unauthenticated, and the
 * SDK's detectors also fill in the command line and its arguments, the executable's path, the process owner and
 * pid, the host's name and id (docs/observability.md): those stay in OTLP exports, where the operator sends them.
 */
const TARGET_INFO_ATTRIBUTES = new Set([
  "service.name",
  "service.namespace",
  "service.version",
  "service.instance.id",
  "deployment.environment",
  "deployment.environment.name",
  "telemetry.sdk.name",
  "telemetry.sdk.language",
  "telemetry.sdk.version",
]);

/**
 * Renames every metric and drops its unit (it is in the name now; `# UNIT` lines are OpenMetrics, not 0.0.4);
 * keeps only the service's identity in the resource (`target_info`).
 */
function forPrometheus(rm: ResourceMetrics): ResourceMetrics {
  const attributes = Object.fromEntries(
    Object.entries(rm.resource.attributes).filter(([key]) => TARGET_INFO_ATTRIBUTES.has(key)),
  );
  return {
    ...rm,
    resource: resourceFromAttributes(attributes),
    scopeMetrics: rm.scopeMetrics.map((sm) => ({
      ...sm,
      metrics: sm.metrics.map((m) => ({
        ...m,
        descriptor: {
          ...m.descriptor,
          name: prometheusName(m.descriptor.name, m.descriptor.unit, sm.scope.name),
          unit: "",
        },
      })),
    })),
  };
}

const serializer = new PrometheusSerializer();

/** The current metrics as Prometheus text. */
export async function renderMetrics(): Promise<string> {
  if (reader === undefined) return "# memgate: metrics are off (the telemetry SDK is not running)\n";
  const { resourceMetrics } = await reader.collect();
  // The resource's detectors (host, process, …) settle asynchronously: read before they did, every access to its
  // attributes (the serializer's `target_info`) logged "Accessing resource attributes before async attributes
  // settled" at ERROR, twice per scrape, forever. Wait for them once; afterwards this returns at once.
  await resourceMetrics.resource.waitForAsyncAttributes?.();
  const text = serializer.serialize(forPrometheus(resourceMetrics));
  return text.endsWith("\n") ? text : `${text}\n`;
}
