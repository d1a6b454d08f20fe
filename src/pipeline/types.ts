import type { InjectionAction, InjectionDetectorName } from "../policy/schema";

/**
 * Types shared by every stage of the retrieval pipeline (docs/api.md#the-retrieval-response, docs/policy.md#the-pipeline).
 * The pipeline is pure: no I/O, no clock except the one the caller passes in.
 */

export const MEMORY_TYPES = ["message", "fact", "summary"] as const;
export type MemoryType = (typeof MEMORY_TYPES)[number];

export const ROLES = ["user", "assistant", "system", "tool", "function"] as const;
export type Role = (typeof ROLES)[number];

/** A memory as a backend adapter returns it, score already calibrated to [0,1] (docs/policy.md#fetch). */
export interface Candidate {
  id: string;
  content: string;
  /**
   * Calibrated relevance in [0,1], higher is better, on the one scale every backend and reranker shares
   * (docs/policy.md#fetch): what `minScore` and ranking read.
   */
  score: number;
  /** ISO 8601 timestamp. */
  timestamp: string;
  sessionId: string;
  messageId?: string;
  type: MemoryType;
  role?: Role;
  /** Where the candidate came from (adapters fill these). */
  backend?: string;
  sourceId?: string;
  /**
   * This candidate is the turn right after candidate `replyTo` in its session, which asked a question: added by a
   * backend that knows the order (the local store, Zep's thread messages) so the answer to "what did you name the puppy?" comes along.
   */
  replyTo?: string;
  /**
   * `reply`: the backend added this turn because it follows a question it found (`replyTo`), not because the search
   * matched it; it comes on top of the fetch size.
   */
  origin?: "reply";
  /**
   * The backend's own number for this memory, as it sent it (Zep's reranker `score`, OpenMemory's z-score, the
   * local index's raw BM25+ score): not on the common scale, never compared across backends; kept for
   * provenance (`provenance.backendScore`) and debugging. Absent when the backend sent none.
   */
  backendScore?: number;
  /**
   * A fact's validity in the world, ISO 8601 UTC (Zep edges: `valid_at`, and `invalid_at` else `expired_at`): since
   * when it holds and when it stopped holding. Read by the rank stage's time signal (docs/policy.md#ranking); a
   * memory without them is judged by its `timestamp` alone.
   */
  validAt?: string;
  invalidAt?: string;
}

/** A candidate on its way through the stages. */
export interface WorkItem extends Candidate {
  /** Epoch milliseconds parsed from `timestamp` once (NaN-free: invalid timestamps are rejected before). */
  timeMs: number;
  /** Length (UTF-16 code units) of the content before clipping; set by the clip stage. */
  originalLength: number;
  /** Length of the content as it arrived, when the work bound cut it (../pipeline/bound.ts): the reported length. */
  arrivedLength?: number;
  wasRedacted: boolean;
  /**
   * A candidate beyond `topK` kept by dedup for `budget.fill`: the budget takes it only after every topK
   * memory, while it fits and fewer than `budget.maxMemories` are kept. Never interleaved.
   */
  reserve?: boolean;
  /** What the injection screen found in a memory it kept (`injection:<detector>`), in detector order. */
  flags?: string[];
}

export interface Provenance {
  collection: string;
  searchType: string;
  originalLength: number;
  wasRedacted: boolean;
  backend?: string;
  sourceId?: string;
  /** The backend's own score (`Candidate.backendScore`); last, so existing outputs keep their field order. */
  backendScore?: number;
}

/** The shape of one memory in the response (seed 000's MemoryEntry). */
export interface MemoryEntry {
  id: string;
  content: string;
  score: number;
  timestamp: string;
  sessionId: string;
  messageId?: string;
  type: MemoryType;
  role?: Role;
  /**
   * Set only when something was found: `injection:<detector>` for each injection detector that fired on this
   * memory (policy `injection`, action `flag` or `neutralize`).
   */
  flags?: string[];
  provenance: Provenance;
  /**
   * Policy `format.citations: on`: the memory's short ref (`m1`, `m2`, … in prompt order), the key of its entry in
   * the payload's `citations` (src/pipeline/citations.ts). Last, so outputs without it keep their field order.
   */
  ref?: string;
}

/** Reasons a stage gives for dropping or changing a candidate (docs/policy.md#the-explain-trace). */
export type TraceReason =
  | "below_min_score"
  | `duplicate_of:${string}`
  | "beyond_topK"
  | "beyond_maxMemories"
  | "clipped"
  | "truncated_by_budget"
  | "dropped_by_budget"
  /** `budget.stop`: left out because the memories already kept cover the question. */
  | "not_needed"
  | `redacted:${string}`
  /** `injection:<detector>:<action>`: an injection detector fired and its action (flag, neutralize, drop) applied. */
  | `injection:${string}`;

/** Why the clip stage kept a sentence (explain). */
export interface KeptSentence {
  /**
   * Which sentence of the memory: in the explain trace 1-based (the first sentence is 1), as the API and the
   * playground show it; `selectSentences` (stages/clip.ts) works on 0-based indexes and the clip stage converts.
   */
  sentence: number;
  /**
   * `match`: among the best matches for the query (`score`, `terms`); `context`: next to a kept match, filling
   * a slot no other sentence matched; `leading`: seed 000's first sentences (mode `leading`, or no sentence
   * matched the query).
   */
  why: "match" | "context" | "leading";
  /** BM25 score against the query (0 when nothing matched). */
  score: number;
  /** The query terms (as scored: lower-cased, stemmed) the sentence contains. */
  terms?: string[];
  /**
   * `clip.answerNeighbour`: what holding an answer (the kind asked for, or a name, number or title the question
   * does not say) added to `score`.
   */
  answer?: number;
}

export interface TraceChange {
  id: string;
  reason: TraceReason;
  /** With `clipped`: how many sentences the memory had and which were kept, and why. */
  sentences?: { total: number; kept: KeptSentence[] };
}

export type StageName =
  /** Explain only: what the backend returned (detail `fetched`, and `asked` when the caller said). */
  | "fetch"
  | "redaction"
  | "injection"
  | "score_threshold"
  | "deduplication"
  /** Explain only: the cut to the best topK after dedup (without ranking; with ranking `select` cuts). */
  | "top_k"
  | "interleave"
  | "rank"
  | "select"
  | "clip"
  | "token_budget"
  | "format";

export interface StageTrace {
  stage: StageName;
  in: number;
  out: number;
  changes: TraceChange[];
  /** Free-form facts a stage wants to show (e.g. tokens used). Values are plain JSON. */
  detail?: Record<string, string | number | boolean>;
  /** The rank stage (explain): each memory's relevance, rank and signals, best first. */
  ranking?: Array<{ id: string; rank: number; relevance: number; signals: Record<string, number> }>;
}

/** What each stage returns. */
export interface StageResult {
  items: WorkItem[];
  trace: StageTrace;
}

/** Counts tokens of a text under one encoding. Implementations are created once at boot and reused. */
export interface Tokenizer {
  readonly name: "o200k_base" | "cl100k_base" | "approx";
  count(text: string): number;
}

export interface RedactionResult {
  text: string;
  /** Names of the detectors (or custom pattern names) that matched, in first-match order, without repeats. */
  fired: string[];
}

/** A compiled redaction configuration. Stateless and safe to share between requests. */
export interface Redactor {
  readonly enabled: boolean;
  redact(text: string): RedactionResult;
}

/** One injection detector that fired on a text, and what its policy action is. */
export interface ScreenHit {
  detector: InjectionDetectorName;
  action: InjectionAction;
}

export interface ScreenResult {
  /** Detectors that fired, in detector order, each once. Never the matched text. */
  hits: ScreenHit[];
  /** The text with every `neutralize` match replaced by the marker (the input when none fired). */
  text: string;
  /** A detector whose action is `drop` fired. */
  drop: boolean;
}

/** A compiled `injection` policy section. Stateless and safe to share between requests. */
export interface Screener {
  readonly enabled: boolean;
  screen(text: string): ScreenResult;
}

/** Everything a stage may use besides the policy. Built once per policy, never per request. */
export interface StageContext {
  redactor: Redactor;
  /** The injection screen (policy `injection`); absent or disabled: the stage does not run. */
  screener?: Screener;
  tokenizer: Tokenizer;
}
