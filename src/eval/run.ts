import { type PipelineResult, runPipeline } from "../pipeline";
import { firstCandidates } from "../pipeline/candidate";
import { expansionLimit, foundByBackend, keepExpanded, mergeExpanded } from "../pipeline/expansion";
import type { Candidate } from "../pipeline/types";
import type { CompiledPolicy } from "../policy/compile";
import type { Policy } from "../policy/schema";
import type { RecordedCandidates } from "./candidates";
import { alternativesOf, answerText, type GoldenQuestion, normalizeForMatch, UNANSWERABLE } from "./golden";
import { turnTimeOf } from "./turn-time";

/**
 * The measurement behind `memgate eval`: every golden-set question's recorded candidates through one policy's
 * pipeline (exactly what /v1/retrieve runs, stages 2–8), then what the shaped context still holds.
 *
 * - evidence recall: the share of a question's `expectedIds` among the kept memories, averaged;
 * - answer kept: the share of questions whose every `answers` piece (one of its alternatives) still stands in
 *   one kept memory's content (see `normalizeForMatch`);
 * - answer in candidates: the same test on what the backend returned, before any shaping — the ceiling;
 * - tokens: `metadata.totalTokens` (the policy's tokenizer), mean and 95th percentile (nearest rank);
 * - budget used: tokens / `maxTokens`, averaged;
 * - unanswerable questions (category `unanswerable`: nothing in memory answers them): no answer or evidence to
 *   keep, so they count in neither ratio; the report gives the share the pipeline's sufficiency check called
 *   `insufficient` (— when the pipeline gives no verdict) and the tokens spent on them.
 *
 * Each question runs at its own turn time (`turnTimeOf`): relative phrases resolve as in that chat turn, never
 * against the host clock.
 */

export interface PolicyUnderTest {
  /** How the report names it: the policy's name, or `name (file)` when two files share a name. */
  label: string;
  compiled: CompiledPolicy;
}

/** What one policy kept for one question. */
export interface QuestionOutcome {
  id: string;
  category: string;
  lang: string;
  /** null: the question has no answers to look for. */
  answerKept: boolean | null;
  answerInCandidates: boolean | null;
  evidenceKept: number;
  evidenceTotal: number;
  tokens: number;
  memories: number;
  /** The turn time the pipeline ran at (ISO 8601 UTC; see `turnTimeOf`), null when there was none to take. */
  turnTime: string | null;
  /** The pipeline's sufficiency verdict, null when it gave none. */
  sufficiency: Verdict | null;
  /** The evidence memories as the policy left them (content null: not kept). */
  evidence: Array<{ id: string; content: string | null }>;
}

export interface Stats {
  questions: number;
  /** Ratios in [0,1]; null when no question of the group has answers (or expected ids). */
  answerKept: number | null;
  answerInCandidates: number | null;
  evidenceRecall: number | null;
  tokensMean: number;
  tokensP95: number;
  budgetUsed: number;
  memoriesMean: number;
}

export type Verdict = NonNullable<PipelineResult["sufficiency"]>["verdict"];

/** What a policy did with the questions nothing in memory answers. */
export interface UnanswerableStats {
  questions: number;
  /** Share of them the pipeline called `insufficient`; null when it gave no verdict on any. */
  insufficient: number | null;
  /**
   * The false alarms: the share of the answerable questions (every other category) the pipeline called
   * `insufficient`; null when it gave no verdict on any.
   */
  answerableInsufficient: number | null;
  /** Tokens of context sent for them, mean. */
  tokensMean: number;
}

export interface PolicyReport {
  label: string;
  policy: { name: string; version: number; hash: string };
  maxTokens: number;
  /** Candidates the policy takes from each recorded list (`topK × overfetch`). */
  candidatesPerQuestion: number;
  overall: Stats;
  byCategory: Record<string, Stats>;
  byLang: Record<string, Stats>;
  /** Null when the golden set has no unanswerable question. */
  unanswerable: UnanswerableStats | null;
  outcomes: QuestionOutcome[];
}

/** Whether every answer piece stands in one of `contents` (already normalized). */
function holdsAnswer(question: GoldenQuestion, contents: readonly string[]): boolean | null {
  if (question.answers.length === 0) return null;
  return question.answers.every((piece) =>
    alternativesOf(piece).some((alt) => {
      const a = normalizeForMatch(alt);
      return contents.some((c) => c.includes(a));
    }),
  );
}

/** One question shaped by a policy as `memgate eval` shapes it: the candidates it took, its result. */
export interface ShapedQuestion {
  /** The candidates of the result (the expansion round's merged list when its result was kept). */
  candidates: Candidate[];
  result: PipelineResult;
  turnTime: number | undefined;
  /** Whether an expansion round ran (whether or not its result was kept). */
  expanded: boolean;
}

/**
 * Shapes `question` from its recorded candidates as the core would: the policy's first `take`, the turn's time,
 * then the core's expansion round (policy sufficiency.expand), decided by the same functions as the core
 * (../pipeline/expansion.ts): the second search's candidates are the recorded list's first `limit`. `explain`: the
 * result carries its trace (scripts/eval-failures.ts).
 */
export function shapeQuestion(
  question: GoldenQuestion,
  recorded: RecordedCandidates,
  compiled: CompiledPolicy,
  take: number,
  opts: { explain?: boolean } = {},
): ShapedQuestion {
  const { replies } = compiled.policy.retrieval;
  const available = replies ? recorded.results : recorded.results.filter((c) => c.origin !== "reply");
  const turnTime = turnTimeOf(question, recorded);
  const shape = (candidates: readonly Candidate[]) =>
    runPipeline(
      {
        userId: question.userId,
        query: question.query,
        candidates,
        backend: recorded.backend,
        ...(opts.explain === true ? { explain: true } : {}),
        ...(turnTime === undefined ? {} : { turnTime }),
      },
      compiled,
    );
  let candidates = firstCandidates(available, take);
  let result = shape(candidates);
  let expanded = false;
  const limit = expansionLimit(compiled.policy, result.sufficiency, take, foundByBackend(candidates));
  if (limit !== undefined && result.sufficiency !== undefined) {
    const merged = mergeExpanded(candidates, firstCandidates(available, limit));
    if (merged.length > candidates.length) {
      const again = shape(merged);
      expanded = true;
      if (keepExpanded(result.sufficiency, again.sufficiency)) {
        candidates = merged;
        result = again;
      }
    }
  }
  return { candidates, result, turnTime, expanded };
}

function evaluateQuestion(
  question: GoldenQuestion,
  recorded: RecordedCandidates,
  subject: PolicyUnderTest,
  take: number,
): QuestionOutcome {
  const { candidates, result, turnTime } = shapeQuestion(question, recorded, subject.compiled, take);
  const kept = new Map(result.memories.map((m) => [m.id, m.content]));
  return {
    id: question.id,
    category: question.category,
    lang: question.lang ?? "-",
    answerKept: holdsAnswer(
      question,
      result.memories.map((m) => answerText(m.content, m.timestamp)),
    ),
    answerInCandidates: holdsAnswer(
      question,
      candidates.map((c) => answerText(c.content, c.timestamp)),
    ),
    evidenceKept: question.expectedIds.filter((id) => kept.has(id)).length,
    evidenceTotal: question.expectedIds.length,
    tokens: result.totalTokens,
    memories: result.memories.length,
    turnTime: turnTime === undefined ? null : new Date(turnTime).toISOString(),
    sufficiency: result.sufficiency?.verdict ?? null,
    evidence: question.expectedIds.map((id) => ({ id, content: kept.get(id) ?? null })),
  };
}

function ratio(values: ReadonlyArray<boolean | null>): number | null {
  const known = values.filter((v): v is boolean => v !== null);
  return known.length === 0 ? null : known.filter(Boolean).length / known.length;
}

/** The 95th percentile by nearest rank (the smallest value with at least 95 % of the values at or below it). */
export function p95(values: readonly number[]): number {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.ceil(0.95 * sorted.length) - 1] ?? 0;
}

export function summarize(outcomes: readonly QuestionOutcome[], maxTokens: number): Stats {
  const n = outcomes.length;
  const mean = (f: (o: QuestionOutcome) => number) =>
    n === 0 ? 0 : outcomes.reduce((sum, o) => sum + f(o), 0) / n;
  const withEvidence = outcomes.filter((o) => o.evidenceTotal > 0);
  return {
    questions: n,
    answerKept: ratio(outcomes.map((o) => o.answerKept)),
    answerInCandidates: ratio(outcomes.map((o) => o.answerInCandidates)),
    evidenceRecall:
      withEvidence.length === 0
        ? null
        : withEvidence.reduce((sum, o) => sum + o.evidenceKept / o.evidenceTotal, 0) / withEvidence.length,
    tokensMean: mean((o) => o.tokens),
    tokensP95: p95(outcomes.map((o) => o.tokens)),
    budgetUsed: mean((o) => o.tokens / maxTokens),
    memoriesMean: mean((o) => o.memories),
  };
}

export function unanswerableOf(outcomes: readonly QuestionOutcome[]): UnanswerableStats | null {
  const mine = outcomes.filter((o) => o.category === UNANSWERABLE);
  if (mine.length === 0) return null;
  const calledInsufficient = (list: readonly QuestionOutcome[]) => {
    const judged = list.filter((o) => o.sufficiency !== null);
    return judged.length === 0
      ? null
      : judged.filter((o) => o.sufficiency === "insufficient").length / judged.length;
  };
  return {
    questions: mine.length,
    insufficient: calledInsufficient(mine),
    answerableInsufficient: calledInsufficient(outcomes.filter((o) => o.category !== UNANSWERABLE)),
    tokensMean: mine.reduce((sum, o) => sum + o.tokens, 0) / mine.length,
  };
}

export function groupBy(
  outcomes: readonly QuestionOutcome[],
  key: (o: QuestionOutcome) => string,
  maxTokens: number,
): Record<string, Stats> {
  const groups = new Map<string, QuestionOutcome[]>();
  for (const o of outcomes) {
    const k = key(o);
    const list = groups.get(k);
    if (list === undefined) groups.set(k, [o]);
    else list.push(o);
  }
  const out: Record<string, Stats> = {};
  for (const k of [...groups.keys()].sort()) out[k] = summarize(groups.get(k) ?? [], maxTokens);
  return out;
}

/**
 * How a policy's candidates are fetched: without reply turns (`plain`), or with them and by which turns ask a
 * question (`replies:end`, `replies:anywhere`; policy `retrieval.replies`, `retrieval.questionAt`). Two policies of
 * one mode get the same candidates from a backend; two modes may not (a backend that adds replies also moves the
 * ones it found lower up to their question, and `anywhere` finds more questions than `end`).
 */
export function fetchModeOf(policy: Policy): string {
  const { replies, questionAt } = policy.retrieval;
  return replies === true ? `replies:${questionAt ?? "end"}` : "plain";
}

/** The candidates of a run whose policies fetch in more than one way: one list per mode (`fetchModeOf`). */
export interface RecordedSets {
  byMode: ReadonlyMap<string, readonly RecordedCandidates[]>;
}

function isSets(r: readonly RecordedCandidates[] | RecordedSets): r is RecordedSets {
  return !Array.isArray(r);
}

/** One policy over the whole golden set. `recorded[i]` belongs to `questions[i]`. */
export function evaluatePolicy(
  questions: readonly GoldenQuestion[],
  recorded: readonly RecordedCandidates[] | RecordedSets,
  subject: PolicyUnderTest,
  onQuestion?: () => void,
): PolicyReport {
  const { policy, hash } = subject.compiled;
  const take = policy.retrieval.topK * policy.retrieval.overfetch;
  const lines = isSets(recorded) ? recorded.byMode.get(fetchModeOf(policy)) : recorded;
  if (lines === undefined)
    throw new Error(`no candidates fetched for ${fetchModeOf(policy)} (${subject.label})`);
  const outcomes = questions.map((q, i) => {
    const r = lines[i];
    if (r === undefined) throw new Error(`no candidates for question ${q.id}`);
    const outcome = evaluateQuestion(q, r, subject, take);
    onQuestion?.();
    return outcome;
  });
  const { maxTokens } = policy.retrieval;
  return {
    label: subject.label,
    policy: { name: policy.name, version: policy.version, hash },
    maxTokens,
    candidatesPerQuestion: take,
    overall: summarize(outcomes, maxTokens),
    byCategory: groupBy(outcomes, (o) => o.category, maxTokens),
    byLang: groupBy(outcomes, (o) => o.lang, maxTokens),
    unanswerable: unanswerableOf(outcomes),
    outcomes,
  };
}

/** A question on which two policies differ in what the chat can answer. */
export interface QuestionDiff {
  id: string;
  query: string;
  category: string;
  sides: [QuestionOutcome, QuestionOutcome];
}

/** Questions where `a` and `b` differ in answer kept, then (among the rest) in evidence kept; golden-set order. */
export function diffPolicies(
  questions: readonly GoldenQuestion[],
  a: PolicyReport,
  b: PolicyReport,
): QuestionDiff[] {
  const answer: QuestionDiff[] = [];
  const evidence: QuestionDiff[] = [];
  questions.forEach((q, i) => {
    const x = a.outcomes[i];
    const y = b.outcomes[i];
    if (x === undefined || y === undefined) return;
    const entry: QuestionDiff = { id: q.id, query: q.query, category: q.category, sides: [x, y] };
    if (x.answerKept !== y.answerKept) answer.push(entry);
    else if (x.evidenceKept !== y.evidenceKept) evidence.push(entry);
  });
  return [...answer, ...evidence];
}
