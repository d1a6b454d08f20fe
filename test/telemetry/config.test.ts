/** The OTEL_* variables memgate decides on, the privacy helpers and the hit-rate window. */
import { readTelemetryConfig } from "../../src/telemetry/config";
import { SlidingHitRate } from "../../src/telemetry/hit-rate";
import { prometheusName } from "../../src/telemetry/prometheus";
import { hashUser, safePath, safeQuery, safeUrl } from "../../src/telemetry/redact";

describe("readTelemetryConfig", () => {
  test("defaults: no span exporter, no push metrics, service name memgate, OTLP http/protobuf", () => {
    expect(readTelemetryConfig({})).toEqual({
      disabled: false,
      traces: undefined,
      metrics: [],
      metricsProtocol: "http/protobuf",
      serviceName: "memgate",
    });
  });

  test("exporter lists, per-signal protocol, and a service name from the environment wins", () => {
    const cfg = readTelemetryConfig({
      OTEL_TRACES_EXPORTER: "otlp, console",
      OTEL_METRICS_EXPORTER: "otlp,prometheus",
      OTEL_EXPORTER_OTLP_PROTOCOL: "grpc",
      OTEL_EXPORTER_OTLP_METRICS_PROTOCOL: "http/json",
      OTEL_RESOURCE_ATTRIBUTES: "deployment.environment=prod,service.name=memgate-eu",
    });
    expect(cfg).toMatchObject({
      traces: ["otlp", "console"],
      metrics: ["otlp", "prometheus"],
      metricsProtocol: "http/json",
      serviceName: undefined,
    });
    expect(readTelemetryConfig({ OTEL_SERVICE_NAME: "x" }).serviceName).toBeUndefined();
    expect(readTelemetryConfig({ OTEL_METRICS_EXPORTER: "none" }).metrics).toEqual([]);
    expect(readTelemetryConfig({ OTEL_SDK_DISABLED: "true" }).disabled).toBe(true);
  });

  test.each([
    ["OTEL_TRACES_EXPORTER", "jaeger", /^OTEL_TRACES_EXPORTER: must be a comma-separated list of otlp/],
    ["OTEL_METRICS_EXPORTER", "statsd", /^OTEL_METRICS_EXPORTER: /],
    [
      "OTEL_EXPORTER_OTLP_PROTOCOL",
      "http",
      /^OTEL_EXPORTER_OTLP_PROTOCOL: must be one of grpc, http\/protobuf/,
    ],
    ["OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "json", /^OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: /],
    ["OTEL_SDK_DISABLED", "yes", /^OTEL_SDK_DISABLED: must be true or false/],
  ])("%s=%s is rejected with a line naming the variable", (name, value, message) => {
    expect(() => readTelemetryConfig({ [name]: value })).toThrow(message);
  });
});

describe("privacy helpers", () => {
  test("paths keep fixed words only; ids become {id}", () => {
    expect(safePath("/api/v2/users/u-123/warm")).toBe("/api/v2/users/{id}/warm");
    expect(safePath("/api/v2/threads/th_9/context?template_id=t")).toBe("/api/v2/threads/{id}/context");
    expect(safePath("/v1/retrieve")).toBe("/v1/retrieve");
    expect(safePath("/memory/3f2a")).toBe("/memory/{id}");
  });

  test("query values and URLs", () => {
    expect(safeQuery("?user_id=u-1&l=5")).toBe("user_id=REDACTED&l=REDACTED");
    expect(safeQuery("")).toBe("");
    expect(safeUrl("https://api.getzep.com/api/v2/users/ana%40x.io?x=1")).toBe(
      "https://api.getzep.com/api/v2/users/{id}?x=REDACTED",
    );
    expect(safeUrl("not a url")).toBe("");
  });

  test("user hashes are per tenant, stable, 16 hex, and not the id", () => {
    const a = hashUser("acme", "u-1");
    expect(a).toMatch(/^[0-9a-f]{16}$/);
    expect(hashUser("acme", "u-1")).toBe(a);
    expect(hashUser("globex", "u-1")).not.toBe(a);
  });
});

describe("Prometheus names", () => {
  test("memgate's from the catalogue; others get the OpenTelemetry unit suffix", () => {
    expect(prometheusName("retrieval.latency_ms", "ms", "memgate")).toBe(
      "memgate_retrieval_latency_milliseconds",
    );
    expect(prometheusName("retrieval.fallbacks", "{retrieval}", "memgate")).toBe(
      "memgate_retrieval_fallbacks_total",
    );
    expect(prometheusName("http.server.request.duration", "s", "memgate")).toBe(
      "http_server_request_duration_seconds",
    );
    expect(prometheusName("retrieval.latency_ms", "ms", "someone-else")).toBe(
      "retrieval_latency_ms_milliseconds",
    );
  });
});

describe("SlidingHitRate", () => {
  test("hits over lookups in the window; old slots fall out; no data is undefined", () => {
    let now = 0;
    const w = new SlidingHitRate(1000, 5, () => now);
    expect(w.ratio()).toBeUndefined();
    w.record(true);
    w.record(false);
    expect(w.ratio()).toBe(0.5);
    now = 3000;
    w.record(true);
    expect(w.ratio()).toBeCloseTo(2 / 3);
    now = 5500; // the first slot (0–999 ms) is out of the 5-slot window
    expect(w.ratio()).toBe(1);
    now = 60_000;
    expect(w.ratio()).toBeUndefined();
  });
});
