/**
 * The answer of a retrieval (`memories`, `metadata`, `systemPrompt`, `trace`: docs/api.md#the-retrieval-response), as every door gets it
 * from the retrieval core and as the payload cache keeps it. Built from a pipeline result (the pure stages in
 * src/pipeline know nothing of it); `native` carries what a drop-in door needs to answer in its SDK's shape.
 */
import type { NativeSource } from "../backends/types";
import type { PipelineResult } from "../pipeline";
import type { Citations } from "../pipeline/citations";
import type { IndexLine } from "../pipeline/disclosure";
import type { Sufficiency } from "../pipeline/sufficiency";
import type { MemoryEntry, StageTrace } from "../pipeline/types";
import type { CompiledPolicy } from "../policy/compile";

export const CACHE_STATUSES = ["hit", "miss", "stale", "bypass"] as const;
export type CacheStatus = (typeof CACHE_STATUSES)[number];

export interface FallbackInfo {
  code: string;
  action: "skip" | "empty" | "cache";
  message: string;
}

/** `metadata` (docs/api.md#the-retrieval-response). */
export interface RetrievalMetadata {
  queryTime: number;
  totalResults: number;
  includedResults: number;
  totalTokens: number;
  appliedFilters: string[];
  config: { topK: number; clipSentences: number; maxTokens: number; searchType: string; minScore: number };
  policy: { name: string; version: number; hash: string };
  backend: string;
  cache: CacheStatus;
  fallback: FallbackInfo | null;
  /**
   * Policy `sufficiency`: does the kept context cover the question (src/pipeline/sufficiency.ts); `expanded`: the
   * answer is the expansion round's; `expansion`: what that round searched for, when it ran.
   */
  sufficiency?: Sufficiency & { expanded: boolean; expansion?: ExpansionReport };
  /**
   * Policy `ranking.reinforcement`: whether the reinforcement counts could be read for this answer (false: the
   * store was down, the signal was 0 for every memory).
   */
  reinforcement?: { available: boolean };
}

/**
 * The expansion round's search (policy `sufficiency.expand`, src/pipeline/expansion.ts): `with` what it searched
 * with (`more`: the question again; `missing`: its missing words), the `query` sent and the `limit` asked, how many
 * candidates it `added` to the first search's, and whether its answer was `kept` (as complete or more).
 */
export interface ExpansionReport {
  with: "more" | "missing";
  query: string;
  limit: number;
  added: number;
  kept: boolean;
}

/**
 * Layer 1 of progressive disclosure (`detail: "index"`, MCP `search_memory`): an index line per kept memory
 * instead of the memories; `systemPrompt` is the index block; `metadata.indexTokens` its tokens (the policy's
 * tokenizer), `metadata.totalTokens` still the full context's.
 */
export interface IndexPayload {
  index: IndexLine[];
  metadata: RetrievalMetadata & { indexTokens: number };
  systemPrompt: string;
}

export interface RetrievalPayload {
  memories: MemoryEntry[];
  /**
   * Policy `format.citations: on` only (then always, `{}` when nothing was kept): ref → where the memory came
   * from. Right after `memories`, so a stored payload's text says whether it has them (./payload-text.ts).
   */
  citations?: Citations;
  metadata: RetrievalMetadata;
  systemPrompt: string;
  trace?: StageTrace[];
  /** A drop-in door's search only (never sent on /v1/retrieve): what the door renders its answer from. */
  native?: NativeRendering;
}

/** The parts of an upstream's wire answer a door needs, redacted by the policy as the memories are. */
export interface NativeRendering {
  /** The original wire item of each kept memory, by memory id. */
  sources: Record<string, NativeSource>;
  /** A text block of the answer (Zep's `context`), redacted and fitted to the token budget. */
  context?: string;
  /** The answer's other top-level fields. */
  echo: Record<string, unknown>;
  notes?: string[];
}

export function configOf(compiled: CompiledPolicy): RetrievalMetadata["config"] {
  const { topK, clipSentences, maxTokens, searchType, minScore } = compiled.policy.retrieval;
  return { topK, clipSentences, maxTokens, searchType, minScore };
}

export interface PayloadExtras {
  backend: string;
  cache: CacheStatus;
  queryTimeMs: number;
  explain?: boolean;
  /** An expansion round ran (policy `sufficiency.expand`). */
  expanded?: boolean;
}

/** Assembles the payload (docs/api.md#the-retrieval-response) from a pipeline result. */
export function buildPayload(
  result: PipelineResult,
  compiled: CompiledPolicy,
  extras: PayloadExtras,
): RetrievalPayload {
  const payload: RetrievalPayload = {
    memories: result.memories,
    ...(result.citations === undefined ? {} : { citations: result.citations }),
    metadata: {
      queryTime: Math.round(extras.queryTimeMs * 100) / 100,
      totalResults: result.totalResults,
      includedResults: result.memories.length,
      totalTokens: result.totalTokens,
      appliedFilters: result.appliedFilters,
      config: configOf(compiled),
      policy: { name: compiled.policy.name, version: compiled.policy.version, hash: compiled.hash },
      backend: extras.backend,
      cache: extras.cache,
      fallback: null,
    },
    systemPrompt: result.systemPrompt,
  };
  if (result.sufficiency !== undefined)
    payload.metadata.sufficiency = { ...result.sufficiency, expanded: extras.expanded === true };
  if (result.reinforcement !== undefined) payload.metadata.reinforcement = result.reinforcement;
  if (extras.explain) payload.trace = result.trace;
  return payload;
}
