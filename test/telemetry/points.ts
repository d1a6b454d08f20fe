/** Reading one metric's data points out of a collection (test/telemetry/setup.ts `metrics()`). */
import type { Attributes } from "@opentelemetry/api";
import { DataPointType, type ResourceMetrics } from "@opentelemetry/sdk-metrics";

export interface Point {
  attributes: Attributes;
  /** Counter/gauge value, or a histogram's count. */
  value: number;
  sum?: number;
}

/** The data points of the metric named `name` (its OpenTelemetry name); throws when there is none. */
export function points(rm: ResourceMetrics, name: string): Point[] {
  const metric = rm.scopeMetrics.flatMap((s) => s.metrics).find((m) => m.descriptor.name === name);
  if (metric === undefined) throw new Error(`no metric ${name}`);
  if (metric.dataPointType === DataPointType.HISTOGRAM) {
    return metric.dataPoints.map((p) => ({
      attributes: p.attributes,
      value: p.value.count,
      sum: p.value.sum,
    }));
  }
  if (metric.dataPointType === DataPointType.EXPONENTIAL_HISTOGRAM)
    throw new Error("unexpected histogram type");
  return metric.dataPoints.map((p) => ({ attributes: p.attributes, value: p.value }));
}

/** The sum of the values of the points whose attributes include `match`. */
export function total(rm: ResourceMetrics, name: string, match: Attributes = {}): number {
  return points(rm, name)
    .filter((p) => Object.entries(match).every(([k, v]) => p.attributes[k] === v))
    .reduce((s, p) => s + p.value, 0);
}
