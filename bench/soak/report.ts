import { bytes, int, percentile } from "../lib/stats";
import type { SoakResult } from "./run";

export interface Verdict {
  pass: boolean;
  reasons: string[];
  fiveXx: number;
  unanswered: number;
  heapGrowth: number;
}

export function verdict(r: SoakResult): Verdict {
  const fiveXx = [...r.stats.statuses].filter(([s]) => s >= 500).reduce((n, [, c]) => n + c, 0);
  const unanswered = [...r.stats.unanswered.values()].reduce((a, b) => a + b, 0);
  const heapGrowth = r.heap.end.heapUsed - r.heap.afterWarmup.heapUsed;
  const reasons: string[] = [];
  if (fiveXx > 0) reasons.push(`${fiveXx} answers were 5xx`);
  if (unanswered > 0) reasons.push(`${unanswered} requests got no answer`);
  if (heapGrowth > r.options.heapBoundBytes)
    reasons.push(`heap grew by ${bytes(heapGrowth)} (bound ${bytes(r.options.heapBoundBytes)})`);
  if (r.gatewayExit !== 0) reasons.push(`the gateway exited with ${r.gatewayExit} after SIGTERM`);
  return { pass: reasons.length === 0, reasons, fiveXx, unanswered, heapGrowth };
}

const counts = (m: Map<string | number, number>) =>
  [...m]
    .sort((a, b) => b[1] - a[1])
    .map(([k, v]) => `${k} ${int(v)}`)
    .join(" · ") || "—";

/** The human summary (the figures docs/benchmarks.md quotes). */
export function formatReport(r: SoakResult, v: Verdict): string {
  const s = r.stats;
  const sorted = Float64Array.from(s.latencies).sort();
  const ms = (q: number) => `${percentile(sorted, q).toFixed(1)} ms`;
  const faults =
    r.windows.length <= 6
      ? r.windows.map((w) => `${w.at.toFixed(0)}s ${w.kind} ${w.seconds}s`).join(", ")
      : [...new Set(r.windows.map((w) => w.kind))]
          .map((k) => `${k} ×${r.windows.filter((w) => w.kind === k).length}`)
          .join(", ");
  const { afterWarmup: a, end: e } = r.heap;
  return [
    `memgate soak: ${r.options.durationS} s at ${r.options.rate} req/s (open loop, loopback), ${r.elapsedS.toFixed(0)} s in all`,
    `faults      ${faults || "none (run too short)"}`,
    `requests    sent ${int(s.sent)} · answered ${int(s.answered)} · unanswered ${int(v.unanswered)}${v.unanswered ? ` (${counts(s.unanswered)})` : ""}`,
    `status      ${counts(s.statuses)} · 5xx ${int(v.fiveXx)}`,
    `fallbacks   ${counts(s.fallbacks)}`,
    `cache       ${counts(s.cache)}`,
    `latency     p50 ${ms(0.5)} · p90 ${ms(0.9)} · p99 ${ms(0.99)} · max ${ms(1)}`,
    `heap (GC'd) after warm-up ${bytes(a.heapUsed)} → end ${bytes(e.heapUsed)} (${v.heapGrowth >= 0 ? "+" : ""}${bytes(v.heapGrowth)}; bound +${bytes(r.options.heapBoundBytes)}) · rss ${bytes(a.rss)} → ${bytes(e.rss)}`,
    `shutdown    SIGTERM → exit ${r.gatewayExit}`,
    `verdict     ${v.pass ? "PASS" : `FAIL: ${v.reasons.join("; ")}`}`,
  ].join("\n");
}

/** One JSON line for machines (the jest short form reads it). */
export function jsonReport(r: SoakResult, v: Verdict): string {
  return JSON.stringify({
    pass: v.pass,
    reasons: v.reasons,
    sent: r.stats.sent,
    answered: r.stats.answered,
    unanswered: v.unanswered,
    fiveXx: v.fiveXx,
    statuses: Object.fromEntries(r.stats.statuses),
    fallbacks: Object.fromEntries(r.stats.fallbacks),
    cache: Object.fromEntries(r.stats.cache),
    faults: r.windows,
    heapAfterWarmup: r.heap.afterWarmup.heapUsed,
    heapEnd: r.heap.end.heapUsed,
    heapGrowth: v.heapGrowth,
    gatewayExit: r.gatewayExit,
  });
}
