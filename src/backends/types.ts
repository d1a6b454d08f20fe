import type { Candidate } from "../pipeline/types";
import type { BackendName, Policy } from "../policy/schema";

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
  /** Cheap reachability check for /readyz. Throws BackendError when unreachable. */
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
  cause?: unknown;
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
  readonly retryable: boolean;

  constructor(init: BackendErrorInit) {
    super(init.message, init.cause === undefined ? undefined : { cause: init.cause });
    this.name = "BackendError";
    this.kind = init.kind;
    this.backend = init.backend;
    this.status = init.status;
    this.retryAfterMs = init.retryAfterMs;
    this.retryable = init.kind === "unavailable";
  }
}

/** Connection settings for one backend of one tenant (secrets already resolved from env vars). */
export interface BackendConfig {
  zep?: { apiKey: string; baseUrl: string };
  openmemory?: { baseUrl: string; apiKey?: string; userScoping: "user_id" | "api_key" };
  local?: { dataFile: string };
}
