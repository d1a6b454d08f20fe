import { textChart } from "./chart/text";
import {
  diffText,
  expansionTable,
  type GateResult,
  gatesText,
  groupTable,
  overallTable,
  pct,
  unanswerableTable,
} from "./report";
import type { PolicyReport, QuestionDiff } from "./run";
import type { Sweep } from "./sweep";
import { sweepText } from "./sweep-report";
import { versusOf, versusText } from "./versus";

/** Everything `memgate eval` prints as text (src/cli/eval.ts; `--json` prints the same as JSON). */
export interface EvalRun {
  questions: number;
  users: number;
  /** Where the candidates came from (`fetched from local …`, `recorded in …`). */
  source: string;
  failedFetches: number;
  reports: readonly PolicyReport[];
  sweep?: Sweep | undefined;
  /** The SVG file the sweep was written to. */
  chart?: string | undefined;
  diff?: { pair: [PolicyReport, PolicyReport]; diffs: QuestionDiff[]; limit: number } | undefined;
  gates: readonly GateResult[];
  /** The expansion round's second searches this run sent to a live backend (src/eval/searches.ts). */
  searches?: { count: number } | undefined;
}

/**
 * The report: overall figures, then by category (and language), the unanswerable questions, the sweep with its
 * terminal chart, the diff, the gates.
 */
export function evalText(run: EvalRun): string {
  const lines = [
    `memgate eval: ${run.questions} questions of ${run.users} user(s); candidates ${run.source}` +
      (run.failedFetches > 0 ? `; ${run.failedFetches} question(s) got a backend error (no candidates)` : ""),
    "",
    overallTable(run.reports),
    ...versusLines(run.reports),
    "",
    "answer kept, by category (questions)",
    groupTable(
      run.reports,
      (p) => p.byCategory,
      (s) => pct(s.answerKept),
    ),
    "",
    "evidence recall, by category (questions)",
    groupTable(
      run.reports,
      (p) => p.byCategory,
      (s) => pct(s.evidenceRecall),
    ),
    "",
    "tokens mean, by category (questions)",
    groupTable(
      run.reports,
      (p) => p.byCategory,
      (s) => s.tokensMean.toFixed(0),
    ),
  ];
  if (Object.keys(run.reports[0]?.byLang ?? {}).length > 1) {
    lines.push(
      "",
      "answer kept, by language (questions)",
      groupTable(
        run.reports,
        (p) => p.byLang,
        (s) => pct(s.answerKept),
      ),
    );
  }
  if (run.reports[0]?.unanswerable) {
    lines.push(
      "",
      `unanswerable questions (${run.reports[0].unanswerable.questions}): called insufficient by the pipeline, tokens spent`,
      unanswerableTable(run.reports),
    );
  }
  if (run.reports.some((r) => r.expansion !== null)) {
    const sent = run.searches;
    lines.push("", "expansion round (questions it ran on, kept, searched with)", expansionTable(run.reports));
    if (sent !== undefined && sent.count > 0)
      lines.push(
        `second searches sent to the backend with the missing words: ${sent.count} (one per question and query, shared by every policy and budget of the run)`,
      );
  }
  if (run.sweep) {
    lines.push("", sweepText(run.sweep), "", textChart(run.sweep));
    if (run.chart !== undefined) lines.push("", `chart written to ${run.chart}`);
  }
  if (run.diff) lines.push("", diffText(run.diff.pair[0], run.diff.pair[1], run.diff.diffs, run.diff.limit));
  if (run.gates.length > 0) lines.push("", gatesText(run.gates));
  return lines.join("\n");
}

/** The first policy against `top20-whole` in one line, when the run holds both (./versus.ts). */
function versusLines(reports: readonly PolicyReport[]): string[] {
  const versus = versusOf(reports);
  return versus === undefined ? [] : ["", versusText(versus)];
}
