/** The gateway bench's tables and goal lines (bench/gateway.bench.ts measures, this prints). */
import { bytes, int, type Summary, summarize, table } from "../lib/stats";
import type { LoadResult } from "./load";

export type Target = "direct" | "miss" | "hit" | "floor";
export type Mode = "seq" | "rate" | "max";

export interface Scenario {
  target: Target;
  /** The fake backend's delay; undefined for what never reaches it (hit, floor). */
  backendMs: number | undefined;
}

/** One run of one scenario: what the load generator saw, the gateway's counters, the servers' CPU time. */
export interface Run {
  result: LoadResult;
  answers: Map<string, number>;
  /** CPU ms used meanwhile by the process answering (backend, floor or gateway) and by redis-server. */
  cpu: { serverMs: number; redisMs: number };
}

export interface Measured {
  scenario: Scenario;
  mode: Mode;
  latency: Summary;
  rps: number;
  failed: number;
  sendLagP99: number;
  /** From the gateway's /metrics over the scenario: cache results and fallbacks. */
  answers: Map<string, number>;
  /** CPU µs per answer of the answering process and of redis-server. */
  serverCpuUs: number;
  redisCpuUs: number;
}

export const LABELS: Record<Target, string> = {
  direct: "(a) fake backend, direct",
  miss: "(b) memgate, cache miss",
  hit: "(c) memgate, cache hit",
  floor: "(d) bare Express (floor)",
};

/** Merges the rounds of one scenario and mode. */
export function merge(scenario: Scenario, mode: Mode, runs: readonly Run[]): Measured {
  const latencies = runs.flatMap((r) => r.result.latencies);
  const seconds = runs.reduce((s, r) => s + r.result.seconds, 0);
  const total = runs.reduce((s, r) => s + r.result.total, 0);
  const answers = new Map<string, number>();
  for (const r of runs) for (const [k, v] of r.answers) answers.set(k, (answers.get(k) ?? 0) + v);
  const perAnswer = (ms: number) => (ms * 1000) / Math.max(1, total);
  return {
    scenario,
    mode,
    latency: summarize(latencies),
    rps: latencies.length / Math.max(1e-9, seconds),
    failed: runs.reduce((s, r) => s + r.result.failed, 0),
    sendLagP99: Math.max(0, ...runs.map((r) => r.result.sendLagP99 ?? 0)),
    answers,
    serverCpuUs: perAnswer(runs.reduce((s, r) => s + r.cpu.serverMs, 0)),
    redisCpuUs: perAnswer(runs.reduce((s, r) => s + r.cpu.redisMs, 0)),
  };
}

const f2 = (ms: number) => (Number.isFinite(ms) ? ms.toFixed(2) : "n/a");
const cpuOf = (us: number) => (Number.isFinite(us) ? int(us) : "n/a");
const backendOf = (s: Scenario) => (s.backendMs === undefined ? "—" : `${s.backendMs} ms`);

function describeAnswers(a: Map<string, number>): string {
  if (a.size === 0) return "";
  return [...a.entries()]
    .filter(([, v]) => v > 0)
    .map(([k, v]) => `${k} ${int(v)}`)
    .join(", ");
}

export function find(all: readonly Measured[], mode: Mode, target: Target, backendMs?: number) {
  return all.find(
    (m) => m.mode === mode && m.scenario.target === target && m.scenario.backendMs === backendMs,
  );
}

/** Latency table of one mode (seq or rate). */
export function latencyTable(all: readonly Measured[], mode: Mode, note: string): string {
  const rows = all.filter((m) => m.mode === mode);
  return table(
    [
      "scenario",
      "backend",
      "answers/s",
      "p50 ms",
      "p90 ms",
      "p99 ms",
      "max ms",
      "failed",
      "send lag p99",
      "CPU µs/answer",
      "redis µs",
      "gateway answers",
    ],
    rows.map((m) => [
      LABELS[m.scenario.target],
      backendOf(m.scenario),
      int(m.rps),
      f2(m.latency.median),
      f2(m.latency.p90),
      f2(m.latency.p99),
      f2(m.latency.max),
      int(m.failed),
      `${f2(m.sendLagP99)} ms`,
      cpuOf(m.serverCpuUs),
      cpuOf(m.redisCpuUs),
      describeAnswers(m.answers),
    ]),
    ["left", "left"],
  ).concat(
    `\n(${note}; latency = send → last byte; CPU µs/answer: the answering process's CPU time ` +
      "(backend, floor or memgate) per answer, from /proc in 10 ms ticks)",
  );
}

export function maxTable(all: readonly Measured[], connections: number): string {
  const rows = all.filter((m) => m.mode === "max");
  const floor = find(all, "max", "floor")?.rps ?? Number.NaN;
  return table(
    [
      "scenario",
      "backend",
      "req/s",
      "vs floor",
      "p50 ms",
      "p99 ms",
      "max ms",
      "failed",
      "CPU µs/answer",
      "redis µs",
      "gateway answers",
    ],
    rows.map((m) => [
      LABELS[m.scenario.target],
      backendOf(m.scenario),
      int(m.rps),
      Number.isNaN(floor) ? "—" : `${((m.rps / floor) * 100).toFixed(0)} %`,
      f2(m.latency.median),
      f2(m.latency.p99),
      f2(m.latency.max),
      int(m.failed),
      cpuOf(m.serverCpuUs),
      cpuOf(m.redisCpuUs),
      describeAnswers(m.answers),
    ]),
    ["left", "left"],
  ).concat(`\n(closed loop, autocannon, ${connections} connections)`);
}

/** memgate's added latency (b − a) per backend delay, and the cache hit's distance from the floor (c − d). */
export function addedTable(all: readonly Measured[], delays: readonly number[], rate: number): string {
  const rows: string[][] = [];
  for (const [mode, label] of [
    ["seq", "one at a time"],
    ["rate", `${rate}/s`],
  ] as const) {
    for (const d of delays) {
      const a = find(all, mode, "direct", d);
      const b = find(all, mode, "miss", d);
      if (a && b) {
        rows.push([
          label,
          `miss − direct (b − a), backend ${d} ms`,
          f2(b.latency.median - a.latency.median),
          f2(b.latency.p99 - a.latency.p99),
        ]);
      }
    }
    const c = find(all, mode, "hit");
    const floor = find(all, mode, "floor");
    if (c && floor) {
      rows.push([
        label,
        "hit − floor (c − d)",
        f2(c.latency.median - floor.latency.median),
        f2(c.latency.p99 - floor.latency.p99),
      ]);
    }
  }
  return table(["load", "difference", "p50 ms", "p99 ms"], rows, ["left", "left"]);
}

export function goalLines(
  all: readonly Measured[],
  delays: readonly number[],
  heapPerRequest: number,
): string[] {
  const verdict = (ok: boolean) => (ok ? "met" : "NOT met");
  const lines: string[] = [];
  for (const d of delays) {
    const a = find(all, "rate", "direct", d);
    const b = find(all, "rate", "miss", d);
    if (!a || !b) continue;
    const p50 = b.latency.median - a.latency.median;
    const p99 = b.latency.p99 - a.latency.p99;
    const sa = find(all, "seq", "direct", d);
    const sb = find(all, "seq", "miss", d);
    const unloaded =
      sa && sb
        ? ` (one at a time: p50 ${f2(sb.latency.median - sa.latency.median)} ms, ` +
          `p99 ${f2(sb.latency.p99 - sa.latency.p99)} ms)`
        : "";
    const at = `at ${Math.round(a.rps)}/s, backend ${d} ms`;
    lines.push(`added latency p50 ≤ 1 ms (${at}): ${f2(p50)} ms — ${verdict(p50 <= 1)}${unloaded}`);
    lines.push(`added latency p99 ≤ 5 ms (${at}): ${f2(p99)} ms — ${verdict(p99 <= 5)}`);
    // How busy the gateway was: tails on a shared 2-core host grow with it (queueing behind other requests' CPU
    // and garbage collection). The throughput run's req/s is no capacity figure for a slow backend: 32
    // connections over a 50 ms backend cap it near 32 / 0.05 s whatever the gateway does.
    const busy = (b.serverCpuUs * b.rps) / 1e6;
    const cpuBound = find(all, "max", "miss", 0)?.rps;
    lines.push(
      `  note: at ${Math.round(b.rps)} misses/s the gateway was busy ${(busy * 100).toFixed(0)} % of one core ` +
        `(${int(b.serverCpuUs)} µs CPU per miss)` +
        (cpuBound === undefined
          ? ""
          : `; with the instant backend it answered at most ${int(cpuBound)} misses/s`),
    );
  }
  const hit = find(all, "max", "hit");
  const floor = find(all, "max", "floor");
  if (hit && floor) {
    const share = hit.rps / floor.rps;
    lines.push(
      `cache-hit throughput ≥ 50 % of the floor: ${int(hit.rps)} / ${int(floor.rps)} req/s = ` +
        `${(share * 100).toFixed(0)} % — ${verdict(share >= 0.5)}`,
    );
  }
  if (Number.isFinite(heapPerRequest)) {
    lines.push(
      `heap per in-flight request ≤ 1 MB: ${bytes(heapPerRequest)} — ${verdict(heapPerRequest <= 1024 * 1024)}` +
        " (seed 000 allowed 10 MB)",
    );
  }
  return lines;
}
