import { formatPath } from "../config/yaml";
import { type CompiledPolicy, compilePolicy } from "../policy/compile";
import { policySchema } from "../policy/schema";
import type { RecordedCandidates } from "./candidates";
import type { GoldenQuestion } from "./golden";
import {
  type EvaluateOptions,
  evaluatePolicy,
  type PolicyReport,
  type PolicyUnderTest,
  type RecordedSets,
  type Stats,
  type UnanswerableStats,
} from "./run";

/**
 * Quality against tokens (`memgate eval --budgets 300,450,800,1500`): every policy measured again at each token
 * budget — its `retrieval.maxTokens` replaced, everything else its own — on the same candidates. One series per
 * policy, one point per budget: what the chat keeps (answer kept, evidence recall) for what it pays (mean tokens).
 */

export interface SweepPoint {
  /** The `retrieval.maxTokens` the policy ran with. */
  budget: number;
  overall: Stats;
  byCategory: Record<string, Stats>;
  unanswerable: UnanswerableStats | null;
}

export interface SweepSeries {
  label: string;
  policy: PolicyReport["policy"];
  /** From the smallest budget. */
  points: SweepPoint[];
}

export interface Sweep {
  budgets: number[];
  series: SweepSeries[];
}

/** A policy at one budget, ready to run. */
export interface BudgetedPolicy {
  subject: PolicyUnderTest;
  budget: number;
  compiled: CompiledPolicy;
}

/** `300,450,800,1500` as numbers (a part that is not a number stays text, for the schema to name it). */
export function parseBudgetList(text: string): Array<number | string> {
  return text.split(",").map((part) => {
    const t = part.trim();
    return t !== "" && Number.isFinite(Number(t)) ? Number(t) : t;
  });
}

/**
 * `compiled` with `retrieval.maxTokens` = `budget`, validated as a policy file's field (100–3000, an integer), or
 * the problem as `retrieval.maxTokens: must be …`.
 */
export function withBudget(compiled: CompiledPolicy, budget: number | string): CompiledPolicy | string {
  const { policy } = compiled;
  const parsed = policySchema.safeParse({ ...policy, retrieval: { ...policy.retrieval, maxTokens: budget } });
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const path = issue
      ? formatPath(issue.path.filter((s): s is string | number => typeof s !== "symbol"))
      : "";
    return `${path ? `${path}: ` : ""}${issue?.message ?? "invalid"}`;
  }
  return compilePolicy(parsed.data);
}

/**
 * Every policy at every budget (policy by policy, budgets from the smallest, a budget given twice once), or the
 * first problem: `<policy>: retrieval.maxTokens: must be an integer from 100 to 3000 (got 50)`.
 */
export function budgetGrid(
  subjects: readonly PolicyUnderTest[],
  budgets: ReadonlyArray<number | string>,
): BudgetedPolicy[] | { problem: string } {
  // Smallest first, so each policy's line runs left to right; a part that is not a number is refused below.
  const unique = [...new Set(budgets)].sort((a, b) =>
    typeof a === "number" && typeof b === "number" ? a - b : 0,
  );
  const grid: BudgetedPolicy[] = [];
  for (const subject of subjects) {
    for (const budget of unique) {
      const compiled = withBudget(subject.compiled, budget);
      if (typeof compiled === "string") {
        return { problem: `${subject.label}: ${compiled} (got ${JSON.stringify(budget)})` };
      }
      grid.push({ subject, budget: compiled.policy.retrieval.maxTokens, compiled });
    }
  }
  return grid;
}

/** Runs the grid on the recorded candidates (`recorded[i]` belongs to `questions[i]`). */
export async function sweepPolicies(
  questions: readonly GoldenQuestion[],
  recorded: readonly RecordedCandidates[] | RecordedSets,
  grid: readonly BudgetedPolicy[],
  opts: EvaluateOptions = {},
): Promise<Sweep> {
  // By subject, not by label: two runs of one policy (the playground's A and B) are two series.
  const series = new Map<PolicyUnderTest, SweepSeries>();
  const budgets: number[] = [];
  for (const cell of grid) {
    const report = await evaluatePolicy(
      questions,
      recorded,
      { label: cell.subject.label, compiled: cell.compiled },
      opts,
    );
    if (!budgets.includes(cell.budget)) budgets.push(cell.budget);
    let line = series.get(cell.subject);
    if (line === undefined) {
      const { policy, hash } = cell.subject.compiled;
      line = {
        label: cell.subject.label,
        policy: { name: policy.name, version: policy.version, hash },
        points: [],
      };
      series.set(cell.subject, line);
    }
    line.points.push({
      budget: cell.budget,
      overall: report.overall,
      byCategory: report.byCategory,
      unanswerable: report.unanswerable,
    });
  }
  return { budgets, series: [...series.values()] };
}

/** The categories of a sweep, sorted. */
export function sweepCategories(sweep: Sweep): string[] {
  const all = new Set<string>();
  for (const s of sweep.series)
    for (const p of s.points) for (const c of Object.keys(p.byCategory)) all.add(c);
  return [...all].sort();
}
