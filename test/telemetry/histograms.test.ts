/**
 * memgate's histograms (src/telemetry/histograms.ts) against the SDK's own histogram instrument: the same records
 * give the same data points — series in the same order, bucket counts, sum, count, min, max — cumulative and
 * delta, with negative, NaN, boundary and overflowing values, and past the cardinality limit.
 */
import type { Attributes } from "@opentelemetry/api";
import {
  AggregationTemporality,
  DataPointType,
  type HistogramMetricData,
  InMemoryMetricExporter,
  MeterProvider,
  PeriodicExportingMetricReader,
  type ResourceMetrics,
} from "@opentelemetry/sdk-metrics";
import { createHistogramProducer, FastHistogram } from "../../src/telemetry/histograms";

const BOUNDARIES = [0, 1, 2.5, 5, 10, 100];

function setup(temporality: AggregationTemporality) {
  const exporter = new InMemoryMetricExporter(temporality);
  const producer = createHistogramProducer(temporality);
  const reader = new PeriodicExportingMetricReader({
    exporter,
    exportIntervalMillis: 3_600_000,
    metricProducers: [producer],
  });
  const provider = new MeterProvider({ readers: [reader] });
  const sdk = provider.getMeter("memgate").createHistogram("test.sdk", {
    description: "d",
    unit: "ms",
    advice: { explicitBucketBoundaries: BOUNDARIES },
  });
  return {
    sdk,
    async collect(): Promise<ResourceMetrics> {
      exporter.reset();
      await reader.forceFlush();
      const all = exporter.getMetrics();
      return all[all.length - 1] as ResourceMetrics;
    },
    async close() {
      producer.release();
      await provider.shutdown();
    },
  };
}

function metricOf(rm: ResourceMetrics, name: string): HistogramMetricData | undefined {
  const m = rm.scopeMetrics.flatMap((s) => s.metrics).find((x) => x.descriptor.name === name);
  if (m === undefined) return undefined;
  if (m.dataPointType !== DataPointType.HISTOGRAM) throw new Error(`${name} is not a histogram`);
  return m;
}

/** The points as comparable values (times left out: they are read from the clock at different moments). */
function shape(m: HistogramMetricData | undefined) {
  return m?.dataPoints.map((p) => ({
    attributes: p.attributes,
    counts: p.value.buckets.counts,
    boundaries: p.value.buckets.boundaries,
    sum: p.value.sum,
    count: p.value.count,
    min: p.value.min,
    max: p.value.max,
  }));
}

const fast = new FastHistogram({ name: "test.fast", description: "d", unit: "ms", boundaries: BOUNDARIES });
const fastEmpty = new FastHistogram({ name: "test.empty", description: "", unit: "", boundaries: [1] });

const VALUES = [0, 1, 2.5, 2.6, 5, 99.9, 100, 101, 1e9, -1, Number.NaN, 0.5, Infinity];
const SETS: Attributes[] = [
  { route: "/v1/retrieve", status: 200 },
  { status: 200, route: "/v1/retrieve" }, // the same series, keys in another order
  { route: "/x", status: 500, "error.type": "Error" },
  {},
];

function recordBoth(t: ReturnType<typeof setup>, value: number, attributes: Attributes): void {
  t.sdk.record(value, attributes);
  fast.record(value, attributes);
}

describe("FastHistogram and its producer", () => {
  it("gives the SDK's cumulative points: same series, buckets, sum, count, min and max", async () => {
    const t = setup(AggregationTemporality.CUMULATIVE);
    try {
      const shared = SETS[0] as Attributes;
      for (let i = 0; i < 200; i++) {
        const value = VALUES[i % VALUES.length] as number;
        // One label object reused (memgate's own way), and fresh objects of the same and other series.
        recordBoth(t, value, i % 3 === 0 ? shared : { ...(SETS[i % SETS.length] as Attributes) });
      }
      const first = await t.collect();
      const sdk = metricOf(first, "test.sdk");
      const ours = metricOf(first, "test.fast");
      expect(sdk?.dataPoints.length).toBe(3);
      expect(shape(ours)).toEqual(shape(sdk));
      expect(ours?.descriptor).toMatchObject({
        name: "test.fast",
        description: "d",
        unit: "ms",
        valueType: sdk?.descriptor.valueType,
      });
      expect(ours?.aggregationTemporality).toBe(AggregationTemporality.CUMULATIVE);
      // A histogram nothing was recorded in is left out, as the SDK leaves it out.
      expect(metricOf(first, "test.empty")).toBeUndefined();
      expect(fastEmpty.boundaries).toEqual([1]);
      // Cumulative: a later collection with nothing new reports the same points again.
      recordBoth(t, 3, { route: "/y" });
      const second = await t.collect();
      expect(shape(metricOf(second, "test.fast"))).toEqual(shape(metricOf(second, "test.sdk")));
      expect(metricOf(second, "test.fast")?.dataPoints.length).toBe(4);
    } finally {
      await t.close();
    }
  });

  it("gives the SDK's delta points: only the series recorded since the last collection", async () => {
    const t = setup(AggregationTemporality.DELTA);
    try {
      for (let i = 0; i < 50; i++)
        recordBoth(t, VALUES[i % VALUES.length] as number, SETS[i % 2 === 0 ? 0 : 2] as Attributes);
      const first = await t.collect();
      expect(shape(metricOf(first, "test.fast"))).toEqual(shape(metricOf(first, "test.sdk")));
      recordBoth(t, 7, SETS[2] as Attributes);
      const second = await t.collect();
      const ours = metricOf(second, "test.fast");
      expect(ours?.aggregationTemporality).toBe(AggregationTemporality.DELTA);
      expect(ours?.dataPoints.length).toBe(1);
      expect(shape(ours)).toEqual(shape(metricOf(second, "test.sdk")));
      // A series reported before starts where the last collection ended.
      const point = ours?.dataPoints[0];
      expect(point?.startTime).toEqual(metricOf(first, "test.fast")?.dataPoints[0]?.endTime);
    } finally {
      await t.close();
    }
  });

  it("puts every series past the SDK's cardinality limit into the overflow series, as the SDK does", async () => {
    const t = setup(AggregationTemporality.CUMULATIVE);
    try {
      for (let i = 0; i < 2100; i++) recordBoth(t, i % 7, { n: i });
      const rm = await t.collect();
      const ours = shape(metricOf(rm, "test.fast"));
      expect(ours?.length).toBe(2000);
      expect(ours?.[1999]?.attributes).toEqual({ "otel.metric.overflow": true });
      expect(ours).toEqual(shape(metricOf(rm, "test.sdk")));
    } finally {
      await t.close();
    }
  });

  it("records nothing for a released producer, and nothing at all without one", async () => {
    const t = setup(AggregationTemporality.CUMULATIVE);
    await t.close();
    const lone = createHistogramProducer();
    lone.release();
    fast.record(1, { a: 1 });
    const produced = await lone.collect();
    expect(produced.resourceMetrics.scopeMetrics).toEqual([]);
  });
});
