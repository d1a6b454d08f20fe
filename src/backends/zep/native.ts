/**
 * The Zep drop-in door's searches (src/compat/zep), made by the Zep backend in Zep's wire format so that the
 * door can answer the SDK with Zep's own objects (every field kept) while the retrieval core does the rest.
 *
 * ## Calls
 * - `zep.graph.search`: `POST {baseUrl}/graph/search` with the caller's body. When the caller's `limit` was an
 *   integer from 1 (default 10; above Zep's maximum of 50 it was clamped to 50 by `askedLimit`) it is replaced by
 *   the fetch size min(limit × `retrieval.overfetch`, 50), so that what threshold and dedup remove is refilled,
 *   as on /v1/retrieve; an invalid `limit` (not an integer, or below 1) goes as it is, for Zep to refuse (its 400
 *   comes back to the SDK unchanged, see `BackendError.response`).
 * - `zep.thread.context`: `GET {baseUrl}/threads/{id}/context` with the caller's query parameters
 *   (`template_id`, `min_rating`, …): no candidates, a `context` block.
 * One request each, the tenant's key (`Authorization: Api-Key`), redirects refused (following one would hand
 * the key to wherever it points), the answer read up to 8 MiB (../body.ts). Failures are classified as every Zep
 * call is (./errors.ts: 404 → not_found, 429 → rate_limited with Retry-After, 400/413/414/422 → invalid_query,
 * the rest → unavailable).
 *
 * ## Candidates of a search answer
 * Every result list is read: `edges` (text `fact`), `episodes` (`content`), `nodes`, `thread_summaries` and
 * `observations` (`summary`). An item becomes a candidate whose id is its `uuid`, whose `backendScore` is Zep's
 * own number and whose score is calibrated per list as the Zep adapter does (./score.ts) for the caller's
 * `reranker` (absent: Zep's default `rrf`; `scope: auto` is read as `rrf`): `cross_encoder` Zep's relevance,
 * `rrf` raw / (raw + 1), `mmr`, `node_distance` and `episode_mentions` 1 / (rank + 2). Items without a `uuid`
 * or with a blank text are left out; an item without a valid timestamp is dated 1970-01-01 (it only loses
 * recency in interleaving). A 200 answer that is not an object, or has a result list that is not a list of
 * objects, is Zep being unavailable. The original item is kept as the candidate's source; every other top-level
 * field (`context`, `response`, …) is kept beside, and each list the answer had is kept as an empty list, for the
 * door to refill with the kept items.
 */

import type { Dispatcher } from "undici";
import { type Candidate, type MemoryType, ROLES, type Role } from "../../pipeline/types";
import { BodyTooLargeError } from "../body";
import { isRecord, parseUpstreamJson } from "../json";
import {
  BackendError,
  type NativeAnswer,
  type NativeSearch,
  type NativeSource,
  type UpstreamResponse,
} from "../types";
import { ACCEPT_ENCODING, type AnswerHeaders, callUpstream, RedirectRefusedError } from "../upstream";
import { UnsafeUpstreamPathError, upstreamUrl } from "../upstream-path";
import { kindForStatus, parseRetryAfterMs, type ZepOperation } from "./errors";
import { firstIsoTimestamp, ZEP_MAX_LIMIT } from "./map";
import { calibrateScores, rawScoreOf, requestedReranker, type ZepAnyReranker } from "./score";

export const ZEP_DEFAULT_LIMIT = 10;

interface ListSpec {
  text: string;
  type: MemoryType;
  times: readonly string[];
}

export const ZEP_LISTS = {
  edges: { text: "fact", type: "fact", times: ["valid_at", "created_at"] },
  episodes: { text: "content", type: "message", times: ["created_at"] },
  nodes: { text: "summary", type: "summary", times: ["created_at"] },
  thread_summaries: {
    text: "summary",
    type: "summary",
    times: ["last_summarized_episode_valid_at", "last_summarized_at", "created_at"],
  },
  observations: { text: "summary", type: "summary", times: ["latest_evidence_at", "created_at"] },
} as const satisfies Record<string, ListSpec>;
export type ZepList = keyof typeof ZEP_LISTS;
export const ZEP_LIST_NAMES = Object.keys(ZEP_LISTS) as ZepList[];

/**
 * The caller's `limit` as the door uses it (docs/adopting.md#zep): absent = 10; an integer above Zep's documented
 * maximum (50) is clamped to 50 (`clampedFrom` says what was asked, for the `x-memgate-limit` header); anything
 * else that is not an integer from 1 is undefined (sent as it is, for Zep to refuse).
 */
export function askedLimit(
  body: Record<string, unknown>,
): { limit: number; clampedFrom?: number } | undefined {
  const asked = body.limit === undefined ? ZEP_DEFAULT_LIMIT : body.limit;
  if (typeof asked !== "number" || !Number.isInteger(asked) || asked < 1) return undefined;
  return asked > ZEP_MAX_LIMIT ? { limit: ZEP_MAX_LIMIT, clampedFrom: asked } : { limit: asked };
}

export interface ZepWire {
  apiKey: string;
  baseUrl: string;
  /**
   * The keep-alive pool to call through: the backend instance's own, closed with it (./index.ts). Without one
   * (a door's pass-through write), undici's process-wide default pool.
   */
  dispatcher?: Dispatcher;
}

export interface ZepCallInit {
  method: "GET" | "POST";
  path: string;
  body?: unknown;
  /** The caller's signal (its deadline). */
  signal: AbortSignal;
  /** Whether a safety net beside the caller's deadline fired (the signal's own timer): the call failed with "timeout". */
  timedOut?: () => boolean;
  /** What the caller's signal firing is called in the error (default "timeout": a door's signal is its deadline). */
  abortedAs?: "timeout" | "aborted";
}

/**
 * One buffered HTTP exchange with Zep, with the tenant's key: the answer as it came (any status). Throws
 * BackendError (unavailable) only when there is no answer: network error, timeout, a redirect (following one
 * would hand the key to wherever it points), an answer over 8 MiB. Through the one upstream call helper
 * (../upstream.ts: `undici.request`, about half the global `fetch`'s CPU per call — README, "The Zep path and the
 * cache hit against their floors"; redirects refused, bounded read, user-agent).
 */
export async function zepExchange(
  zep: ZepWire,
  op: ZepOperation,
  init: ZepCallInit,
): Promise<UpstreamResponse & { headers: AnswerHeaders }> {
  const headers: Record<string, string> = {
    authorization: `Api-Key ${zep.apiKey}`,
    accept: "application/json",
    "accept-encoding": ACCEPT_ENCODING,
  };
  if (init.body !== undefined) headers["content-type"] = "application/json";
  try {
    // No id may step out of its route (../upstream-path.ts): checked before undici's URL parser resolves it.
    const answer = await callUpstream({
      url: upstreamUrl(zep.baseUrl, init.path),
      method: init.method,
      headers,
      ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
      signal: init.signal,
      ...(zep.dispatcher === undefined ? {} : { dispatcher: zep.dispatcher }),
    });
    return {
      status: answer.status,
      contentType: answer.headers.get("content-type"),
      body: answer.body,
      headers: answer.headers,
    };
  } catch (err) {
    if (err instanceof UnsafeUpstreamPathError) {
      throw new BackendError({
        kind: "invalid_query",
        backend: "zep",
        message: `Zep ${op} refused: ${err.message}`,
      });
    }
    const reason =
      err instanceof BodyTooLargeError
        ? "answer too large"
        : err instanceof RedirectRefusedError
          ? "redirect refused"
          : init.timedOut?.() === true
            ? "timeout"
            : init.signal.aborted
              ? (init.abortedAs ?? "timeout")
              : "network error";
    throw new BackendError({
      kind: "unavailable",
      backend: "zep",
      message: `Zep ${op} failed: ${reason}`,
      oversized: err instanceof BodyTooLargeError,
      cause: { error: err instanceof Error ? err.name : typeof err, reason },
    });
  }
}

/**
 * One JSON exchange with Zep (the door's searches and the backend's `graph.search`). Returns the parsed 2xx
 * answer; throws BackendError otherwise: the status classified as every Zep call is (./errors.ts), a 400-class
 * refusal carrying Zep's answer as it came (for a door to hand back), a 2xx that is not JSON malformed.
 */
export async function zepJson(zep: ZepWire, op: ZepOperation, init: ZepCallInit): Promise<unknown> {
  const answer = await zepExchange(zep, op, init);
  const { status } = answer;
  if (status < 200 || status > 299) {
    const kind = kindForStatus(status);
    const retryAfterMs = kind === "rate_limited" ? parseRetryAfterMs(answer.headers) : undefined;
    throw new BackendError({
      kind,
      backend: "zep",
      status,
      message: `Zep ${op} failed: HTTP ${status}`,
      ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
      // Never Zep's body here (it may echo the query): the door gets it through `response` only.
      cause: { status, reason: "http" },
      ...(kind === "invalid_query"
        ? { response: { status, contentType: answer.contentType, body: answer.body } }
        : {}),
    });
  }
  const parsed = parseUpstreamJson(answer.body);
  if (!parsed.ok) throw malformed(op, parsed.reason, status);
  return parsed.value;
}

function malformed(op: ZepOperation, detail: string, status?: number): BackendError {
  return new BackendError({
    kind: "unavailable",
    backend: "zep",
    message: `Zep ${op} failed: malformed response (${detail})`,
    ...(status === undefined ? {} : { status }),
  });
}

function roleOf(item: Record<string, unknown>): Role | undefined {
  for (const v of [item.role_type, item.role]) {
    const role = ROLES.find((r) => r === v);
    if (role !== undefined) return role;
  }
  return undefined;
}

/** Candidates and sources of a graph search answer (see the top of this file). */
export function searchAnswer(json: unknown, ctx: { userId: string; reranker: ZepAnyReranker }): NativeAnswer {
  if (!isRecord(json)) throw malformed("graph.search", "not an object");
  const sources: Record<string, NativeSource> = {};
  const candidates: Candidate[] = [];
  const echo: Record<string, unknown> = { ...json };
  for (const list of ZEP_LIST_NAMES) {
    const value = json[list];
    // A list the answer had stays in the echo, empty: the door refills it with the kept items.
    if (Array.isArray(value)) echo[list] = [];
    else delete echo[list];
    if (value == null) continue;
    if (!Array.isArray(value) || !value.every(isRecord))
      throw malformed("graph.search", `${list} is not a list`);
    const spec: ListSpec = ZEP_LISTS[list];
    const usable = value.filter(
      (i) => typeof i.uuid === "string" && i.uuid !== "" && typeof i[spec.text] === "string",
    );
    const raws = usable.map(rawScoreOf);
    const scores = calibrateScores(raws, ctx.reranker);
    usable.forEach((item, rank) => {
      const id = String(item.uuid);
      const content = String(item[spec.text]);
      if (sources[id] !== undefined || content.trim() === "") return;
      sources[id] = { list, item };
      const timestamp = firstIsoTimestamp(spec.times.map((t) => item[t])) ?? "1970-01-01T00:00:00.000Z";
      const candidate: Candidate = {
        id,
        content,
        score: scores[rank] ?? 0,
        timestamp,
        sessionId: typeof item.thread_id === "string" ? item.thread_id : `user:${ctx.userId}`,
        type: spec.type,
        backend: "zep",
        sourceId: id,
      };
      const role = list === "episodes" ? roleOf(item) : undefined;
      if (role !== undefined) candidate.role = role;
      const raw = raws[rank];
      if (raw !== undefined) candidate.backendScore = raw;
      candidates.push(candidate);
    });
  }
  const { context, ...rest } = echo;
  return typeof context === "string"
    ? { candidates, sources, echo: rest, context }
    : { candidates, sources, echo };
}

/** The door's search against Zep (see the top of this file). */
export async function zepNativeSearch(
  zep: ZepWire,
  native: NativeSearch,
  opts: { limit: number; signal: AbortSignal },
): Promise<NativeAnswer> {
  switch (native.kind) {
    case "zep.graph.search": {
      const { body } = native;
      const fetchLimit = native.setLimit
        ? Math.max(1, Math.min(Math.floor(opts.limit), ZEP_MAX_LIMIT))
        : undefined;
      const json = await zepJson(zep, "graph.search", {
        method: "POST",
        path: "/graph/search",
        body: fetchLimit === undefined ? body : { ...body, limit: fetchLimit },
        signal: opts.signal,
      });
      const owner = typeof body.user_id === "string" ? body.user_id : body.graph_id;
      return searchAnswer(json, {
        userId: typeof owner === "string" && owner !== "" ? owner : "unknown",
        reranker: requestedReranker(body),
      });
    }
    case "zep.thread.context": {
      const query = new URLSearchParams(native.params).toString();
      const json = await zepJson(zep, "thread.get_user_context", {
        method: "GET",
        path: `/threads/${encodeURIComponent(native.threadId)}/context${query === "" ? "" : `?${query}`}`,
        signal: opts.signal,
      });
      if (!isRecord(json)) throw malformed("thread.get_user_context", "not an object");
      const { context, ...echo } = json;
      if (context != null && typeof context !== "string")
        throw malformed("thread.get_user_context", "context is not a string");
      return { candidates: [], sources: {}, echo, ...(typeof context === "string" ? { context } : {}) };
    }
    default:
      throw new BackendError({
        kind: "invalid_query",
        backend: "zep",
        message: `Zep cannot answer a ${native.kind} search`,
      });
  }
}
