import { groupRowsTable, num, pct, table, unanswerableTable } from "./report";
import type { Stats } from "./run";
import type { Sweep } from "./sweep";

/** The overall figures per policy × budget as table cells (the CLI prints them, the playground shows them). */
export function sweepRows(sweep: Sweep): { header: string[]; rows: string[][] } {
  return {
    header: ["policy @ budget", "answer kept", "evidence recall", "tokens mean", "tokens p95", "budget used"],
    rows: sweep.series.flatMap((s) =>
      s.points.map(({ budget, overall: o }) => [
        `${s.label} @ ${budget}`,
        pct(o.answerKept),
        pct(o.evidenceRecall),
        num(o.tokensMean),
        num(o.tokensP95),
        pct(o.budgetUsed),
      ]),
    ),
  };
}

/**
 * The sweep as `memgate eval --budgets` prints it: per policy × budget the overall figures, then answer kept,
 * evidence recall and mean tokens per category (one row per policy at each budget, `default @ 800`).
 */
export function sweepText(sweep: Sweep): string {
  const rows = sweep.series.flatMap((s) =>
    s.points.map((p) => ({ label: `${s.label} @ ${p.budget}`, point: p })),
  );
  const overall = sweepRows(sweep);
  const groups = rows.map((r) => ({ label: r.label, groups: r.point.byCategory }));
  const byCategory = (title: string, metric: (s: Stats) => string) => [
    "",
    `${title}, by category (questions)`,
    groupRowsTable(groups, metric),
  ];
  const lines = [
    `quality against tokens: every policy at retrieval.maxTokens ${sweep.budgets.join(", ")} (everything else its own)`,
    table(overall.header, overall.rows),
    ...byCategory("answer kept", (s) => pct(s.answerKept)),
    ...byCategory("evidence recall", (s) => pct(s.evidenceRecall)),
    ...byCategory("tokens mean", (s) => s.tokensMean.toFixed(0)),
  ];
  const first = rows[0]?.point.unanswerable;
  if (first !== undefined && first !== null) {
    lines.push(
      "",
      `unanswerable questions (${first.questions}), by budget`,
      unanswerableTable(rows.map((r) => ({ label: r.label, unanswerable: r.point.unanswerable }))),
    );
  }
  return lines.join("\n");
}
