import { pct } from "./report";
import type { PolicyReport } from "./run";

/**
 * The question an ops team asks of a run (issue 25's "done when"): does the first policy keep the answer more often
 * than the backend's own top 20, whole — in every category — and with what share of its tokens, overall and in each
 * category? `memgate eval` prints it whenever the run holds a policy named `top20-whole`
 * (eval/policies/top20-whole.yaml) besides another.
 */
export const VERSUS_BASELINE = "top20-whole";

/** Issue 25's line: at most this share of the baseline's mean tokens, in every category. */
export const VERSUS_TOKEN_SHARE = 0.6;

export interface VersusCategory {
  category: string;
  answerKept: number;
  baseline: number;
}

/** One category's mean tokens against the baseline's (every category both policies have, unanswerable too). */
export interface VersusTokens {
  category: string;
  tokensMean: number;
  baselineTokensMean: number;
  /** tokensMean / baselineTokensMean. */
  ratio: number;
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
  /** Mean tokens per category against the baseline's, in the report's order. */
  tokensByCategory: VersusTokens[];
  /** The categories where the policy spends more than `VERSUS_TOKEN_SHARE` of the baseline's mean tokens. */
  overTokens: string[];
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
  const ratioOf = (mine: number, theirs: number) => (theirs > 0 ? mine / theirs : Number.POSITIVE_INFINITY);
  const tokensByCategory: VersusTokens[] = [];
  for (const [category, stats] of Object.entries(policy.byCategory)) {
    const other = baseline.byCategory[category];
    if (other === undefined) continue;
    tokensByCategory.push({
      category,
      tokensMean: stats.tokensMean,
      baselineTokensMean: other.tokensMean,
      ratio: ratioOf(stats.tokensMean, other.tokensMean),
    });
  }
  const baseTokens = baseline.overall.tokensMean;
  return {
    policy: policy.label,
    baseline: baseline.label,
    tokensRatio: ratioOf(policy.overall.tokensMean, baseTokens),
    tokensMean: policy.overall.tokensMean,
    baselineTokensMean: baseTokens,
    answerKept: policy.overall.answerKept,
    baselineAnswerKept: baseline.overall.answerKept,
    categories,
    notAhead: categories.filter((c) => !(c.answerKept > c.baseline)).map((c) => c.category),
    tokensByCategory,
    overTokens: tokensByCategory.filter((t) => !(t.ratio <= VERSUS_TOKEN_SHARE)).map((t) => t.category),
  };
}

/**
 * One line: `default vs top20-whole: 58.7 % of its tokens (255 against 434 mean), at most 60 % in every category
 * (multi-hop 59.1, …); answer kept 62.1 % against 58.7 %, more often in every category (multi-hop 32.3 vs 31.3, …)`.
 */
export function versusText(v: Versus): string {
  const share = (x: number) => (x * 100).toFixed(1);
  const per = v.categories
    .map((c) => `${c.category} ${share(c.answerKept)} vs ${share(c.baseline)}`)
    .join(", ");
  const verdict =
    v.notAhead.length === 0 ? "more often in every category" : `not ahead in ${v.notAhead.join(", ")}`;
  const line = share(VERSUS_TOKEN_SHARE).replace(/\.0$/, "");
  const tokens =
    v.tokensByCategory.length === 0
      ? ""
      : `, ${v.overTokens.length === 0 ? `at most ${line} % in every category` : `over ${line} % in ${v.overTokens.join(", ")}`} ` +
        `(${v.tokensByCategory.map((t) => `${t.category} ${share(t.ratio)}`).join(", ")})`;
  return (
    `${v.policy} vs ${v.baseline}: ${pct(v.tokensRatio)} of its tokens ` +
    `(${v.tokensMean.toFixed(0)} against ${v.baselineTokensMean.toFixed(0)} mean)${tokens}; ` +
    `answer kept ${pct(v.answerKept)} against ${pct(v.baselineAnswerKept)}, ${verdict} (${per})`
  );
}
