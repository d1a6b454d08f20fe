/**
 * The Zep Cloud backend: `graph.search` per configured scope (and, with `zep.userSummary`, the user's node for
 * its summary: ./map.ts), `user.get` for existence, `project.get` as ping; with `retrieval.replies` or
 * `retrieval.following`, one `thread.get` for the reply turns of question episodes and the turns following the
 * first episodes (./replies.ts), made as soon as the `episodes` scope answers
 * (or beside the searches, to the thread the user's previous search chose: `ThreadGuesses`).
 * Mapping and score normalization: ./map.ts. Error classification: ./errors.ts.
 *
 * `graph.search`, the call on every cache miss, is one documented `POST /graph/search` per scope made directly
 * (./native.ts `zepJson`, over `undici.request`: the body in Zep's wire format typed by the SDK's own
 * `serialization` types, the answer mapped from the wire by ./map.ts, failures classified as every Zep call is):
 * the SDK's layers around it — a request schema, headers resolved through suppliers, the answer validated and
 * renamed to camelCase item by item — cost about as much CPU as the HTTP exchange itself (bench/zep.bench.ts; ~1,000 → ~550 µs per search
 * of two scopes in a loopback micro-benchmark). `user.get` (once per user) and `project.get` (the ping) go
 * through the official SDK with `maxRetries: 0` (the SDK would otherwise retry 429/5xx twice, ignoring
 * Retry-After, behind the gateway's deadline) and its transport replaced by ./fetcher.ts (its timers outlive
 * failed calls). Every call has the caller's `AbortSignal` and a `timeoutInSeconds` safety net for callers
 * whose signal never fires. The adapter never retries; the gateway decides.
 */
import { type serialization, ZepClient } from "@getzep/zep-cloud";
import { Agent } from "undici";
import type { Candidate } from "../../pipeline/types";
import { LinkedSignal } from "../../signals";
import type {
  Backend,
  CallOptions,
  MemoryLookup,
  NativeSearchRequest,
  NeighbourRequest,
  SearchRequest,
} from "../types";
import { BackendError } from "../types";
import { isDotSegmentId } from "../upstream-path";
import { zepGetMemories, zepNeighbours } from "./disclosure";
import { toBackendError } from "./errors";
import { zepFetcher } from "./fetcher";
import {
  type ScopeAnswer,
  toCandidates,
  userSummaryCandidate,
  withUserSummary,
  ZEP_MAX_LIMIT,
  type ZepScope,
} from "./map";
import { zepJson, zepNativeSearch } from "./native";
import { ReplyPrefetch, ThreadGuesses, withReplies } from "./replies";

export interface ZepBackendConfig {
  apiKey: string;
  /** Zep's API root including `/api/v2`, e.g. https://api.getzep.com/api/v2. */
  baseUrl: string;
  /** Upper bound on any single call, in seconds, whatever the caller's signal does (default 30). */
  timeoutInSeconds?: number;
}

/** Longer than the policy's largest `timeouts.backendMs` (30 s), so the caller's signal normally fires first. */
export const DEFAULT_TIMEOUT_SECONDS = 30;

/** `mmr` needs a lambda; the policy has no field for it yet, so the balanced midpoint is sent. */
export const DEFAULT_MMR_LAMBDA = 0.5;

function assertConfig(cfg: ZepBackendConfig): void {
  if (cfg.apiKey.trim() === "") throw new Error("Zep backend: apiKey is empty");
  let pathname: string;
  try {
    pathname = new URL(cfg.baseUrl).pathname;
  } catch {
    throw new Error("Zep backend: baseUrl is not a URL");
  }
  if (!/\/api\/v2\/?$/.test(pathname)) throw new Error("Zep backend: baseUrl must end with /api/v2");
}

/** Creates the backend for one tenant's Zep project. Throws (synchronously) only on an invalid config. */
export function createZepBackend(cfg: ZepBackendConfig): Backend {
  assertConfig(cfg);
  const client = new ZepClient({ apiKey: cfg.apiKey, baseUrl: cfg.baseUrl, fetcher: zepFetcher });
  // This instance's keep-alive pool for its searches (./native.ts), closed with the instance.
  const dispatcher = new Agent();
  const wire = { apiKey: cfg.apiKey, baseUrl: cfg.baseUrl, dispatcher };
  // Each user's last reply thread, to read it beside the next search's searches (./replies.ts).
  const threadGuesses = new ThreadGuesses();
  let closing: Promise<void> | undefined;
  const timeoutInSeconds = cfg.timeoutInSeconds ?? DEFAULT_TIMEOUT_SECONDS;
  const callOptions = (abortSignal: AbortSignal) => ({ maxRetries: 0, timeoutInSeconds, abortSignal });

  /**
   * The searches of every scope and, with `zep.userSummary`, the user's node (./map.ts "The user summary"),
   * together: one failure cancels the others and fails the whole.
   */
  async function searchScopes(
    req: SearchRequest,
    limit: number,
    early: ReplyPrefetch | undefined,
  ): Promise<{ answers: ScopeAnswer[]; userNode?: unknown }> {
    const { reranker } = req.policy.zep;
    const scopes: ZepScope[] = [...new Set(req.policy.zep.scopes)];
    // When one scope fails the others are cancelled: the search fails as a whole either way.
    // One signal for all: the caller's, this adapter's own safety net, and the siblings' failure.
    const link = new LinkedSignal(req.signal, timeoutInSeconds * 1000);
    const timedOut = () => link.timedOut;
    let firstError: unknown;
    let settled: PromiseSettledResult<ScopeAnswer>[];
    let userNode: unknown;
    const fail = (err: unknown) => {
      if (firstError === undefined) {
        firstError = err;
        link.abort();
      }
    };
    const node =
      req.policy.zep.userSummary === true
        ? zepJson(wire, "user.get_node", {
            method: "GET",
            path: `/users/${encodeURIComponent(req.userId)}/node`,
            signal: link.signal,
            timedOut,
            abortedAs: "aborted",
          }).then(
            (answer) => {
              userNode = answer;
            },
            (err: unknown) => {
              // A user without a node has no summary: not a failure of the search.
              if (!(err instanceof BackendError && err.kind === "not_found")) fail(err);
            },
          )
        : Promise.resolve();
    try {
      const searches = scopes.map(async (scope): Promise<ScopeAnswer> => {
        try {
          const body: serialization.GraphSearchQuery.Raw = {
            user_id: req.userId,
            query: req.query,
            limit,
            scope,
            reranker,
            ...(reranker === "mmr" ? { mmr_lambda: DEFAULT_MMR_LAMBDA } : {}),
          };
          const results = await zepJson(wire, "graph.search", {
            method: "POST",
            path: "/graph/search",
            body,
            signal: link.signal,
            timedOut,
            abortedAs: "aborted",
          });
          // The episodes' thread call starts now, beside the other scopes' searches (./replies.ts).
          early?.scopeAnswered(scope, results, limit);
          return { scope, results: results as serialization.GraphSearchResults.Raw };
        } catch (err) {
          fail(err);
          throw err;
        }
      });
      // The thread the user's previous search chose is read now, beside the searches (./replies.ts).
      early?.guess();
      settled = await Promise.allSettled(searches);
      await node;
    } finally {
      link.dispose();
    }
    if (firstError !== undefined) throw firstError;
    const answers = settled.flatMap((s) => (s.status === "fulfilled" ? [s.value] : []));
    return userNode === undefined ? { answers } : { answers, userNode };
  }

  return {
    name: "zep",

    async search(req: SearchRequest) {
      const started = performance.now();
      const limit = Math.min(Math.floor(req.limit), ZEP_MAX_LIMIT);
      if (!(limit >= 1)) return [];
      let candidates: Candidate[];
      const early =
        req.policy.retrieval.replies === true || req.policy.retrieval.following !== undefined
          ? new ReplyPrefetch(wire, req, started, undefined, threadGuesses)
          : undefined;
      try {
        const { answers, userNode } = await searchScopes(req, limit, early);
        const found = toCandidates(answers, { userId: req.userId, reranker: req.policy.zep.reranker, limit });
        candidates =
          userNode === undefined ? found : withUserSummary(found, userSummaryCandidate(userNode, req.userId));
      } catch (err) {
        early?.cancel();
        throw toBackendError(err, "graph.search");
      }
      // `retrieval.replies`: the turn after a question episode, and `retrieval.following`: the turns after the first
      // episodes, from one thread (./replies.ts); never fails.
      return withReplies(wire, candidates, req, started, undefined, early);
    },

    /** Progressive disclosure, layers 3 and 2, over the user's own graph lists (./disclosure.ts). */
    async getMemories(req: MemoryLookup) {
      try {
        return await zepGetMemories(wire, req);
      } catch (err) {
        throw toBackendError(err, "graph.episodes.user");
      }
    },

    async neighbours(req: NeighbourRequest) {
      try {
        return await zepNeighbours(wire, req);
      } catch (err) {
        throw toBackendError(err, "graph.episodes.user");
      }
    },

    /** The drop-in door's own calls, in Zep's wire format (./native.ts). */
    searchNative(req: NativeSearchRequest) {
      return zepNativeSearch(wire, req.native, req);
    },

    async userExists(userId: string, opts: CallOptions) {
      // The SDK's URL join resolves a `..` id before any transport sees it (../upstream-path.ts).
      if (isDotSegmentId(userId)) {
        throw new BackendError({
          kind: "invalid_query",
          backend: "zep",
          message: "Zep user.get refused: a dot-segment id",
        });
      }
      try {
        await client.user.get(userId, callOptions(opts.signal));
        return true;
      } catch (err) {
        const be = toBackendError(err, "user.get");
        if (be.kind === "not_found") return false;
        throw be;
      }
    },

    /** Closes the keep-alive pool: calls in flight finish, idle sockets close (shutdown, `BackendRegistry.close`). */
    async close(): Promise<void> {
      closing ??= dispatcher.close();
      await closing;
    },

    async ping(opts: CallOptions) {
      try {
        await client.project.get(callOptions(opts.signal));
      } catch (err) {
        const be = toBackendError(err, "project.get");
        if (be.kind === "unavailable" || be.kind === "rate_limited") throw be;
        // A 404 or 400 on the project itself still means Zep is not usable with these credentials.
        throw new BackendError({
          kind: "unavailable",
          backend: "zep",
          message: be.message,
          ...(be.status === undefined ? {} : { status: be.status }),
          cause: be.cause,
        });
      }
    },
  };
}
