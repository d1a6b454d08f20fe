import type { Candidate } from "../pipeline/types";
import type { BackendName, Policy } from "../policy/schema";
import type { Extras } from "./openmemory/extras";

/** One search against a memory backend, already past eligibility. */
export interface SearchRequest {
  userId: string;
  query: string;
  /** topK × overfetch, before the backend's own cap. */
  limit: number;
  searchType: Policy["retrieval"]["searchType"];
  policy: Policy;
  /** Abort when the policy's backend timeout elapses or the client goes away. */
  signal: AbortSignal;
}

export interface CallOptions {
  signal: AbortSignal;
}

/** Progressive disclosure, layer 3 (docs/api.md#progressive-disclosure): some of one user's memories by id. */
export interface MemoryLookup {
  userId: string;
  /** At most `MAX_DETAIL_IDS`, without repeats. */
  ids: readonly string[];
  signal: AbortSignal;
}

/** Progressive disclosure, layer 2: the turns around one of the user's memories. */
export interface NeighbourRequest {
  userId: string;
  id: string;
  /** How many turns before and after the memory (each at most `MAX_TIMELINE_WINDOW`). */
  before: number;
  after: number;
  signal: AbortSignal;
}

/** A memory and the turns around it in its session (or time window), oldest first on both sides. */
export interface Neighbours {
  anchor: Candidate;
  before: Candidate[];
  after: Candidate[];
}

/**
 * A drop-in door's own search, in its wire terms (src/compat): the upstream call the SDK asked for, which the
 * backend makes instead of its policy-driven `search`. The retrieval core treats it like any search (cache,
 * single-flight, limits, cooldown, existence, resilience, spans, metrics); only the call and the rendering differ.
 */
export type NativeSearch =
  /** Zep `POST /graph/search` with the caller's body; `limit` replaced by the fetch size when `setLimit`. */
  | { kind: "zep.graph.search"; body: Record<string, unknown>; setLimit: boolean }
  /** Zep `GET /threads/{threadId}/context` with the caller's query parameters (`min_rating`, `template_id`, …). */
  | { kind: "zep.thread.context"; threadId: string; params: Record<string, string> }
  /** OpenMemory `POST /memory/query` with the caller's body (without seed 003's extras) and the extras. */
  | {
      kind: "openmemory.query";
      body: Record<string, unknown>;
      userId: string | undefined;
      extras: Extras;
    };

export interface NativeSearchRequest {
  native: NativeSearch;
  /** topK × overfetch (the door's topK), before the upstream's own cap. */
  limit: number;
  policy: Policy;
  signal: AbortSignal;
}

/** An original wire item of a candidate (same id), kept so a door can answer in its SDK's shape. */
export interface NativeSource {
  /** The answer's list it came from (`edges`, `matches`, …). */
  list: string;
  item: Record<string, unknown>;
}

export interface NativeAnswer {
  candidates: Candidate[];
  /** By candidate id. The core keeps (redacted) only those of the memories the policy kept. */
  sources: Record<string, NativeSource>;
  /** A text block answered besides the candidates (Zep's `context`): redaction and the token budget apply. */
  context?: string;
  /** The answer's other top-level fields, kept as they came (redacted when the policy redacts). */
  echo: Record<string, unknown>;
  /** Set when seed 003's extras could not be applied as asked (OpenMemory tag / as-of fallbacks). */
  notes?: string[];
}

/**
 * A memory backend. One instance per tenant (it holds that tenant's credentials).
 * Every method throws `BackendError` (never anything else) on failure.
 */
export interface Backend {
  readonly name: BackendName;
  /** Candidates with `score` normalized to [0,1], in the backend's ranking order. */
  search(req: SearchRequest): Promise<Candidate[]>;
  /** Whether the user has a memory collection. Backends without a user registry return true. */
  userExists(userId: string, opts: CallOptions): Promise<boolean>;
  /** A door's own search (see NativeSearch); absent when the backend has no such wire API. */
  searchNative?(req: NativeSearchRequest): Promise<NativeAnswer>;
  /**
   * The user's own memories among `ids`, in the order asked (score 1: nothing was searched). An id that is not
   * this user's, or unknown, is simply absent: a caller cannot tell another user's id from a made-up one.
   * Absent when the backend cannot look memories up by id (the core answers its UNAVAILABLE fallback).
   */
  getMemories?(req: MemoryLookup): Promise<Candidate[]>;
  /** The turns around one of the user's memories; undefined when the id is not this user's (or unknown). */
  neighbours?(req: NeighbourRequest): Promise<Neighbours | undefined>;
  /** Cheap reachability check (the CLI and tests; /readyz reads the circuit breakers instead). Throws BackendError when unreachable. */
  ping(opts: CallOptions): Promise<void>;
  close?(): Promise<void>;
}

export const BACKEND_ERROR_KINDS = ["unavailable", "not_found", "rate_limited", "invalid_query"] as const;
export type BackendErrorKind = (typeof BACKEND_ERROR_KINDS)[number];

export interface BackendErrorInit {
  kind: BackendErrorKind;
  backend: BackendName;
  message: string;
  status?: number;
  /** For rate_limited: how long the backend asked us to wait (from Retry-After / x-ratelimit-reset). */
  retryAfterMs?: number;
  /** The upstream's answer was over the read bound (../body.ts): counted apart (memgate_upstream_oversized_total). */
  oversized?: boolean;
  /** For invalid_query on a native search: the upstream's answer, which a door hands back to its SDK as it came. */
  response?: UpstreamResponse;
  cause?: unknown;
}

/** An upstream HTTP answer as it came (status, content type, body text). */
export interface UpstreamResponse {
  status: number;
  contentType: string | null;
  body: string;
}

/**
 * A backend failure, classified. timeout / network / 5xx → unavailable; 404 → not_found; 429 → rate_limited;
 * 400 → invalid_query. Messages never contain credentials, queries or memory contents.
 */
export class BackendError extends Error {
  readonly kind: BackendErrorKind;
  readonly backend: BackendName;
  readonly status?: number;
  readonly retryAfterMs?: number;
  readonly response?: UpstreamResponse;
  readonly oversized: boolean;
  readonly retryable: boolean;

  constructor(init: BackendErrorInit) {
    super(init.message, init.cause === undefined ? undefined : { cause: init.cause });
    this.name = "BackendError";
    this.kind = init.kind;
    this.backend = init.backend;
    this.status = init.status;
    this.retryAfterMs = init.retryAfterMs;
    if (init.response !== undefined) this.response = init.response;
    this.oversized = init.oversized === true;
    this.retryable = init.kind === "unavailable";
  }
}

/** Connection settings for one backend of one tenant (secrets already resolved from env vars). */
export interface BackendConfig {
  zep?: { apiKey: string; baseUrl: string };
  openmemory?: { baseUrl: string; apiKey?: string; userScoping: "user_id" | "api_key" };
  local?: { dataFile: string };
}
