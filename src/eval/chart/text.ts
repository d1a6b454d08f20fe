import type { Stats } from "../run";
import type { Sweep } from "../sweep";
import { type Axis, shareAxis, shareLabel, tokensAxis, tokensLabel } from "./scale";

/**
 * The sweep as a terminal chart: answer kept (y) against mean tokens (x), one marker per policy, its budgets'
 * points joined by dots, and a legend. Monospace text only; the same sweep gives the same characters.
 */

/** One marker per policy, in the order the policies were given (letters beyond these). */
export const MARKERS = ["●", "■", "▲", "◆", "▼", "★", "○", "□", "△", "◇"] as const;
const JOIN = "·";

export function markerOf(i: number): string {
  return MARKERS[i] ?? String.fromCharCode(97 + ((i - MARKERS.length) % 26));
}

export interface TextChartOptions {
  /** Columns and rows of the plot area. */
  width?: number;
  height?: number;
  /** Which figures of a point: overall (default) or one category's. */
  stats?: (point: { overall: Stats; byCategory: Record<string, Stats> }) => Stats | undefined;
}

export function textChart(sweep: Sweep, opts: TextChartOptions = {}): string {
  const width = opts.width ?? 60;
  const height = opts.height ?? 16;
  const statsOf = opts.stats ?? ((p) => p.overall);
  const series = sweep.series.map((s, i) => ({
    label: s.label,
    marker: markerOf(i),
    points: s.points.flatMap((p) => {
      const st = statsOf(p);
      return st === undefined || st.answerKept === null ? [] : [{ x: st.tokensMean, y: st.answerKept }];
    }),
  }));
  const all = series.flatMap((s) => s.points);
  if (all.length === 0) return "(no answer to keep at any budget: nothing to chart)";
  const x = tokensAxis(Math.max(...all.map((p) => p.x)));
  const y = shareAxis(all.map((p) => p.y));
  const col = (v: number) => Math.round(((v - x.min) / (x.max - x.min)) * (width - 1));
  const row = (v: number) => Math.round(((y.max - v) / (y.max - y.min)) * (height - 1));

  const grid: string[][] = Array.from({ length: height }, () => Array<string>(width).fill(" "));
  const put = (r: number, c: number, ch: string, over: boolean) => {
    const line = grid[r];
    if (line === undefined || c < 0 || c >= width) return;
    if (over || line[c] === " ") line[c] = ch;
  };
  for (const s of series) {
    for (let i = 1; i < s.points.length; i++) {
      const a = s.points[i - 1];
      const b = s.points[i];
      if (a === undefined || b === undefined) continue;
      const [c0, r0, c1, r1] = [col(a.x), row(a.y), col(b.x), row(b.y)];
      const steps = Math.max(Math.abs(c1 - c0), Math.abs(r1 - r0));
      for (let k = 1; k < steps; k++) {
        put(Math.round(r0 + ((r1 - r0) * k) / steps), Math.round(c0 + ((c1 - c0) * k) / steps), JOIN, false);
      }
    }
  }
  for (const s of series) for (const p of s.points) put(row(p.y), col(p.x), s.marker, true);

  const yLabels = new Map(y.ticks.map((t) => [row(t), shareLabel(t)]));
  const labelWidth = Math.max(...[...yLabels.values()].map((l) => l.length));
  const lines = ["answer kept against mean tokens (one marker per policy; its budgets joined)"];
  grid.forEach((cells, r) => {
    const label = yLabels.get(r);
    lines.push(`${(label ?? "").padStart(labelWidth)} ${label === undefined ? "│" : "┤"}${cells.join("")}`);
  });
  lines.push(`${" ".repeat(labelWidth)} └${xAxisLine(x, col, width)}`);
  lines.push(`${" ".repeat(labelWidth)}  ${xLabels(x, col, width)}  mean tokens`);
  lines.push("", ...series.map((s) => `  ${s.marker} ${s.label}`));
  return lines.map((l) => l.trimEnd()).join("\n");
}

function xAxisLine(x: Axis, col: (v: number) => number, width: number): string {
  const cells = Array<string>(width).fill("─");
  for (const t of x.ticks) {
    const c = col(t);
    if (c >= 0 && c < width) cells[c] = "┬";
  }
  return cells.join("");
}

/** Tick labels under their ticks, centred, skipping one that would touch the previous. */
function xLabels(x: Axis, col: (v: number) => number, width: number): string {
  const cells = Array<string>(width + 8).fill(" ");
  let free = 0;
  for (const t of x.ticks) {
    const text = tokensLabel(t);
    const start = Math.max(0, col(t) - Math.floor(text.length / 2));
    if (start < free) continue;
    for (let i = 0; i < text.length; i++) cells[start + i] = text[i] ?? " ";
    free = start + text.length + 1;
  }
  return cells.join("").trimEnd();
}
