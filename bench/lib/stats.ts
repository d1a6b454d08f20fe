/**
 * Small, dependency-free helpers shared by the benches: timing loops, percentiles, a plain-text table and the
 * host facts that belong next to any figure. Times are nanoseconds (from `process.hrtime.bigint()`) until
 * they are formatted.
 */
import { cpus, loadavg, platform, release } from "node:os";
import { PerformanceObserver } from "node:perf_hooks";

// ---- timing -------------------------------------------------------------------------------------------

/** Times `n` calls of `fn`, one `hrtime` pair per call. Returns each call's duration in nanoseconds. */
export function sample(n: number, fn: (i: number) => unknown): Float64Array {
  const out = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    const start = process.hrtime.bigint();
    fn(i);
    out[i] = Number(process.hrtime.bigint() - start);
  }
  return out;
}

export interface WallAndCpu {
  /** Wall-clock ns per call (`hrtime`). */
  wall: Float64Array;
  /**
   * Process CPU ns per call (`process.cpuUsage()`, user + system, every thread of the process, so GC helper
   * threads count; 1 µs resolution). On an oversubscribed host the wall time also holds the time spent
   * waiting for a core; this does not.
   */
  cpu: Float64Array;
  /**
   * When each call started, in `performance.now()` milliseconds (the clock of the GC entries `gcCounter`
   * records), so `gcSplit` can tell the calls a collection ran in.
   */
  startedAt: Float64Array;
}

/** `sample`, plus each call's process CPU time. Costs about 1 µs more per call than `sample` (not timed). */
export function sampleWithCpu(n: number, fn: (i: number) => unknown): WallAndCpu {
  const wall = new Float64Array(n);
  const cpu = new Float64Array(n);
  const startedAt = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    startedAt[i] = performance.now();
    const c0 = process.cpuUsage();
    const start = process.hrtime.bigint();
    fn(i);
    wall[i] = Number(process.hrtime.bigint() - start);
    const c1 = process.cpuUsage(c0);
    cpu[i] = (c1.user + c1.system) * 1e3;
  }
  return { wall, cpu, startedAt };
}

/** The async form of `sample`, one awaited call at a time (for request/response benches). */
export async function sampleAsync(n: number, fn: (i: number) => Promise<unknown>): Promise<Float64Array> {
  const out = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    const start = process.hrtime.bigint();
    await fn(i);
    out[i] = Number(process.hrtime.bigint() - start);
  }
  return out;
}

/** Calls `fn` for about `ms` milliseconds (at least `minCalls` times); returns the mean ns per call. */
export function warmUp(ms: number, fn: (i: number) => unknown, minCalls = 100): number {
  const deadline = process.hrtime.bigint() + BigInt(Math.round(ms * 1e6));
  const start = process.hrtime.bigint();
  let i = 0;
  while (i < minCalls || process.hrtime.bigint() < deadline) fn(i++);
  return Number(process.hrtime.bigint() - start) / i;
}

/** How many calls fit in `budgetMs` at `nsPerCall`, clamped to `[min, max]`. */
export function callsFor(budgetMs: number, nsPerCall: number, min: number, max: number): number {
  const n = Math.floor((budgetMs * 1e6) / Math.max(1, nsPerCall));
  return Math.min(max, Math.max(min, n));
}

/** Cost of one `hrtime.bigint()` pair (the floor under every sample), median of many, in ns. */
export function timerOverheadNs(): number {
  return summarize(sample(20_000, () => undefined)).median;
}

/**
 * Heap bytes allocated per call, estimated from `heapUsed` growth over short batches of calls; batches
 * during which a GC ran (heap shrank) are discarded and the median of the rest is returned. Cheap (a few
 * hundred calls) and accurate to a few percent for allocation-heavy code; `undefined` if most batches saw a
 * GC. Allocation-free code gives 0.
 */
export function heapPerCall(fn: (i: number) => unknown, batch = 20, batches = 40): number | undefined {
  const estimates: number[] = [];
  let i = 0;
  for (let b = 0; b < batches; b++) {
    const before = process.memoryUsage().heapUsed;
    for (let k = 0; k < batch; k++) fn(i++);
    const grown = process.memoryUsage().heapUsed - before;
    if (grown >= 0) estimates.push(grown / batch);
  }
  if (estimates.length < batches / 4) return undefined;
  return summarize(estimates).median;
}

/**
 * Counts garbage collections and their total pause while it is started. GC entries reach the observer only
 * after the event loop turns, so `stop()` is async: call it after a synchronous timing loop.
 */
export function gcCounter(): { stop(): Promise<{ count: number; ms: number; entries: GcEntry[] }> } {
  let count = 0;
  let ms = 0;
  const entries: GcEntry[] = [];
  const observer = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      count++;
      ms += entry.duration;
      const kind = (entry as { detail?: { kind?: number } }).detail?.kind;
      entries.push({ startTime: entry.startTime, duration: entry.duration, minor: kind === MINOR_GC });
    }
  });
  observer.observe({ entryTypes: ["gc"] });
  return {
    async stop() {
      await new Promise((resolve) => setTimeout(resolve, 20));
      observer.disconnect();
      return { count, ms, entries };
    },
  };
}

/** `perf_hooks.constants.NODE_PERFORMANCE_GC_MINOR`: a scavenge of the young generation. */
const MINOR_GC = 1;

/** One garbage collection seen by `gcCounter`: when it started (`performance.now()` ms) and its pause (ms). */
export interface GcEntry {
  startTime: number;
  duration: number;
  /** A scavenge (young generation); otherwise a mark-compact or one of its incremental steps. */
  minor: boolean;
}

/**
 * Which calls a garbage collection started in: `true` at index i when a GC of `gcs` started between call i's
 * start (`startedAt`, ms) and its end (`startedAt` + `wall` ns). Both lists in time order.
 */
export function gcSplit(
  startedAt: ArrayLike<number>,
  wall: ArrayLike<number>,
  gcs: readonly GcEntry[],
): boolean[] {
  const hit = new Array<boolean>(startedAt.length).fill(false);
  let g = 0;
  for (let i = 0; i < startedAt.length && g < gcs.length; i++) {
    const from = startedAt[i] ?? 0;
    const to = from + (wall[i] ?? 0) / 1e6;
    while (g < gcs.length && (gcs[g]?.startTime ?? 0) < from) g++;
    while (g < gcs.length && (gcs[g]?.startTime ?? 0) <= to) {
      hit[i] = true;
      g++;
    }
  }
  return hit;
}

// ---- statistics ---------------------------------------------------------------------------------------

export interface Summary {
  n: number;
  min: number;
  median: number;
  p90: number;
  p99: number;
  p999: number;
  max: number;
  mean: number;
  stdev: number;
}

/** Nearest-rank percentile (`q` in [0, 1]) of ascending `sorted`: an observed value, never interpolated. */
export function percentile(sorted: ArrayLike<number>, q: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.ceil(q * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1] ?? Number.NaN;
}

/** Summary statistics of `values` (any unit; the input is not modified). */
export function summarize(values: ArrayLike<number>): Summary {
  const sorted = Float64Array.from(values).sort();
  const n = sorted.length;
  let sum = 0;
  for (let i = 0; i < n; i++) sum += sorted[i] ?? 0;
  const mean = n === 0 ? Number.NaN : sum / n;
  let sq = 0;
  for (let i = 0; i < n; i++) sq += ((sorted[i] ?? 0) - mean) ** 2;
  return {
    n,
    min: sorted[0] ?? Number.NaN,
    median: percentile(sorted, 0.5),
    p90: percentile(sorted, 0.9),
    p99: percentile(sorted, 0.99),
    p999: percentile(sorted, 0.999),
    max: sorted[n - 1] ?? Number.NaN,
    mean,
    stdev: n > 1 ? Math.sqrt(sq / (n - 1)) : 0,
  };
}

// ---- formatting ---------------------------------------------------------------------------------------

/** Nanoseconds as milliseconds with `digits` decimals: `0.043`. */
export function ms(ns: number, digits = 3): string {
  return (ns / 1e6).toFixed(digits);
}

/** Nanoseconds as microseconds: `43.2` (one decimal below 1,000 µs, none above). */
export function us(ns: number): string {
  const v = ns / 1e3;
  return v >= 1000 ? Math.round(v).toLocaleString("en-US") : v.toFixed(1);
}

/** Nanoseconds with a unit chosen for the magnitude: `850 ns`, `43.2 µs`, `1.27 ms`, `2.5 s`. */
export function duration(ns: number): string {
  if (!Number.isFinite(ns)) return String(ns);
  if (ns < 1e3) return `${Math.round(ns)} ns`;
  if (ns < 1e6) return `${(ns / 1e3).toFixed(1)} µs`;
  if (ns < 1e9) return `${(ns / 1e6).toFixed(2)} ms`;
  return `${(ns / 1e9).toFixed(2)} s`;
}

/** An integer with thousands separators: `23,412`. */
export function int(n: number): string {
  return Math.round(n).toLocaleString("en-US");
}

/** Bytes as `512 B`, `41.3 KB`, `2.1 MB` (powers of 1024). */
export function bytes(n: number | undefined): string {
  if (n === undefined || !Number.isFinite(n)) return "n/a";
  if (n < 1024) return `${Math.round(n)} B`;
  if (n < 1024 ** 2) return `${(n / 1024).toFixed(1)} KB`;
  return `${(n / 1024 ** 2).toFixed(1)} MB`;
}

/** `x` with a `×` suffix: `2.41×`. */
export function ratio(x: number, digits = 2): string {
  return `${x.toFixed(digits)}×`;
}

export type Align = "left" | "right";

/**
 * A plain-text table: a header, a rule, the rows. Columns are right-aligned unless `align` says otherwise
 * (numbers line up on their last digit). Widths count UTF-16 code units, enough for the ASCII and µ × ≤
 * this project prints.
 */
export function table(
  header: readonly string[],
  rows: readonly (readonly string[])[],
  align: Align[] = [],
): string {
  const widths = header.map((h, c) => Math.max(h.length, ...rows.map((r) => (r[c] ?? "").length)));
  const line = (cells: readonly string[]) =>
    cells
      .map((cell, c) => {
        const w = widths[c] ?? 0;
        return (align[c] ?? "right") === "left" ? cell.padEnd(w) : cell.padStart(w);
      })
      .join("  ")
      .trimEnd();
  const rule = widths.map((w) => "-".repeat(w)).join("  ");
  return [line(header), rule, ...rows.map(line)].join("\n");
}

/** A section heading: `== title ==` and a blank line above. */
export function heading(title: string): string {
  return `\n== ${title} ==`;
}

// ---- host ---------------------------------------------------------------------------------------------

/** The facts any timing depends on, as lines to print before the figures. */
export function hostInfo(): string[] {
  const cpu = cpus();
  const model = cpu[0]?.model.trim() ?? "unknown CPU";
  const [l1, l5, l15] = loadavg().map((l) => l.toFixed(2));
  const busy = (loadavg()[0] ?? 0) / Math.max(1, cpu.length);
  return [
    `node ${process.version} (V8 ${process.versions.v8}) on ${platform()} ${release()}`,
    `cpu: ${model}, ${cpu.length} logical cores`,
    `load average at start: ${l1} ${l5} ${l15} (1/5/15 min) = ${(busy * 100).toFixed(0)}% of the cores busy`,
    busy > 0.5
      ? "WARNING: this machine is shared and busy: expect noisy tails (p99.9, max); compare medians first."
      : "note: shared machine; tails (p99.9, max) are the first figures noise affects.",
  ];
}
