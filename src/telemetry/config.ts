/**
 * The OTEL_* variables memgate decides on itself (docs/configuration.md#opentelemetry-variables), validated at boot like the rest of the
 * environment: a bad value stops `memgate serve` with one line naming the variable. Everything else (endpoints,
 * headers, timeouts, sampler, resource attributes, OTEL_PROPAGATORS, OTEL_BSP_*) is read by the SDK and the
 * exporters themselves, as the OpenTelemetry specification defines.
 */

export const TRACES_EXPORTERS = ["otlp", "console", "zipkin", "none"] as const;
export const METRICS_EXPORTERS = ["otlp", "console", "prometheus", "none"] as const;
export const OTLP_PROTOCOLS = ["grpc", "http/protobuf", "http/json"] as const;
export type OtlpProtocol = (typeof OTLP_PROTOCOLS)[number];
export type MetricsExporter = (typeof METRICS_EXPORTERS)[number];
/** MEMGATE_TRACE_STAGES (validated with the rest of the environment, src/config/env.ts; see ./tracing.ts). */
export const STAGE_TRACING = ["events", "spans"] as const;
export type StageTracing = (typeof STAGE_TRACING)[number];

export class TelemetryConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "TelemetryConfigError";
  }
}

export interface TelemetryConfig {
  /** OTEL_SDK_DISABLED=true: no SDK at all (no spans, no metrics, `/metrics` says so). */
  disabled: boolean;
  /**
   * Span exporters named by OTEL_TRACES_EXPORTER, or undefined when it is unset: then memgate exports no spans
   * (the SDK's own default would be OTLP to localhost:4318, which fails noisily where no collector runs).
   */
  traces: string[] | undefined;
  /** Metric exporters named by OTEL_METRICS_EXPORTER ([] when unset); the Prometheus `/metrics` is always on. */
  metrics: MetricsExporter[];
  metricsProtocol: OtlpProtocol;
  /** Set when neither OTEL_SERVICE_NAME nor OTEL_RESOURCE_ATTRIBUTES names the service: then it is `memgate`. */
  serviceName: string | undefined;
}

function value(env: NodeJS.ProcessEnv, name: string): string | undefined {
  const v = env[name]?.trim();
  return v === undefined || v === "" ? undefined : v;
}

function list<T extends string>(
  env: NodeJS.ProcessEnv,
  name: string,
  allowed: readonly T[],
): T[] | undefined {
  const raw = value(env, name);
  if (raw === undefined) return undefined;
  const items = [...new Set(raw.split(",").map((s) => s.trim()))].filter((s) => s !== "");
  const bad = items.find((s) => !(allowed as readonly string[]).includes(s));
  if (bad !== undefined || items.length === 0) {
    throw new TelemetryConfigError(
      `${name}: must be a comma-separated list of ${allowed.join(", ")} (got ${JSON.stringify(raw)})`,
    );
  }
  return items as T[];
}

function protocol(env: NodeJS.ProcessEnv, name: string): OtlpProtocol | undefined {
  const raw = value(env, name);
  if (raw === undefined) return undefined;
  if (!(OTLP_PROTOCOLS as readonly string[]).includes(raw)) {
    throw new TelemetryConfigError(
      `${name}: must be one of ${OTLP_PROTOCOLS.join(", ")} (got ${JSON.stringify(raw)})`,
    );
  }
  return raw as OtlpProtocol;
}

/** Reads and validates; throws TelemetryConfigError with one line naming the variable. */
export function readTelemetryConfig(env: NodeJS.ProcessEnv): TelemetryConfig {
  const sdkDisabled = value(env, "OTEL_SDK_DISABLED")?.toLowerCase();
  if (sdkDisabled !== undefined && sdkDisabled !== "true" && sdkDisabled !== "false") {
    throw new TelemetryConfigError(
      `OTEL_SDK_DISABLED: must be true or false (got ${JSON.stringify(sdkDisabled)})`,
    );
  }
  const traces = list(env, "OTEL_TRACES_EXPORTER", TRACES_EXPORTERS);
  const metrics = list(env, "OTEL_METRICS_EXPORTER", METRICS_EXPORTERS) ?? [];
  const general = protocol(env, "OTEL_EXPORTER_OTLP_PROTOCOL");
  protocol(env, "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL");
  const metricsProtocol = protocol(env, "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL") ?? general ?? "http/protobuf";
  const named =
    value(env, "OTEL_SERVICE_NAME") !== undefined ||
    /(^|,)\s*service\.name\s*=/.test(value(env, "OTEL_RESOURCE_ATTRIBUTES") ?? "");
  return {
    disabled: sdkDisabled === "true",
    traces,
    metrics: metrics.includes("none") ? [] : metrics,
    metricsProtocol,
    serviceName: named ? undefined : "memgate",
  };
}
