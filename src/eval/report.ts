import type { ExpansionStats, PolicyReport, QuestionDiff, Stats, UnanswerableStats } from "./run";

/** A threshold given on the command line, checked against every policy. */
export interface Gate {
  metric: "answerKept" | "evidenceRecall" | "tokensMean";
  /** `min`: the figure must be at least `threshold`; `max`: at most. */
  kind: "min" | "max";
  threshold: number;
}

export interface GateResult {
  policy: string;
  metric: Gate["metric"];
  kind: Gate["kind"];
  threshold: number;
  value: number | null;
  ok: boolean;
}

export function checkGates(reports: readonly PolicyReport[], gates: readonly Gate[]): GateResult[] {
  const out: GateResult[] = [];
  for (const r of reports) {
    for (const g of gates) {
      const value = r.overall[g.metric];
      const ok = value !== null && (g.kind === "min" ? value >= g.threshold : value <= g.threshold);
      out.push({ policy: r.label, metric: g.metric, kind: g.kind, threshold: g.threshold, value, ok });
    }
  }
  return out;
}

/** A share as "12.3 %", or "—" when there is none. */
export const pct = (v: number | null): string => (v === null ? "—" : `${(v * 100).toFixed(1)} %`);
export const num = (v: number, digits = 0) =>
  v.toLocaleString("en-US", { minimumFractionDigits: digits, maximumFractionDigits: digits });

/** Columns padded to their widest cell; the first column left-aligned, the others right-aligned. */
export function table(header: readonly string[], rows: ReadonlyArray<readonly string[]>): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  const line = (cells: readonly string[]) =>
    cells
      .map((c, i) => (i === 0 ? c.padEnd(widths[i] ?? 0) : c.padStart(widths[i] ?? 0)))
      .join("  ")
      .trimEnd();
  return [line(header), line(widths.map((w) => "-".repeat(w))), ...rows.map(line)].join("\n");
}

export function overallTable(reports: readonly PolicyReport[]): string {
  const { header, rows } = overallRows(reports);
  return table(header, rows);
}

/** The overall figures of each policy as `overallTable`'s cells (the playground shows them as an HTML table). */
export function overallRows(reports: ReadonlyArray<Omit<PolicyReport, "outcomes">>): {
  header: string[];
  rows: string[][];
} {
  return {
    header: [
      "policy",
      "answer kept",
      "answer in candidates",
      "evidence recall",
      "tokens mean",
      "tokens p95",
      "budget used",
      "memories",
    ],
    rows: reports.map((r) => {
      const s = r.overall;
      return [
        r.label,
        pct(s.answerKept),
        pct(s.answerInCandidates),
        pct(s.evidenceRecall),
        num(s.tokensMean),
        num(s.tokensP95),
        pct(s.budgetUsed),
        num(s.memoriesMean, 1),
      ];
    }),
  };
}

/** One metric per group (category or language) and policy. */
export function groupTable(
  reports: readonly PolicyReport[],
  groupsOf: (r: PolicyReport) => Record<string, Stats>,
  metric: (s: Stats) => string,
): string {
  return groupRowsTable(
    reports.map((r) => ({ label: r.label, groups: groupsOf(r) })),
    metric,
  );
}

/** One metric per group (columns, sorted, with the first row's question counts) and labelled row. */
export function groupRowsTable(
  rows: ReadonlyArray<{ label: string; groups: Record<string, Stats> }>,
  metric: (s: Stats) => string,
): string {
  const groups = [...new Set(rows.flatMap((r) => Object.keys(r.groups)))].sort();
  const counts = rows[0]?.groups ?? {};
  return table(
    ["policy", ...groups.map((g) => `${g} (${counts[g]?.questions ?? 0})`)],
    rows.map((r) => [r.label, ...groups.map((g) => (r.groups[g] ? metric(r.groups[g] as Stats) : "—"))]),
  );
}

/**
 * The unanswerable questions per policy: how often the pipeline said so, how often it said so of an answerable
 * question (the false alarms), and what their context cost.
 */
export function unanswerableTable(
  rows: ReadonlyArray<{ label: string; unanswerable: UnanswerableStats | null }>,
): string {
  return table(
    ["policy", "called insufficient", "answerable called insufficient", "tokens mean"],
    rows.map((r) => [
      r.label,
      pct(r.unanswerable?.insufficient ?? null),
      pct(r.unanswerable?.answerableInsufficient ?? null),
      r.unanswerable === null ? "—" : num(r.unanswerable.tokensMean),
    ]),
  );
}

/**
 * The expansion round per policy (those whose round ran): how often it ran, with what, how often its answer was
 * kept, candidates it added; and the second searches the run sent to the backend with their mean time.
 */
export function expansionTable(
  rows: ReadonlyArray<{ label: string; expansion: ExpansionStats | null }>,
): string {
  return table(
    ["policy", "ran", "kept", "with more", "with missing", "candidates added"],
    rows
      .filter((r) => r.expansion !== null)
      .map((r) => {
        const e = r.expansion as ExpansionStats;
        return [
          r.label,
          `${e.ran} (${pct(e.ran / e.questions)})`,
          `${e.kept} (${pct(e.kept / e.questions)})`,
          String(e.more),
          String(e.missing),
          num(e.addedMean),
        ];
      }),
  );
}

function clipText(text: string, max: number): string {
  const flat = text.replace(/\s+/g, " ");
  return flat.length <= max ? flat : `${flat.slice(0, max - 1)}…`;
}

/** The side-by-side diff of two policies: what each kept of the evidence, question by question. */
export function diffText(
  a: PolicyReport,
  b: PolicyReport,
  diffs: readonly QuestionDiff[],
  limit: number,
): string {
  const answer = diffs.filter((d) => d.sides[0].answerKept !== d.sides[1].answerKept);
  const aWins = answer.filter((d) => d.sides[0].answerKept === true).length;
  const lines = [
    `${a.label} vs ${b.label}: ${diffs.length} question(s) differ — answer kept only by ${a.label}: ${aWins}, only by ${b.label}: ${answer.length - aWins}; evidence only: ${diffs.length - answer.length}` +
      (diffs.length > limit ? ` (the first ${limit} shown; --diff-limit for more, --json for all)` : ""),
  ];
  const width = Math.max(a.label.length, b.label.length);
  for (const d of diffs.slice(0, limit)) {
    lines.push("", `[${d.id} · ${d.category}] ${clipText(d.query, 110)}`);
    d.sides.forEach((side, i) => {
      const label = (i === 0 ? a.label : b.label).padEnd(width);
      const verdict = side.answerKept === null ? "" : side.answerKept ? "answer kept" : "answer lost";
      lines.push(
        `  ${label}  ${verdict}${verdict ? ", " : ""}evidence ${side.evidenceKept}/${side.evidenceTotal}`,
      );
      for (const e of side.evidence) {
        lines.push(
          `  ${" ".repeat(width)}    ${e.id}: ${e.content === null ? "(not kept)" : `"${clipText(e.content, 160)}"`}`,
        );
      }
    });
  }
  return lines.join("\n");
}

export function gatesText(results: readonly GateResult[]): string {
  const name: Record<Gate["metric"], string> = {
    answerKept: "answer kept",
    evidenceRecall: "evidence recall",
    tokensMean: "tokens mean",
  };
  const show = (metric: Gate["metric"], v: number | null) =>
    metric === "tokensMean" ? (v === null ? "—" : num(v)) : pct(v);
  return results
    .map(
      (g) =>
        `${g.ok ? "ok  " : "FAIL"} ${g.policy}: ${name[g.metric]} ${show(g.metric, g.value)} (required ${g.kind === "min" ? "≥" : "≤"} ${show(g.metric, g.threshold)})`,
    )
    .join("\n");
}
