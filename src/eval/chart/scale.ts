/**
 * Axes shared by the terminal chart and the SVG (./text.ts, ./svg.ts): round tick steps and bounds, so both draw
 * the same figures on the same grid. Pure arithmetic: the same sweep always gives the same axes.
 */

/** The smallest of 1, 2, 2.5 and 5 × 10^k that cuts `span` into at most `maxTicks` steps. */
export function niceStep(span: number, maxTicks: number): number {
  if (!(span > 0)) return 1;
  const rough = span / Math.max(1, maxTicks);
  const power = 10 ** Math.floor(Math.log10(rough));
  for (const m of [1, 2, 2.5, 5, 10]) if (m * power >= rough) return m * power;
  return 10 * power;
}

export interface Axis {
  min: number;
  max: number;
  step: number;
  ticks: number[];
}

/** An axis from 0 to a round number at or above `max` (mean tokens). */
export function tokensAxis(max: number, maxTicks = 5): Axis {
  const step = niceStep(Math.max(max, 1), maxTicks);
  const top = Math.max(step, Math.ceil(max / step) * step);
  return { min: 0, max: top, step, ticks: ticksOf(0, top, step) };
}

/**
 * A share axis up to 100 %, from a multiple of its step at or below the smallest value (at least a 10-point
 * span), so every tick falls inside it: 100 % is a multiple of every step `niceStep` picks below 1.
 */
export function shareAxis(values: readonly number[], maxTicks = 5): Axis {
  const low = values.length === 0 ? 0 : Math.min(...values);
  const rough = Math.max(0, Math.min(0.9, Math.floor(low * 10 + 1e-9) / 10));
  const step = niceStep(1 - rough, maxTicks);
  const floor = round(Math.floor(rough / step + 1e-9) * step);
  return { min: floor, max: 1, step, ticks: ticksOf(floor, 1, step) };
}

function ticksOf(min: number, max: number, step: number): number[] {
  const out: number[] = [];
  const n = Math.round((max - min) / step);
  for (let i = 0; i <= n; i++) out.push(round(min + i * step));
  return out;
}

/** Rounded to 6 decimals: no 0.30000000000000004 in a label. */
export const round = (v: number): number => Math.round(v * 1e6) / 1e6;

/** A share as a tick label: `90 %`, `92.5 %`. */
export const shareLabel = (v: number): string => `${round(v * 100)} %`;

/** A token count as a tick label: `1,500`. */
export const tokensLabel = (v: number): string => {
  const s = String(Math.round(v));
  return s.replace(/\B(?=(\d{3})+(?!\d))/g, ",");
};
