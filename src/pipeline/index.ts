import type { CompiledPolicy } from "../policy/compile";
import type { ReinforcementCounts } from "../reinforcement/types";
import { answerSlot } from "./answer-slot";
import { boundWork, workBoundChars } from "./bound";
import { type Citations, cite } from "./citations";
import { analyzeQuery, type Intent, type QueryAnalysis } from "./query/analyze";
import { budgetStage, measureRelative, type RelativeMeasure, relativeForComplexity } from "./stages/budget";
import { clipStage } from "./stages/clip";
import { dedupStage } from "./stages/dedup";
import { formatSystemPrompt, promptOrder } from "./stages/format";
import { interleaveStage } from "./stages/interleave";
import { type RankContext, rankStage } from "./stages/rank";
import { redactRewritten, redactStage } from "./stages/redact";
import { screenStage } from "./stages/screen";
import { dynamicK, selectStage, similarityOf } from "./stages/select";
import { thresholdStage } from "./stages/threshold";
import { certify, type Sufficiency, withAnswerSlot } from "./sufficiency";
import { RequestIndex } from "./text/request-index";
import { parseTimestamp } from "./text/time";
import type { Candidate, MemoryEntry, StageResult, StageTrace, WorkItem } from "./types";

export interface PipelineInput {
  userId: string;
  /** The user's message: `clip.mode: relevant` keeps the sentences that best match it. */
  query: string;
  candidates: readonly Candidate[];
  /** Backend name reported in metadata and provenance. */
  backend: string;
  explain?: boolean;
  /**
   * The time of the chat turn, epoch milliseconds: relative time phrases in the query ("last month", "two weeks
   * ago") are resolved against it. The pipeline never reads the host clock; the caller passes its own.
   */
  turnTime?: number;
  /**
   * false: no refs whatever the policy's `format.citations` says — a drop-in door answers in its SDK's wire
   * format, which has no place for them, so its memories neither show refs nor pay their tokens.
   */
  citations?: false;
  /**
   * How often each candidate was kept before for this user (policy `ranking.reinforcement`), read by the caller
   * (src/reinforcement). Absent with the section enabled: no counts (offline runs), reported unavailable.
   */
  reinforcement?: ReinforcementCounts;
  /** The caller's own reading of the question (MCP `search_memory`'s `intent`): replaces the detected intent. */
  intent?: Intent;
  /** How many candidates were asked of the backend (the explain trace's `fetch` stage says so beside what came). */
  asked?: number;
  /**
   * The expansion round's run (src/pipeline/expansion.ts): what its second search was made with, the query it sent
   * and how many candidates it added after the first search's (the `fetch` stage's `expandedWith`, `searched`,
   * `added`).
   */
  expansion?: { with: string; query: string; added: number };
}

export interface PipelineResult {
  memories: MemoryEntry[];
  systemPrompt: string;
  totalResults: number;
  totalTokens: number;
  appliedFilters: string[];
  trace: StageTrace[];
  /** The query as the pipeline understood it (when a stage needed it: ranking, answer-aware clipping, sufficiency). */
  query?: QueryAnalysis;
  /** The sufficiency certificate (policy `sufficiency.enabled`). */
  sufficiency?: Sufficiency;
  /** Policy `format.citations: on`: ref → where the memory came from (src/pipeline/citations.ts). */
  citations?: Citations;
  /** Policy `ranking.reinforcement` enabled and ranking ran: whether the counts were available. */
  reinforcement?: { available: boolean };
}

/** A candidate as the stages take it. Built field by field: an object spread takes V8's slow path here. */
export function toWorkItem(c: Candidate): WorkItem {
  const timeMs = parseTimestamp(c.timestamp);
  const item: WorkItem = {
    id: c.id,
    content: c.content,
    score: c.score,
    timestamp: c.timestamp,
    sessionId: c.sessionId,
    type: c.type,
    timeMs: Number.isNaN(timeMs) ? 0 : timeMs,
    originalLength: c.content.length,
    wasRedacted: false,
  };
  if (c.messageId !== undefined) item.messageId = c.messageId;
  if (c.role !== undefined) item.role = c.role;
  if (c.backend !== undefined) item.backend = c.backend;
  if (c.sourceId !== undefined) item.sourceId = c.sourceId;
  if (c.replyTo !== undefined) item.replyTo = c.replyTo;
  if (c.origin !== undefined) item.origin = c.origin;
  if (c.backendScore !== undefined) item.backendScore = c.backendScore;
  if (c.validAt !== undefined) item.validAt = c.validAt;
  if (c.invalidAt !== undefined) item.invalidAt = c.invalidAt;
  return item;
}

/**
 * The dedup stage's trace as two entries: `deduplication` (duplicates removed) and `top_k` (the cut to the best
 * `topK`, with `budget.fill`'s reserve; `beyond_topK` / `beyond_maxMemories`). Trace only: the applied filter and
 * the span stay one step.
 */
function splitTopK(t: StageTrace | undefined): StageTrace[] {
  if (t === undefined) return [];
  const { topK, reserve, ...rest } = t.detail ?? {};
  if (topK === undefined) return [t];
  const duplicates = t.changes.filter((c) => c.reason.startsWith("duplicate_of:"));
  const unique = t.in - duplicates.length;
  return [
    { stage: t.stage, in: t.in, out: unique, changes: duplicates, detail: rest },
    {
      stage: "top_k",
      in: unique,
      out: t.out,
      changes: t.changes.filter((c) => !c.reason.startsWith("duplicate_of:")),
      detail: reserve === undefined ? { topK } : { topK, reserve },
    },
  ];
}

/** The explain trace's `fetch` entry: what came, what was asked, and what an expansion round searched for. */
function fetchDetail(input: PipelineInput, fetched: number): Record<string, string | number> {
  const detail: Record<string, string | number> =
    input.asked === undefined ? { fetched } : { asked: input.asked, fetched };
  const { expansion } = input;
  if (expansion !== undefined) {
    detail.expandedWith = expansion.with;
    detail.searched = expansion.query;
    detail.added = expansion.added;
  }
  return detail;
}

/**
 * Watches a pipeline run from outside (telemetry: one span event per stage, src/telemetry/tracing.ts). The
 * pipeline never reads a clock itself: the observer brings one. Observing changes nothing in the result.
 */
export interface PipelineObserver {
  /** A monotonic clock in milliseconds (e.g. `performance.now`). */
  now(): number;
  stage(trace: StageTrace, startedAt: number, endedAt: number): void;
}

/**
 * Stages 2–8 of the pipeline (docs/policy.md#the-pipeline), pure and deterministic: same policy + same candidates + same query ⇒
 * byte-identical memories and systemPrompt (no clock, no locale, ties broken by id).
 */
export function runPipeline(
  input: PipelineInput,
  compiled: CompiledPolicy,
  observer?: PipelineObserver,
): PipelineResult {
  const { policy, ctx } = compiled;
  const trace: StageTrace[] = [];
  const applied: string[] = [];
  // Each memory cut to what the budget could ever use before any stage walks it (./bound.ts).
  const workBound = workBoundChars(policy.retrieval.maxTokens);
  let items = input.candidates.map((c) => boundWork(toWorkItem(c), workBound));
  // The explain trace starts with what the backend returned (and what was asked of it): a stage of the trace
  // only — no applied filter, no span (docs/policy.md#the-explain-trace).
  const fetched = input.candidates.length;
  trace.push({
    stage: "fetch",
    in: fetched,
    out: fetched,
    changes: [],
    detail: fetchDetail(input, fetched),
  });
  /** `rewrites`: the stage may rewrite contents, which are then redacted again (`redactRewritten`). */
  const run = (filter: string, stage: () => StageResult, rewrites = false) => {
    const startedAt = observer?.now() ?? 0;
    const before = items;
    const result = stage();
    items = result.items;
    if (rewrites) result.trace.changes.push(...redactRewritten(before, items, ctx));
    trace.push(result.trace);
    applied.push(filter);
    observer?.stage(result.trace, startedAt, observer.now());
  };

  // One text index for the request: sentences, query-term counts, token counts and word sets computed once and
  // shared by rank, select, clip and the budget (text/request-index.ts).
  const index = new RequestIndex(input.query);
  // `budget.relative`: T counted once, on the candidates as the backend returned them (bounded, before any stage
  // changes them), with the request's counting tokenizer, so the budget does not count an unchanged memory again.
  // The expansion round's list starts with the first search's candidates: its first topK, and so T, are the same.
  const rel = policy.budget.relative;
  const ranking = policy.ranking.enabled;
  const detected =
    ranking ||
    policy.clip.answerAware ||
    policy.sufficiency.enabled ||
    policy.budget.stop !== undefined ||
    rel?.complexShare !== undefined
      ? analyzeQuery(input.query, input.turnTime)
      : undefined;
  const analysis =
    detected !== undefined && input.intent !== undefined ? { ...detected, intent: input.intent } : detected;
  // With `budget.relative.complexShare` the share follows the question's complexity.
  let relative: RelativeMeasure | undefined;
  if (rel !== undefined)
    relative = measureRelative(
      items,
      relativeForComplexity(rel, analysis?.complexity),
      policy.retrieval.maxTokens,
      index.tokenizer(ctx.tokenizer),
    );
  if (ctx.redactor.enabled) run("redaction", () => redactStage(items, policy, ctx));
  if (ctx.screener?.enabled === true) run("injection", () => screenStage(items, policy, ctx), true);
  run("score_threshold", () => thresholdStage(items, policy));
  run("deduplication", () => dedupStage(items, policy));
  // Without ranking the dedup stage also cuts to the best topK: its own entry in the trace (with ranking, the
  // select stage is the cut).
  if (!ranking) trace.push(...splitTopK(trace.pop()));
  let similarity: (a: string, b: string) => number = () => 0;
  let rankContext: RankContext | undefined;
  let reinforced: { available: boolean } | undefined;
  if (ranking && analysis !== undefined) {
    const r = policy.ranking.reinforcement;
    const counts = input.reinforcement ?? { counts: new Map<string, number>(), available: false };
    if (r?.enabled === true) reinforced = { available: counts.available };
    const reinforcement =
      r?.enabled === true
        ? { counts: counts.counts, available: counts.available, weight: r.weight, saturation: r.saturation }
        : undefined;
    run("rank", () => {
      const ranked = rankStage(items, analysis, policy.ranking.weights, reinforcement, index, {
        entitySpecificity: policy.ranking.entitySpecificity === true,
        signals: input.explain === true,
        ...(policy.ranking.neighbours === undefined ? {} : { neighbours: policy.ranking.neighbours }),
      });
      rankContext = ranked.context;
      if (input.explain === true) ranked.trace.ranking = ranked.ranking;
      return ranked;
    });
    const { dynamicK: dk, diversity } = policy.ranking;
    const k = dk.enabled ? Math.min(dynamicK(analysis, dk.min, dk.max), dk.max) : policy.retrieval.topK;
    const { fill, maxMemories } = policy.budget;
    run(diversity < 1 ? "diversity" : "select", () => {
      const selected = selectStage(
        items,
        rankContext?.relevance ?? new Map(),
        { lambda: diversity, k, reserveUpTo: fill ? Math.max(k, maxMemories) : k },
        index,
      );
      similarity = selected.similarity;
      return selected;
    });
  } else {
    run(`interleave:${policy.interleaving.strategy}`, () => interleaveStage(items, policy));
  }
  // The policy's tokenizer, remembering what it counted: a text clip counted is not counted again by the budget.
  const counting = { ...ctx, tokenizer: index.tokenizer(ctx.tokenizer) };
  const { mode } = policy.clip;
  if (mode !== "off") {
    run(
      mode === "leading" ? "clip" : `clip:${mode}`,
      () =>
        clipStage(items, policy, counting, input.query, analysis?.answerType, index, {
          terms: input.explain === true,
        }),
      true,
    );
  }
  let totalTokens = 0;
  const citations = policy.format.citations === "on" && input.citations !== false;
  // `budget.stop`: the certificate's completeness of what the budget has kept so far.
  const covered =
    policy.budget.stop !== undefined && analysis !== undefined
      ? (kept: readonly WorkItem[]) =>
          certify(kept, analysis, policy.sufficiency.threshold, () => 0, rankContext?.idf, undefined, index)
            .completeness
      : undefined;
  run("token_budget", () => {
    const result = budgetStage(items, policy, counting, {
      citations,
      covered,
      ...(relative === undefined ? {} : { relative }),
    });
    totalTokens = result.usedTokens;
    return result;
  });

  let sufficiency: Sufficiency | undefined;
  if (policy.sufficiency.enabled && analysis !== undefined) {
    // Without ranking there was no selection to measure similarity: the kept memories' own.
    const similar = rankContext === undefined ? similarityOf(items, index) : similarity;
    sufficiency = certify(
      items,
      analysis,
      policy.sufficiency.threshold,
      similar,
      rankContext?.idf,
      policy.sufficiency.insufficientBelow,
      index,
    );
    const slotOptions = policy.sufficiency.answerSlot;
    if (slotOptions !== undefined)
      sufficiency = withAnswerSlot(
        sufficiency,
        answerSlot(items, input.query, analysis, slotOptions, rankContext?.idf, index),
      );
  }

  const collection = `user:${input.userId}`;
  let memories = items.map((item) => toEntry(item, collection, policy.retrieval.searchType));
  const summariesFirst = policy.budget.sections !== undefined;
  let cited: Citations | undefined;
  if (citations) {
    ({ memories, citations: cited } = cite(memories, promptOrder(memories, summariesFirst), input.backend));
  }
  const systemPrompt = formatSystemPrompt(memories, {
    timeZone: policy.format.timeZone,
    envelope: policy.format.envelope,
    includedResults: memories.length,
    ...(summariesFirst ? { summariesFirst } : {}),
  });
  return {
    memories,
    ...(cited === undefined ? {} : { citations: cited }),
    systemPrompt,
    totalResults: input.candidates.length,
    totalTokens,
    appliedFilters: applied,
    trace,
    ...(analysis === undefined ? {} : { query: analysis }),
    ...(sufficiency === undefined ? {} : { sufficiency }),
    ...(reinforced === undefined ? {} : { reinforcement: reinforced }),
  };
}

export function toEntry(item: WorkItem, collection: string, searchType: string): MemoryEntry {
  const provenance: MemoryEntry["provenance"] = {
    collection,
    searchType,
    originalLength: item.arrivedLength ?? item.originalLength,
    wasRedacted: item.wasRedacted,
  };
  if (item.backend !== undefined) provenance.backend = item.backend;
  if (item.sourceId !== undefined) provenance.sourceId = item.sourceId;
  if (item.backendScore !== undefined) provenance.backendScore = item.backendScore;
  // Seed 000's field order: optional fields sit where the MemoryEntry interface declares them. Set one by one in
  // that order (the same object as a literal with conditional spreads, which made a small object per spread).
  const entry = {
    id: item.id,
    content: item.content,
    score: item.score,
    timestamp: item.timestamp,
    sessionId: item.sessionId,
  } as MemoryEntry;
  if (item.messageId !== undefined) entry.messageId = item.messageId;
  entry.type = item.type;
  if (item.role !== undefined) entry.role = item.role;
  if (item.flags !== undefined) entry.flags = item.flags;
  entry.provenance = provenance;
  return entry;
}
