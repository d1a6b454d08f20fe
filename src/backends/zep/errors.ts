/**
 * Zep SDK failures → `BackendError` (src/backends/types.ts).
 *
 * | what the SDK throws                                         | kind            |
 * |-------------------------------------------------------------|-----------------|
 * | `ZepTimeoutError`, or `ZepError` with no `statusCode`       | `unavailable`   |
 * |   (a refused redirect: "unexpected redirect (HTTP 307)";    |                 |
 * |   (Node 20 timeout: message contains "timeout"; network:    |                 |
 * |   "fetch failed"; caller's signal: "The user aborted …")    |                 |
 * | `AbortError` / `TimeoutError` / any other unexpected error  | `unavailable`   |
 * | HTTP 5xx, 408                                               | `unavailable`   |
 * | HTTP 401, 403 (the operator's Zep key is wrong)             | `unavailable`   |
 * | HTTP 404                                                    | `not_found`     |
 * | HTTP 429 (+ `retryAfterMs`, see `parseRetryAfterMs`)        | `rate_limited`  |
 * | HTTP 400, 413, 414, 422 (the request was refused as such)   | `invalid_query` |
 * | any other HTTP status                                       | `unavailable`   |
 *
 * Messages are fixed texts such as "Zep graph.search failed: HTTP 500": never the SDK's message, which embeds
 * the response body (it may echo the query or memory contents). For the same reason `cause` is a sanitized
 * summary `{ error, status?, reason }` rather than the SDK error itself (pino prints a cause's message).
 */
import { ZepError, ZepTimeoutError } from "@getzep/zep-cloud";
import { BackendError, type BackendErrorKind } from "../types";

export type ZepOperation =
  | "graph.search"
  | "user.get"
  | "user.get_node"
  | "project.get"
  | "thread.get"
  | "thread.get_user_context"
  | "thread.add_messages"
  | "graph.episodes.user"
  | "graph.edges.user";

/** Thrown by the mapper when a 200 answer does not have the documented shape. */
export class ZepMalformedResponseError extends Error {
  constructor(detail: string) {
    super(`malformed Zep response: ${detail}`);
    this.name = "ZepMalformedResponseError";
  }
}

/** What a `retryAfterMs` is capped at: a day; anything longer is a misconfigured header. */
export const MAX_RETRY_AFTER_MS = 86_400_000;

interface HeaderReader {
  get(name: string): string | null;
}

function isHeaderReader(v: unknown): v is HeaderReader {
  return typeof v === "object" && v !== null && typeof (v as { get?: unknown }).get === "function";
}

const clampMs = (ms: number): number => Math.min(MAX_RETRY_AFTER_MS, Math.max(0, Math.round(ms)));

/**
 * How long a 429 asks us to wait, in ms, or undefined when it does not say.
 * - `retry-after`: delta seconds (`60`) or an HTTP date (`Wed, 21 Oct 2015 07:28:00 GMT`).
 * - else `x-ratelimit-reset`: Zep sends epoch seconds; a value above 1e12 is read as epoch milliseconds and one
 *   below 1e9 (before 2001 as epoch seconds) as delta seconds, the two other conventions in the wild.
 * A time already past gives 0. The result is capped at `MAX_RETRY_AFTER_MS`.
 */
export function parseRetryAfterMs(headers: unknown, now: number = Date.now()): number | undefined {
  if (!isHeaderReader(headers)) return undefined;
  const retryAfter = headers.get("retry-after")?.trim();
  if (retryAfter) {
    if (/^\d+(\.\d+)?$/.test(retryAfter)) return clampMs(Number(retryAfter) * 1000);
    const at = Date.parse(retryAfter);
    if (!Number.isNaN(at)) return clampMs(at - now);
  }
  const reset = headers.get("x-ratelimit-reset")?.trim();
  if (reset && /^\d+(\.\d+)?$/.test(reset)) {
    const n = Number(reset);
    if (n > 1e12) return clampMs(n - now);
    if (n > 1e9) return clampMs(n * 1000 - now);
    return clampMs(n * 1000);
  }
  return undefined;
}

export function kindForStatus(status: number): BackendErrorKind {
  if (status === 404) return "not_found";
  if (status === 429) return "rate_limited";
  if (status === 400 || status === 413 || status === 414 || status === 422) return "invalid_query";
  return "unavailable";
}

/** Why a call without an HTTP status failed, from the error's class and the SDK's fixed texts. */
function reasonWithoutStatus(
  err: unknown,
): "timeout" | "aborted" | "network error" | "answer too large" | "redirect refused" | "unexpected error" {
  if (err instanceof ZepTimeoutError) return "timeout";
  if (!(err instanceof Error)) return "unexpected error";
  if (err.name === "TimeoutError") return "timeout";
  if (err.name === "AbortError") return "aborted";
  if (!(err instanceof ZepError)) return "unexpected error";
  const message = err.message.toLowerCase();
  // ./fetcher.ts reports a BodyTooLargeError as an "unknown" failure carrying its message.
  if (message.includes("upstream answer over")) return "answer too large";
  // ./fetcher.ts reports a refused redirect (../upstream.ts) the same way: "unexpected redirect (HTTP 307)".
  if (message.includes("unexpected redirect")) return "redirect refused";
  if (message.includes("timeout")) return "timeout";
  if (message.includes("abort")) return "aborted";
  return "network error";
}

function errorName(err: unknown): string {
  return err instanceof Error ? err.name || err.constructor.name : typeof err;
}

/** Classifies anything a Zep call threw. Never throws. */
export function toBackendError(err: unknown, op: ZepOperation, now: number = Date.now()): BackendError {
  if (err instanceof BackendError) return err;
  if (err instanceof ZepMalformedResponseError) {
    return new BackendError({
      kind: "unavailable",
      backend: "zep",
      message: `Zep ${op} failed: malformed response`,
      cause: { error: err.name, reason: "malformed response" },
    });
  }
  const status = err instanceof ZepError ? err.statusCode : undefined;
  if (status == null) {
    const reason = reasonWithoutStatus(err);
    return new BackendError({
      kind: "unavailable",
      backend: "zep",
      message: `Zep ${op} failed: ${reason}`,
      oversized: reason === "answer too large",
      cause: { error: errorName(err), reason },
    });
  }
  const kind = kindForStatus(status);
  const retryAfterMs =
    kind === "rate_limited" && err instanceof ZepError
      ? parseRetryAfterMs(err.rawResponse?.headers, now)
      : undefined;
  return new BackendError({
    kind,
    backend: "zep",
    status,
    message: `Zep ${op} failed: HTTP ${status}`,
    ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
    cause: { error: errorName(err), status, reason: "http" },
  });
}
