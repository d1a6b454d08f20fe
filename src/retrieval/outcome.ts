/**
 * What the retrieval core answers (./service.ts), whatever the door: typed outcomes, never HTTP errors. Each door
 * renders them in its own wire shape; src/http maps a refusal to problem+json.
 */
import type { NativeSearch, UpstreamResponse } from "../backends/types";
import type { Intent } from "../pipeline/query/analyze";
import type { BackendName, FallbackAction, FallbackCode } from "../policy/schema";
import type { Principal } from "../tenants/types";
import type { IndexPayload, RetrievalPayload } from "./payload";

/** One retrieval, as every door can express it. */
export interface RetrievalRequest {
  principal: Principal;
  userId: string;
  query: string;
  /** A policy name the caller asked for (undefined: the tenant's default), and how it was named. */
  policy?: string;
  policyField?: string;
  /** Admin only: a partial policy merged over the named one for this request. */
  overrides?: Record<string, unknown>;
  /** Admin only: the stage-by-stage trace; bypasses the cache. */
  explain?: boolean;
  /** The chat turn's time, epoch ms (relative time phrases resolve against it); default: the clock on arrival. */
  turnTime?: number;
  backend?: BackendName;
  /**
   * A chat turn's eligibility fields (/v1/retrieve: `useMemory` must be true and `sessionId` valid, or the turn
   * skips memory as a declared fallback). A door whose SDK call is an explicit search has none.
   */
  turn?: { sessionId: unknown; useMemory: unknown };
  /** A door's own result count (Zep `limit`, OpenMemory `k`): replaces `retrieval.topK` for this request. */
  topK?: number;
  /** A door's own upstream call; the answer keeps what the door needs to render (payload.native). */
  native?: NativeSearch;
  /**
   * What the search is by (both default true). `user: false` (a Zep graph or thread, not a user) skips the
   * user-existence check; `query: false` (Zep's thread context, which has none) skips the blank-query check.
   */
  needs?: { user?: boolean; query?: boolean };
  /** The client went away. A shared (single-flight) computation is not tied to it. */
  signal?: AbortSignal;
  /** The caller's reading of the question (MCP `search_memory`): replaces the detected intent in ranking. */
  intent?: Intent;
  /** `index`: layer 1 of progressive disclosure is answered (`index` on the outcome) besides the payload. */
  detail?: "index" | "full";
  /** The door's label on spans and metrics when it is not a drop-in door's search (`mcp`); default `retrieve`. */
  door?: string;
}

/** What layers 2 and 3 of progressive disclosure share (docs/api.md#progressive-disclosure). */
interface DisclosureAsk {
  principal: Principal;
  userId: string;
  policy?: string;
  policyField?: string;
  backend?: BackendName;
  /** Spans and metrics: `retrieve` (/v1) or `mcp`. */
  door?: string;
  signal?: AbortSignal;
}

/** Layer 3: the full shaped content of some of the user's memories. */
export interface DetailsRequest extends DisclosureAsk {
  ids: readonly string[];
}

/** Layer 2: the turns around one of the user's memories. */
export interface TimelineRequest extends DisclosureAsk {
  id: string;
  before: number;
  after: number;
}

/** The caller's own fault: 403 / 400 at the edge. */
export interface Refusal {
  kind: "refused";
  /** NOT_FOUND: a disclosure layer's id that is not this user's (or unknown: the two are never told apart). */
  code: "FORBIDDEN" | "VALIDATION_FAILED" | "NOT_FOUND";
  detail: string;
}

export type RetrievalOutcome =
  /**
   * Shaped memories: from the backend (miss) or the cache (hit). `json`, when present, is `JSON.stringify(payload)`
   * exactly, made without serializing the payload (a hit answers from its entry's JSON text): a door that sends
   * the payload as it is sends that.
   */
  | { kind: "payload"; payload: RetrievalPayload; json?: string | Buffer; index?: IndexPayload }
  /** The policy's declared fallback; `payload.metadata.fallback` says what and why (cache: a stale payload). */
  | {
      kind: "fallback";
      code: FallbackCode;
      action: FallbackAction;
      payload: RetrievalPayload;
      index?: IndexPayload;
    }
  | Refusal
  /** A door's upstream refused the caller's own request (HTTP 400/413/414/422): handed back as it came. */
  | { kind: "rejected"; response: UpstreamResponse };
