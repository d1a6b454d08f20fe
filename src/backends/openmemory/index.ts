/**
 * The OpenMemory backend (CaviraOSS OpenMemory server, v1.3.x wire format; see map.ts for the score
 * normalization and field mapping, errors.ts for the error mapping).
 *
 * Every call goes through the one upstream call helper (../upstream.ts: `undici.request`, about a third of the
 * global `fetch`'s CPU per call; redirects refused, the answer read up to 8 MiB, `user-agent: memgate`) through
 * one keep-alive `Agent` per adapter instance, closed by `close()`; the caller's AbortSignal, one request per
 * call, no retries: the caller's deadline and fallback policy decide what happens next. A request whose signal
 * already fired is never sent, a redirect (301/302/303/307/308) is unavailable ("redirect refused"), and the body
 * is always read to the end or destroyed, so the connection goes back to the pool or is closed. The
 * OpenTelemetry undici instrumentation sees these requests on the same diagnostics channels as fetch's (client
 * span, `traceparent`/`baggage` injected).
 *
 * ## User scoping — two styles, chosen per tenant by the operator
 * - `user_id` (servers before 2026-04, which trust the body): one API key for the whole server; every query sends
 *   the gateway's `userId` as `user_id` and as `filters.user_id`, and the server returns that user's memories only.
 * - `api_key` (servers since 2026-04, which derive the tenant from the key as the first 16 hex of its SHA-256 and
 *   answer 403 `tenant_mismatch` to a differing `user_id`): the query sends **no** `user_id`; the key alone selects
 *   the memory space. The operator gives one key per memory space:
 *   - `apiKeyForUser(userId)` returns the key of that user's space (per-user keys). A user without a key has no
 *     memory space: search reports `not_found` (→ COLLECTION_NOT_FOUND) without calling the server, and never
 *     falls back to `apiKey`.
 *   - without `apiKeyForUser`, `apiKey` is used for every user: all users of the tenant share ONE memory space.
 *     Only configure this when a tenant is a single end user (or shared memories are intended).
 *
 * `userExists` is always true: OpenMemory has no user registry (an unknown user simply has no memories, and
 * search returns `[]`). `ping` is `GET /health` (public on the server: it proves reachability, not the key).
 * OpenMemory has one retrieval mode (hybrid sector search), so `searchType` is not sent.
 */
import { Agent } from "undici";
import type { Candidate } from "../../pipeline/types";
import { parseUpstreamJson } from "../json";
import {
  type Backend,
  BackendError,
  type CallOptions,
  type MemoryLookup,
  type NativeSearchRequest,
  type NeighbourRequest,
  type SearchRequest,
} from "../types";
import { callUpstream } from "../upstream";
import { upstreamUrl } from "../upstream-path";
import { type ListCall, openMemoryGetMemories, openMemoryNeighbours } from "./disclosure";
import { errorFromResponse, errorFromThrown, malformedBody, type ResponseHeaders } from "./errors";
import { parseQueryBody, toCandidates } from "./map";
import { OPENMEMORY_MAX_K, openMemoryNativeQuery } from "./native";

export { OPENMEMORY_MAX_K };
/** The server's cap on the query length. Longer queries are rejected here, without a round trip. */
export const OPENMEMORY_MAX_QUERY_CHARS = 8192;

export type OpenMemoryUserScoping = "user_id" | "api_key";
export type OpenMemoryAuthStyle = "x-api-key" | "bearer";

export interface OpenMemoryBackendConfig {
  /** e.g. `http://localhost:8080` (trailing slashes are ignored). */
  baseUrl: string;
  /** The server key (`user_id` style), or the one shared memory space (`api_key` style without `apiKeyForUser`). */
  apiKey?: string;
  userScoping: OpenMemoryUserScoping;
  /** `api_key` style only: the key of each user's own memory space (undefined: the user has none). */
  apiKeyForUser?: (userId: string) => string | undefined;
  /** How the key is sent: `x-api-key: K` (default) or `Authorization: Bearer K`. */
  authStyle?: OpenMemoryAuthStyle;
}

interface CallInit {
  method: "GET" | "POST";
  path: string;
  key: string | undefined;
  signal: AbortSignal;
  body?: unknown;
}

export function createOpenMemoryBackend(cfg: OpenMemoryBackendConfig): Backend {
  const baseUrl = cfg.baseUrl.replace(/\/+$/, "");
  const authStyle = cfg.authStyle ?? "x-api-key";
  /** This instance's connection pool (keep-alive; the same defaults as the global dispatcher fetch uses). */
  const agent = new Agent();
  let closing: Promise<void> | undefined;

  function headers(key: string | undefined, hasBody: boolean): Record<string, string> {
    const h: Record<string, string> = { accept: "application/json" };
    if (hasBody) h["content-type"] = "application/json";
    if (key !== undefined && key !== "") {
      if (authStyle === "bearer") h.authorization = `Bearer ${key}`;
      else h["x-api-key"] = key;
    }
    return h;
  }

  /**
   * One HTTP exchange; returns the status and parsed JSON of a 2xx answer, throws BackendError otherwise.
   * Redirects are refused: following one would hand the `x-api-key` header to wherever it points.
   */
  async function call(op: string, init: CallInit): Promise<{ status: number; json: unknown }> {
    let status: number;
    let text: string;
    let resHeaders: ResponseHeaders;
    try {
      // No id may step out of its route (../upstream-path.ts): checked before undici's URL parser resolves it.
      const answer = await callUpstream({
        url: upstreamUrl(baseUrl, init.path),
        method: init.method,
        headers: headers(init.key, init.body !== undefined),
        ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
        signal: init.signal,
        dispatcher: agent,
      });
      status = answer.status;
      resHeaders = answer.headers.raw;
      text = answer.body;
    } catch (err) {
      throw errorFromThrown(op, err, init.signal);
    }
    if (status < 200 || status > 299) {
      const err = errorFromResponse(op, status, text, resHeaders);
      if (err.kind !== "invalid_query") throw err;
      // The caller's own request refused: a drop-in door hands this answer back to its SDK as it came.
      const type =
        resHeaders instanceof Headers ? resHeaders.get("content-type") : resHeaders["content-type"];
      const contentType = Array.isArray(type) ? (type[0] ?? null) : (type ?? null);
      throw new BackendError({
        kind: "invalid_query",
        backend: "openmemory",
        status,
        message: err.message,
        response: { status, contentType, body: text },
      });
    }
    const parsed = parseUpstreamJson(text);
    if (!parsed.ok) throw malformedBody(op, parsed.reason, status);
    return { status, json: parsed.value };
  }

  function keyFor(userId: string): string | undefined {
    if (cfg.userScoping !== "api_key" || cfg.apiKeyForUser === undefined) return cfg.apiKey;
    try {
      return cfg.apiKeyForUser(userId);
    } catch (err) {
      throw new BackendError({
        kind: "unavailable",
        backend: "openmemory",
        message: "OpenMemory key lookup for the user failed",
        cause: err,
      });
    }
  }

  function invalid(message: string): BackendError {
    return new BackendError({
      kind: "invalid_query",
      backend: "openmemory",
      message: `OpenMemory ${message}`,
    });
  }

  /** A GET of the user's list with the user's key (a user without a memory space: not_found, as a search). */
  function listFor(userId: string): ListCall {
    return async (path, signal) => {
      const key = keyFor(userId);
      if (cfg.userScoping === "api_key" && cfg.apiKeyForUser !== undefined && key === undefined) {
        throw new BackendError({
          kind: "not_found",
          backend: "openmemory",
          message: "OpenMemory has no memory space (API key) configured for this user",
        });
      }
      return call("list", { method: "GET", path, key, signal });
    };
  }
  const listMalformed = (reason: string, status: number) => malformedBody("list", reason, status);

  return {
    name: "openmemory",

    async search(req: SearchRequest): Promise<Candidate[]> {
      const limit = Math.floor(req.limit);
      if (!(limit >= 1)) return [];
      if (req.query.length === 0) throw invalid("query is empty");
      if (req.query.length > OPENMEMORY_MAX_QUERY_CHARS) {
        throw invalid(`query is longer than ${OPENMEMORY_MAX_QUERY_CHARS} characters`);
      }
      const key = keyFor(req.userId);
      if (cfg.userScoping === "api_key" && cfg.apiKeyForUser !== undefined && key === undefined) {
        throw new BackendError({
          kind: "not_found",
          backend: "openmemory",
          message: "OpenMemory has no memory space (API key) configured for this user",
        });
      }
      const k = Math.min(limit, OPENMEMORY_MAX_K);
      const body =
        cfg.userScoping === "user_id"
          ? { query: req.query, k, user_id: req.userId, filters: { user_id: req.userId } }
          : { query: req.query, k, filters: {} };
      const res = await call("query", {
        method: "POST",
        path: "/memory/query",
        key,
        signal: req.signal,
        body,
      });
      const matches = parseQueryBody(res.json);
      if (!Array.isArray(matches)) throw malformedBody("query", matches.malformed, res.status);
      return toCandidates(matches, limit);
    },

    /** The drop-in door's `/memory/query` in OpenMemory's wire format (./native.ts), with the user's key. */
    searchNative(req: NativeSearchRequest) {
      const userId = req.native.kind === "openmemory.query" ? req.native.userId : undefined;
      const key = userId === undefined ? cfg.apiKey : keyFor(userId);
      return openMemoryNativeQuery((op, init) => call(op, { ...init, key }), req.native, req);
    },

    /** Progressive disclosure, layers 3 and 2, over the user's own list (./disclosure.ts). */
    getMemories(req: MemoryLookup) {
      return openMemoryGetMemories(listFor(req.userId), cfg.userScoping, req, listMalformed);
    },

    neighbours(req: NeighbourRequest) {
      return openMemoryNeighbours(listFor(req.userId), cfg.userScoping, req, listMalformed);
    },

    async userExists(_userId: string, _opts: CallOptions): Promise<boolean> {
      return true;
    },

    async ping(opts: CallOptions): Promise<void> {
      const res = await call("health", {
        method: "GET",
        path: "/health",
        key: cfg.apiKey,
        signal: opts.signal,
      });
      const ok =
        typeof res.json === "object" && res.json !== null && (res.json as { ok?: unknown }).ok === true;
      if (!ok) throw malformedBody("health", "`ok` is not true", res.status);
    },

    /** Closes the connection pool (after the calls in flight); later calls fail as `unavailable`. */
    async close(): Promise<void> {
      closing ??= agent.close();
      await closing;
    },
  };
}
