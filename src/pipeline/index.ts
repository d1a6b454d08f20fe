import type { CompiledPolicy } from "../policy/compile";
import { budgetStage } from "./stages/budget";
import { clipStage } from "./stages/clip";
import { dedupStage } from "./stages/dedup";
import { formatSystemPrompt } from "./stages/format";
import { interleaveStage } from "./stages/interleave";
import { redactRewritten, redactStage } from "./stages/redact";
import { screenStage } from "./stages/screen";
import { thresholdStage } from "./stages/threshold";
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
}

export interface PipelineResult {
  memories: MemoryEntry[];
  systemPrompt: string;
  totalResults: number;
  totalTokens: number;
  appliedFilters: string[];
  trace: StageTrace[];
  /**
   * Whether the kept memories can answer the query, when the policy checks it (set by the sufficiency check;
   * absent otherwise). `memgate eval` counts how often unanswerable questions are called `insufficient`.
   */
  sufficiency?: { verdict: "sufficient" | "partial" | "insufficient" };
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
  return item;
}

/**
 * Watches a pipeline run from outside (telemetry: one span per stage). The pipeline never reads a clock itself:
 * the observer brings one. Observing changes nothing in the result.
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
  let items = input.candidates.map(toWorkItem);
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

  if (ctx.redactor.enabled) run("redaction", () => redactStage(items, policy, ctx));
  if (ctx.screener?.enabled === true) run("injection", () => screenStage(items, policy, ctx), true);
  run("score_threshold", () => thresholdStage(items, policy));
  run("deduplication", () => dedupStage(items, policy));
  run(`interleave:${policy.interleaving.strategy}`, () => interleaveStage(items, policy));
  const { mode } = policy.clip;
  if (mode !== "off") {
    run(mode === "leading" ? "clip" : `clip:${mode}`, () => clipStage(items, policy, ctx, input.query), true);
  }
  let totalTokens = 0;
  run("token_budget", () => {
    const result = budgetStage(items, policy, ctx);
    totalTokens = result.usedTokens;
    return result;
  });

  const collection = `user:${input.userId}`;
  const memories = items.map((item) => toEntry(item, collection, policy.retrieval.searchType));
  const systemPrompt = formatSystemPrompt(memories, {
    timeZone: policy.format.timeZone,
    envelope: policy.format.envelope,
    includedResults: memories.length,
  });
  return {
    memories,
    systemPrompt,
    totalResults: input.candidates.length,
    totalTokens,
    appliedFilters: applied,
    trace,
  };
}

function toEntry(item: WorkItem, collection: string, searchType: string): MemoryEntry {
  const provenance: MemoryEntry["provenance"] = {
    collection,
    searchType,
    originalLength: item.originalLength,
    wasRedacted: item.wasRedacted,
  };
  if (item.backend !== undefined) provenance.backend = item.backend;
  if (item.sourceId !== undefined) provenance.sourceId = item.sourceId;
  // Seed 000's field order: optional fields sit where the MemoryEntry interface declares them.
  return {
    id: item.id,
    content: item.content,
    score: item.score,
    timestamp: item.timestamp,
    sessionId: item.sessionId,
    ...(item.messageId === undefined ? {} : { messageId: item.messageId }),
    type: item.type,
    ...(item.role === undefined ? {} : { role: item.role }),
    ...(item.flags === undefined ? {} : { flags: item.flags }),
    provenance,
  };
}
