import { pct } from "./report";
import type { PolicyReport } from "./run";

/**
 * The question an ops team asks of a run (issue 25's "done when"): does the first policy keep the answer more often
 * than the backend's own top 20, whole — in every category — and with what share of its tokens? `memgate eval`
 * prints it whenever the run holds a policy named `top20-whole` (eval/policies/top20-whole.yaml) besides another.
 */
export const VERSUS_BASELINE = "top20-whole";

export interface VersusCategory {
  category: string;
  answerKept: number;
  baseline: number;
}

export interface Versus {
  policy: string;
  baseline: string;
  /** The policy's mean tokens over the baseline's (all questions). */
  tokensRatio: number;
  tokensMean: number;
  baselineTokensMean: number;
  answerKept: number | null;
  baselineAnswerKept: number | null;
  /** Every category with answers to keep, in the report's order. */
  categories: VersusCategory[];
  /** The categories where the policy keeps the answer less often than, or as often as, the baseline. */
  notAhead: string[];
}

/** The first policy of the run against `top20-whole`; undefined when the run lacks either. */
export function versusOf(reports: readonly PolicyReport[]): Versus | undefined {
  const baseline = reports.find((r) => r.policy.name === VERSUS_BASELINE);
  const policy = reports.find((r) => r !== baseline);
  if (baseline === undefined || policy === undefined) return undefined;
  const categories: VersusCategory[] = [];
  for (const [category, stats] of Object.entries(policy.byCategory)) {
    const other = baseline.byCategory[category];
    if (stats.answerKept === null || other === undefined || other.answerKept === null) continue;
    categories.push({ category, answerKept: stats.answerKept, baseline: other.answerKept });
  }
  const baseTokens = baseline.overall.tokensMean;
  return {
    policy: policy.label,
    baseline: baseline.label,
    tokensRatio: baseTokens > 0 ? policy.overall.tokensMean / baseTokens : Number.POSITIVE_INFINITY,
    tokensMean: policy.overall.tokensMean,
    baselineTokensMean: baseTokens,
    answerKept: policy.overall.answerKept,
    baselineAnswerKept: baseline.overall.answerKept,
    categories,
    notAhead: categories.filter((c) => !(c.answerKept > c.baseline)).map((c) => c.category),
  };
}

/** One line: `default vs top20-whole: 58.4 % of its tokens (243 against 416); answer kept … ; per category …`. */
export function versusText(v: Versus): string {
  const share = (x: number) => (x * 100).toFixed(1);
  const per = v.categories
    .map((c) => `${c.category} ${share(c.answerKept)} vs ${share(c.baseline)}`)
    .join(", ");
  const verdict =
    v.notAhead.length === 0 ? "more often in every category" : `not ahead in ${v.notAhead.join(", ")}`;
  return (
    `${v.policy} vs ${v.baseline}: ${pct(v.tokensRatio)} of its tokens ` +
    `(${v.tokensMean.toFixed(0)} against ${v.baselineTokensMean.toFixed(0)} mean); ` +
    `answer kept ${pct(v.answerKept)} against ${pct(v.baselineAnswerKept)}, ${verdict} (${per})`
  );
}
