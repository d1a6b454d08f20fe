/**
 * memgate's histograms, aggregated by memgate and handed to the metric readers by a MetricProducer (issue 29).
 *
 * Why: through the SDK, every `Histogram.record` hashes its label set again (sorted keys, `JSON.stringify`: garbage
 * and CPU), and a cache hit records five (`retrieval.latency_ms`, `.results`, `.tokens`, `.token_budget_used`,
 * `http.server.request.duration`) — ~11 % of a Redis hit's allocations. Here a label set's key is made once per
 * label-set object (memgate keeps one object per series: src/telemetry/metrics.ts, http-server.ts) and a record is
 * a map read and a few additions.
 *
 * What the readers get is what the SDK's explicit-bucket histogram aggregation gives (`HistogramAggregator`, the
 * default for a histogram instrument with bucket advice): the same descriptor, data points in first-recorded
 * order, buckets counted by the first boundary ≥ the value, sum, count, min and max; a negative value is ignored
 * (as `HistogramInstrument.record` does), NaN makes its series but is not counted; at most 1,999 series per metric,
 * then the `otel.metric.overflow` series. Cumulative: every series since the reader started, from its first
 * record; delta: the series recorded since the last collection, from then. A metric without series is left out.
 *
 * Each reader is given a producer of its own (`createHistogramProducer`, with its temporality): the Prometheus
 * reader (./prometheus.ts), OTEL_METRICS_EXPORTER's push readers (./metric-readers.ts), a test's. A reader
 * without one does not see these histograms. The producer's metrics come in a scope block of their own (`memgate`,
 * as the SDK's): the same series, after the SDK's.
 */
import { type Attributes, type HrTime, ValueType } from "@opentelemetry/api";
import { millisToHrTime } from "@opentelemetry/core";
import { emptyResource } from "@opentelemetry/resources";
import {
  AggregationTemporality,
  type CollectionResult,
  DataPointType,
  type HistogramMetricData,
  InstrumentType,
  type MetricDescriptor,
  type MetricProducer,
} from "@opentelemetry/sdk-metrics";

/** The SDK's default cardinality limit per metric stream (2,000, one of them the overflow series). */
const MAX_SERIES = 1999;
const OVERFLOW: Attributes = { "otel.metric.overflow": true };
const OVERFLOW_KEY = "\u0000overflow";

/** One series' aggregation. */
interface Point {
  attributes: Attributes;
  /** Epoch ms of the series' first record (cumulative), or of the last collection that reported it (delta). */
  start: number;
  counts: number[];
  sum: number;
  count: number;
  min: number;
  max: number;
}

/** One reader's view of one histogram: its series by label-set key. */
class Series {
  readonly points = new Map<string, Point>();
  /** Delta: the keys reported by the last collection (their next points start at its time). */
  reported = new Set<string>();

  constructor(private readonly boundaries: readonly number[]) {}

  record(key: string, attributes: Attributes, value: number, now: number): void {
    let point = this.points.get(key);
    if (point === undefined) {
      if (this.points.size >= MAX_SERIES && !this.points.has(OVERFLOW_KEY)) {
        point = this.create(OVERFLOW, now);
        this.points.set(OVERFLOW_KEY, point);
      } else if (this.points.size >= MAX_SERIES) {
        point = this.points.get(OVERFLOW_KEY) as Point;
      } else {
        point = this.create(attributes, now);
        this.points.set(key, point);
      }
    }
    if (Number.isNaN(value)) return;
    point.count += 1;
    point.sum += value;
    if (value < point.min) point.min = value;
    if (value > point.max) point.max = value;
    // The first boundary ≥ value (the SDK's binarySearchUB), else the last bucket.
    const b = this.boundaries;
    let lo = 0;
    let hi = b.length - 1;
    let at = b.length;
    while (hi >= lo) {
      const mid = lo + ((hi - lo) >> 1);
      if ((b[mid] as number) < value) lo = mid + 1;
      else {
        at = mid;
        hi = mid - 1;
      }
    }
    point.counts[at] = (point.counts[at] as number) + 1;
  }

  private create(attributes: Attributes, now: number): Point {
    const counts = new Array<number>(this.boundaries.length + 1).fill(0);
    return { attributes, start: now, counts, sum: 0, count: 0, min: Infinity, max: -Infinity };
  }
}

/** A sink per producer (reader): what `record` updates. */
interface Sink {
  temporality: AggregationTemporality;
  series: Map<FastHistogram, Series>;
}

const sinks: Sink[] = [];

/**
 * Every FastHistogram made, in the order made (the order of their metrics in a collection). They are made once per
 * process (src/telemetry/metrics.ts), not per MeterProvider: a new reader's producer starts from nothing.
 */
const histograms: FastHistogram[] = [];

/** The key of a label set: its keys sorted with their values (as the SDK's `hashAttributes`), made once per object. */
const keys = new WeakMap<Attributes, string>();

function keyOf(attributes: Attributes): string {
  let key = keys.get(attributes);
  if (key === undefined) {
    const names = Object.keys(attributes).sort();
    key = names.length === 0 ? "" : JSON.stringify(names.map((n) => [n, attributes[n]]));
    keys.set(attributes, key);
  }
  return key;
}

/** A histogram aggregated here (see the top of this file): `record` as the API's `Histogram.record`. */
export class FastHistogram {
  readonly descriptor: MetricDescriptor;
  readonly boundaries: readonly number[];

  constructor(spec: { name: string; description: string; unit: string; boundaries: readonly number[] }) {
    this.boundaries = [...spec.boundaries];
    // What the SDK's descriptor of a histogram instrument holds (its type also has `type` and `advice`).
    const descriptor: MetricDescriptor & { type: InstrumentType; advice: object } = {
      name: spec.name,
      type: InstrumentType.HISTOGRAM,
      description: spec.description,
      unit: spec.unit,
      valueType: ValueType.DOUBLE,
      advice: { explicitBucketBoundaries: [...spec.boundaries] },
    };
    this.descriptor = descriptor;
    histograms.push(this);
  }

  /**
   * One value. Keep one `attributes` object per series where you can: its key is made once per object (a new
   * object each time costs the SDK's hashing again, no more). An object recorded with is never changed afterwards
   * (its key is remembered): memgate's label sets are made once and never changed.
   */
  record(value: number, attributes: Attributes = {}): void {
    if (sinks.length === 0 || typeof value !== "number" || value < 0) return;
    const key = keyOf(attributes);
    const now = Date.now();
    for (const sink of sinks) {
      let series = sink.series.get(this);
      if (series === undefined) {
        series = new Series(this.boundaries);
        sink.series.set(this, series);
      }
      series.record(key, attributes, value, now);
    }
  }
}

const SCOPE = { name: "memgate", version: "", schemaUrl: undefined };

/** A MetricProducer of every FastHistogram for one reader; `release` when the reader is shut down. */
export interface HistogramProducer extends MetricProducer {
  release(): void;
}

/** The producer a metric reader of this temporality is given (`metricProducers: [producer]`). */
export function createHistogramProducer(
  temporality: AggregationTemporality = AggregationTemporality.CUMULATIVE,
): HistogramProducer {
  const sink: Sink = { temporality, series: new Map() };
  sinks.push(sink);
  return {
    async collect(): Promise<CollectionResult> {
      const now = Date.now();
      const end = millisToHrTime(now);
      const metrics: HistogramMetricData[] = [];
      for (const h of histograms) {
        const series = sink.series.get(h);
        if (series === undefined || series.points.size === 0) continue;
        metrics.push({
          descriptor: h.descriptor,
          aggregationTemporality: temporality,
          dataPointType: DataPointType.HISTOGRAM,
          dataPoints: [...series.points.entries()].map(([key, p]) => ({
            attributes: p.attributes,
            startTime: startOf(series, key, p),
            endTime: end,
            value: {
              min: p.count > 0 ? p.min : undefined,
              max: p.count > 0 ? p.max : undefined,
              sum: p.sum,
              buckets: { boundaries: [...h.boundaries], counts: p.counts.slice() },
              count: p.count,
            },
          })),
        });
        if (temporality === AggregationTemporality.DELTA) {
          series.reported = new Set(series.points.keys());
          series.points.clear();
          lastCollection.set(series, now);
        }
      }
      return {
        resourceMetrics: {
          resource: emptyResource(),
          scopeMetrics: metrics.length === 0 ? [] : [{ scope: SCOPE, metrics }],
        },
        errors: [],
      };
    },
    release() {
      const at = sinks.indexOf(sink);
      if (at >= 0) sinks.splice(at, 1);
    },
  };
}

/** Delta: when each series was last collected. */
const lastCollection = new WeakMap<Series, number>();

/** A point's start: its first record, or (delta, a series reported before) the last collection's time. */
function startOf(series: Series, key: string, p: Point): HrTime {
  const last = lastCollection.get(series);
  return millisToHrTime(last !== undefined && series.reported.has(key) ? last : p.start);
}
