import { mapLimit } from "../concurrency";
import { type PipelineResult, runPipeline } from "../pipeline";
import { firstCandidates } from "../pipeline/candidate";
import { expansionPlan, foundByBackend, keepExpanded, mergeExpanded } from "../pipeline/expansion";
import type { Candidate } from "../pipeline/types";
import type { CompiledPolicy } from "../policy/compile";
import type { Policy } from "../policy/schema";
import type { RecordedCandidates } from "./candidates";
import { alternativesOf, answerText, type GoldenQuestion, normalizeForMatch, UNANSWERABLE } from "./golden";
import { ExpansionSearches, type SearchAgain } from "./searches";
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
  /** The expansion round, when it ran: what it searched with, candidates it added, whether its answer was kept. */
  expansion: { with: "more" | "missing"; added: number; kept: boolean } | null;
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
  /** The expansion round (policy `sufficiency.expand`): null when it never ran. */
  expansion: ExpansionStats | null;
  outcomes: QuestionOutcome[];
}

/** How often a policy's expansion round ran, with what, and how often its answer was kept. */
export interface ExpansionStats {
  questions: number;
  /** Questions whose round ran (a second search was answered). */
  ran: number;
  /** Of them, those whose second answer was kept (at least as complete). */
  kept: number;
  /** Of them, searched with the question again (`more`) or its missing words (`missing`). */
  more: number;
  missing: number;
  /** Candidates a round added to the first search's, mean. */
  addedMean: number;
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
  /** What the expansion round searched for, when it ran (as `metadata.sufficiency.expansion`). */
  expansion?: { with: "more" | "missing"; query: string; limit: number; added: number; kept: boolean };
}

/** How `memgate eval` shapes questions: the explain trace (scripts/eval-failures.ts), the expansion searches. */
export interface ShapeOptions {
  explain?: boolean;
  /**
   * The expansion round's second search with another query (./searches.ts); absent: answered from the recorded
   * line's `expansions` only.
   */
  search?: SearchAgain;
}

/**
 * Shapes `question` from its recorded candidates as the core would: the policy's first `take`, the turn's time,
 * then the core's expansion round (policy sufficiency.expand), decided by the same functions as the core
 * (../pipeline/expansion.ts). A second search for the question itself (`more`) is the recorded list's first
 * `limit`; one with another query (`missing`) comes from `opts.search` (./searches.ts). The eval has no deadline:
 * the round runs whenever the core would with time left. `explain`: the result carries its trace.
 */
export async function shapeQuestion(
  question: GoldenQuestion,
  recorded: RecordedCandidates,
  compiled: CompiledPolicy,
  take: number,
  opts: ShapeOptions = {},
): Promise<ShapedQuestion> {
  const { replies } = compiled.policy.retrieval;
  const usable = (list: readonly Candidate[]) => (replies ? list : list.filter((c) => c.origin !== "reply"));
  const available = usable(recorded.results);
  const turnTime = turnTimeOf(question, recorded);
  const shape = (candidates: readonly Candidate[], expansion?: ShapedQuestion["expansion"]) =>
    runPipeline(
      {
        userId: question.userId,
        query: question.query,
        candidates,
        backend: recorded.backend,
        ...(opts.explain === true ? { explain: true } : {}),
        ...(turnTime === undefined ? {} : { turnTime }),
        ...(expansion === undefined ? {} : { asked: expansion.limit, expansion }),
      },
      compiled,
    );
  let candidates = firstCandidates(available, take);
  let result = shape(candidates);
  const first = result.sufficiency;
  const plan = expansionPlan(compiled.policy, first, question.query, take, foundByBackend(candidates));
  if (plan === undefined || first === undefined) return { candidates, result, turnTime, expanded: false };
  const again =
    plan.query === question.query
      ? firstCandidates(available, plan.limit)
      : await (opts.search ?? new ExpansionSearches().search)(recorded, plan.query, plan.limit);
  if (again === undefined) return { candidates, result, turnTime, expanded: false };
  const merged = mergeExpanded(candidates, usable(again));
  const report = {
    with: plan.with,
    query: plan.query,
    limit: plan.limit,
    added: merged.length - candidates.length,
  };
  if (report.added === 0)
    return { candidates, result, turnTime, expanded: true, expansion: { ...report, kept: false } };
  const second = shape(merged, { ...report, kept: true });
  const kept = keepExpanded(first, second.sufficiency);
  if (kept) {
    candidates = merged;
    result = second;
  }
  return { candidates, result, turnTime, expanded: true, expansion: { ...report, kept } };
}

async function evaluateQuestion(
  question: GoldenQuestion,
  recorded: RecordedCandidates,
  subject: PolicyUnderTest,
  take: number,
  search: SearchAgain | undefined,
): Promise<QuestionOutcome> {
  const { candidates, result, turnTime, expansion } = await shapeQuestion(
    question,
    recorded,
    subject.compiled,
    take,
    search === undefined ? {} : { search },
  );
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
    expansion:
      expansion === undefined ? null : { with: expansion.with, added: expansion.added, kept: expansion.kept },
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
 * question (`replies:end`, `replies:anywhere`; policy `retrieval.replies`, `retrieval.questionAt`), and with the
 * turns following the first hits (`+following:<top>x<turns>`, policy `retrieval.following`). Two policies of one
 * mode get the same candidates from a backend; two modes may not (a backend that adds replies also moves the ones
 * it found lower up to their question, and `anywhere` finds more questions than `end`).
 */
export function fetchModeOf(policy: Policy): string {
  const { replies, questionAt, following } = policy.retrieval;
  const base = replies === true ? `replies:${questionAt ?? "end"}` : "plain";
  return following === undefined ? base : `${base}+following:${following.top}x${following.turns}`;
}

/** The candidates of a run whose policies fetch in more than one way: one list per mode (`fetchModeOf`). */
export interface RecordedSets {
  byMode: ReadonlyMap<string, readonly RecordedCandidates[]>;
}

function isSets(r: readonly RecordedCandidates[] | RecordedSets): r is RecordedSets {
  return !Array.isArray(r);
}

/** What `evaluatePolicy` is told besides the questions: progress, and the expansion searches (./searches.ts). */
export interface EvaluateOptions {
  onQuestion?: () => void;
  search?: SearchAgain;
}

/**
 * One policy over the whole golden set. `recorded[i]` belongs to `questions[i]`. Questions are shaped four at a
 * time (only an expansion round's live search waits); outcomes in golden-set order.
 */
export async function evaluatePolicy(
  questions: readonly GoldenQuestion[],
  recorded: readonly RecordedCandidates[] | RecordedSets,
  subject: PolicyUnderTest,
  opts: EvaluateOptions = {},
): Promise<PolicyReport> {
  const { policy, hash } = subject.compiled;
  const take = policy.retrieval.topK * policy.retrieval.overfetch;
  const lines = isSets(recorded) ? recorded.byMode.get(fetchModeOf(policy)) : recorded;
  if (lines === undefined)
    throw new Error(`no candidates fetched for ${fetchModeOf(policy)} (${subject.label})`);
  const outcomes = await mapLimit(questions, 4, async (q, i) => {
    const r = lines[i];
    if (r === undefined) throw new Error(`no candidates for question ${q.id}`);
    const outcome = await evaluateQuestion(q, r, subject, take, opts.search);
    opts.onQuestion?.();
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
    expansion: expansionOf(outcomes),
    outcomes,
  };
}

/** How often the expansion round ran and was kept; null when it never ran. */
export function expansionOf(outcomes: readonly QuestionOutcome[]): ExpansionStats | null {
  const ran = outcomes.filter((o) => o.expansion !== null);
  if (ran.length === 0) return null;
  const count = (w: "more" | "missing") => ran.filter((o) => o.expansion?.with === w).length;
  return {
    questions: outcomes.length,
    ran: ran.length,
    kept: ran.filter((o) => o.expansion?.kept === true).length,
    more: count("more"),
    missing: count("missing"),
    addedMean: ran.reduce((sum, o) => sum + (o.expansion?.added ?? 0), 0) / ran.length,
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
