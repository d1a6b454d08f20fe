import { UNANSWERABLE } from "../golden";
import type { Stats } from "../run";
import { type Sweep, type SweepPoint, sweepCategories } from "../sweep";
import { type Axis, round, shareAxis, shareLabel, tokensAxis, tokensLabel } from "./scale";

/**
 * The sweep as an SVG file (`memgate eval --chart`, the playground's eval): one panel for all questions and one
 * per category; in each, x = mean tokens, y = share of questions; per policy one colour, answer kept as a solid
 * line with filled points labelled by their budget, evidence recall as a dashed line with open points. The
 * unanswerable category has nothing to keep: its panel plots the share the pipeline called `insufficient`
 * against the tokens spent on them, or, without verdicts, lists those tokens per policy and budget.
 *
 * Hand-written, no dependency: presentation attributes only (no script, no style element, no external reference),
 * so it shows the same in a file viewer, an <img> and a strict CSP page. Deterministic bytes: numbers are
 * rounded to one decimal and written without locale, the order is the sweep's, nothing reads a clock.
 */

/** Okabe–Ito's colour-blind-safe palette (yellow left out: too light on white), then greys. */
export const COLOURS = [
  "#0072B2",
  "#D55E00",
  "#009E73",
  "#CC79A7",
  "#E69F00",
  "#56B4E9",
  "#000000",
  "#999999",
];

const PANEL = { width: 380, height: 280, left: 52, right: 18, top: 40, bottom: 42 } as const;
const COLUMNS = 3;
const MARGIN = 16;
const HEADER = 56;

export const colourOf = (i: number): string => COLOURS[i % COLOURS.length] ?? "#000000";

const esc = (s: string): string =>
  s
    .replace(/&/g, "&amp;")
    .replace(/</g, "&lt;")
    .replace(/>/g, "&gt;")
    .replace(/"/g, "&quot;")
    .replace(/'/g, "&#39;");

/** One decimal, no trailing `.0`, no locale. */
const n = (v: number): string => String(Math.round(v * 10) / 10);

/** What one point of a panel shows: x, the solid line's share, the dashed line's share. */
interface Figures {
  x: number;
  solid: number | null;
  dashed: number | null;
}

interface Panel {
  title: string;
  figuresOf: (p: SweepPoint) => Figures | undefined;
  /** Said in the panel when no point has a share to plot. */
  empty: string;
}

const keptAndRecall = (s: Stats | undefined): Figures | undefined =>
  s === undefined ? undefined : { x: s.tokensMean, solid: s.answerKept, dashed: s.evidenceRecall };

export interface SvgChartOptions {
  /** The first line of the header (default: "memgate eval — quality against tokens"). */
  title?: string;
}

export function svgChart(sweep: Sweep, opts: SvgChartOptions = {}): string {
  const first = sweep.series[0]?.points[0];
  const panels: Panel[] = [
    {
      title: `all questions (${first?.overall.questions ?? 0})`,
      figuresOf: (p) => keptAndRecall(p.overall),
      empty: "no answer or evidence to keep",
    },
    ...sweepCategories(sweep).map(
      (c): Panel =>
        c === UNANSWERABLE
          ? {
              // Nothing to keep: how often the pipeline said so (solid), against the tokens spent on them.
              title: `${c} (${first?.byCategory[c]?.questions ?? 0}): called insufficient`,
              figuresOf: (p) =>
                p.unanswerable === null
                  ? undefined
                  : { x: p.unanswerable.tokensMean, solid: p.unanswerable.insufficient, dashed: null },
              empty: "no sufficiency verdict from the pipeline",
            }
          : {
              title: `${c} (${first?.byCategory[c]?.questions ?? 0})`,
              figuresOf: (p) => keptAndRecall(p.byCategory[c]),
              empty: "no answer or evidence to keep",
            },
    ),
  ];
  const columns = Math.min(COLUMNS, panels.length);
  const rows = Math.ceil(panels.length / columns);
  const legendRows = Math.ceil(sweep.series.length / 4);
  const header = HEADER + legendRows * 18;
  const width = MARGIN * 2 + columns * PANEL.width;
  const height = header + rows * PANEL.height + MARGIN;

  const out: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="system-ui, -apple-system, 'Segoe UI', Helvetica, Arial, sans-serif" font-size="11" role="img">`,
    `<title>${esc(opts.title ?? "memgate eval — quality against tokens")}</title>`,
    `<rect width="${width}" height="${height}" fill="#ffffff"/>`,
    `<text x="${MARGIN}" y="24" font-size="15" font-weight="600" fill="#111111">${esc(opts.title ?? "memgate eval — quality against tokens")}</text>`,
    `<text x="${MARGIN}" y="42" fill="#444444">x: mean tokens of context · y: share of questions · solid, filled: answer kept (labelled by budget) · dashed, open: evidence recall · budgets ${esc(sweep.budgets.join(", "))}</text>`,
  ];
  sweep.series.forEach((s, i) => {
    const x = MARGIN + (i % 4) * 240;
    const y = HEADER + 6 + Math.floor(i / 4) * 18;
    const c = colourOf(i);
    out.push(
      `<g><line x1="${x}" y1="${y}" x2="${x + 22}" y2="${y}" stroke="${c}" stroke-width="2"/><circle cx="${x + 11}" cy="${y}" r="3.5" fill="${c}"/><text x="${x + 28}" y="${y + 4}" fill="#111111">${esc(s.label)}</text></g>`,
    );
  });
  panels.forEach((panel, i) => {
    const x = MARGIN + (i % columns) * PANEL.width;
    const y = header + Math.floor(i / columns) * PANEL.height;
    out.push(...panelSvg(sweep, panel, x, y));
  });
  out.push("</svg>");
  return `${out.join("\n")}\n`;
}

function panelSvg(sweep: Sweep, panel: Panel, x0: number, y0: number): string[] {
  const plot = {
    x: x0 + PANEL.left,
    y: y0 + PANEL.top,
    w: PANEL.width - PANEL.left - PANEL.right,
    h: PANEL.height - PANEL.top - PANEL.bottom,
  };
  const series = sweep.series.map((s) =>
    s.points.flatMap((p) => {
      const f = panel.figuresOf(p);
      return f === undefined ? [] : [{ budget: p.budget, f }];
    }),
  );
  const figures = series.flat().map((p) => p.f);
  const shares = figures.flatMap((f) => [f.solid, f.dashed]).filter((v): v is number => v !== null);
  const out = [
    `<g>`,
    `<text x="${x0 + PANEL.left}" y="${y0 + 18}" font-size="12" font-weight="600" fill="#111111">${esc(panel.title)}</text>`,
  ];
  if (shares.length === 0) {
    out.push(
      `<rect x="${plot.x}" y="${plot.y}" width="${plot.w}" height="${plot.h}" fill="#fafafa" stroke="#dddddd"/>`,
      `<text x="${plot.x + plot.w / 2}" y="${plot.y + 24}" text-anchor="middle" fill="#666666">${esc(panel.empty)}</text>`,
    );
    // What was still spent on them: mean tokens per policy, budget by budget.
    if (figures.length > 0) {
      out.push(
        `<text x="${plot.x + 12}" y="${plot.y + 52}" fill="#444444">mean tokens at budgets ${esc(sweep.budgets.join(" / "))}:</text>`,
      );
      series.forEach((pts, i) => {
        const label = sweep.series[i]?.label ?? "";
        out.push(
          `<text x="${plot.x + 12}" y="${plot.y + 70 + i * 16}" fill="${colourOf(i)}">${esc(label)}: ${pts.map((p) => Math.round(p.f.x)).join(" / ")}</text>`,
        );
      });
    }
    out.push("</g>");
    return out;
  }
  const xa = tokensAxis(Math.max(...figures.map((f) => f.x)), 4);
  const ya = shareAxis(shares, 5);
  const px = (v: number) => round(plot.x + ((v - xa.min) / (xa.max - xa.min)) * plot.w);
  const py = (v: number) => round(plot.y + ((ya.max - v) / (ya.max - ya.min)) * plot.h);
  out.push(...axesSvg(plot, xa, ya, px, py));
  sweep.series.forEach((_s, i) => {
    const c = colourOf(i);
    const pts = series[i] ?? [];
    const line = (which: "solid" | "dashed") =>
      pts.flatMap((p) => {
        const v = p.f[which];
        return v === null ? [] : [{ x: px(p.f.x), y: py(v), budget: p.budget }];
      });
    const evidence = line("dashed");
    const answer = line("solid");
    if (evidence.length > 1) {
      out.push(
        `<polyline points="${evidence.map((p) => `${n(p.x)},${n(p.y)}`).join(" ")}" fill="none" stroke="${c}" stroke-width="1.5" stroke-dasharray="5 3"/>`,
      );
    }
    for (const p of evidence) {
      out.push(
        `<circle cx="${n(p.x)}" cy="${n(p.y)}" r="3" fill="#ffffff" stroke="${c}" stroke-width="1.5"/>`,
      );
    }
    if (answer.length > 1) {
      out.push(
        `<polyline points="${answer.map((p) => `${n(p.x)},${n(p.y)}`).join(" ")}" fill="none" stroke="${c}" stroke-width="2"/>`,
      );
    }
    for (const p of samePlace(answer)) {
      out.push(
        `<circle cx="${n(p.x)}" cy="${n(p.y)}" r="3.5" fill="${c}"/>`,
        `<text x="${n(p.x + 5)}" y="${n(p.y - 5)}" font-size="9" fill="${c}">${p.budgets.join("/")}</text>`,
      );
    }
  });
  out.push("</g>");
  return out;
}

/**
 * Points drawn at (nearly) the same place — budgets the policy does not fill — as one, labelled with all their
 * budgets (`800/1500`), so labels never print over each other.
 */
function samePlace(points: ReadonlyArray<{ x: number; y: number; budget: number }>) {
  const out: Array<{ x: number; y: number; budgets: number[] }> = [];
  for (const p of points) {
    const at = out.find((o) => Math.abs(o.x - p.x) < 8 && Math.abs(o.y - p.y) < 4);
    if (at === undefined) out.push({ x: p.x, y: p.y, budgets: [p.budget] });
    else at.budgets.push(p.budget);
  }
  return out;
}

function axesSvg(
  plot: { x: number; y: number; w: number; h: number },
  xa: Axis,
  ya: Axis,
  px: (v: number) => number,
  py: (v: number) => number,
): string[] {
  const out: string[] = [];
  for (const t of ya.ticks) {
    const y = n(py(t));
    out.push(
      `<line x1="${plot.x}" y1="${y}" x2="${plot.x + plot.w}" y2="${y}" stroke="#e5e5e5"/>`,
      `<text x="${plot.x - 6}" y="${n(py(t) + 4)}" text-anchor="end" fill="#444444">${shareLabel(t)}</text>`,
    );
  }
  for (const t of xa.ticks) {
    const x = n(px(t));
    out.push(
      `<line x1="${x}" y1="${plot.y}" x2="${x}" y2="${plot.y + plot.h}" stroke="#f0f0f0"/>`,
      `<text x="${x}" y="${plot.y + plot.h + 14}" text-anchor="middle" fill="#444444">${tokensLabel(t)}</text>`,
    );
  }
  out.push(
    `<line x1="${plot.x}" y1="${plot.y + plot.h}" x2="${plot.x + plot.w}" y2="${plot.y + plot.h}" stroke="#888888"/>`,
    `<line x1="${plot.x}" y1="${plot.y}" x2="${plot.x}" y2="${plot.y + plot.h}" stroke="#888888"/>`,
    `<text x="${plot.x + plot.w / 2}" y="${plot.y + plot.h + 30}" text-anchor="middle" fill="#666666">mean tokens</text>`,
  );
  return out;
}
