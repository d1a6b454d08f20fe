/**
 * Node runtime and process metrics, through OpenTelemetry's own packages (docs/observability.md#runtime-and-process):
 *
 *   @opentelemetry/instrumentation-runtime-node  event-loop delay (min/max/mean/stddev/p50/p90/p99) and
 *       utilization, event-loop time, GC duration by kind, V8 heap spaces (size, used, available, physical), and
 *       the active handles and requests by type (`nodejs_active_resources`): registered with the other
 *       instrumentations (./instrumentations.ts), so it follows the SDK's MeterProvider.
 *   @opentelemetry/host-metrics  the process's CPU time and utilization and its resident memory. Only the
 *       `process.*` groups: the host's CPUs, memory and network interfaces are the node exporter's business
 *       (and interface names are no business of an unauthenticated /metrics).
 *
 * Versions: instrumentation-runtime-node 0.36 is the last line for Node 20 and SDK 0.223 (0.37 needs Node 22.15
 * and SDK 0.300).
 */
import type { MeterProvider } from "@opentelemetry/api";
import { HostMetrics } from "@opentelemetry/host-metrics";
import { RuntimeNodeInstrumentation } from "@opentelemetry/instrumentation-runtime-node";

/** How often the event-loop delay histogram samples (ms); the instrumentation's default. */
const EVENT_LOOP_PRECISION_MS = 10;

export function runtimeInstrumentation(): RuntimeNodeInstrumentation {
  return new RuntimeNodeInstrumentation({ monitoringPrecision: EVENT_LOOP_PRECISION_MS });
}

/**
 * Starts the process CPU and memory gauges on `meterProvider` (read at each collection, no timer of their own).
 * They stop with the provider.
 */
export function startProcessMetrics(meterProvider: MeterProvider): void {
  new HostMetrics({
    meterProvider,
    name: "memgate-process",
    metricGroups: ["process.cpu", "process.memory"],
  }).start();
}
