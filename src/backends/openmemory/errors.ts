/**
 * OpenMemory failures → `BackendError` (the only thing the adapter ever throws).
 *
 * | what happened | kind | why |
 * |---|---|---|
 * | timeout, caller abort, connection refused/reset, DNS | unavailable | the server cannot answer now |
 * | a redirect (301, 302, 303, 307, 308) | unavailable | never followed (../upstream.ts): it would send the key, or memgate itself, wherever it points |
 * | 5xx | unavailable | |
 * | 5xx `{"error":"query_failed","message":"Rate limit: N active queries (max M)"}` | rate_limited, retry 1 s | the server's concurrency guard: backpressure, not an outage. It clears as soon as a query finishes, so serving the last good payload (the `cache` action of RATE_LIMITED) fits better than skipping memory, and nothing should open a circuit on it |
 * | 429 | rate_limited | `retry_after` (s) from the body, else `Retry-After`, else `X-RateLimit-Reset`, else 1 s |
 * | 400, 413, 422 | invalid_query | the request (the query) was rejected |
 * | 404 with a JSON body (`{"err":"nf"}`) | not_found | |
 * | 404 with a non-JSON body (`404: Not Found`: no such route) | unavailable | a wrong `OPENMEMORY_URL`, not an unknown user; reporting it as not_found would silently turn an outage into "no memories" |
 * | 401, 403 (`invalid_api_key`, `tenant_mismatch`, …) | unavailable | operator misconfiguration (key, or user scoping style), never the caller's fault |
 * | any other status, or a 2xx body that is not the expected JSON | unavailable | |
 *
 * Messages name the operation, the status and the server's error code (only when it is a short identifier);
 * never the API key, the query, memory contents or free text from the server.
 */
import { BodyTooLargeError } from "../body";
import { parseUpstreamJson } from "../json";
import { BackendError, type BackendErrorKind } from "../types";
import { RedirectRefusedError } from "../upstream";

export const OVERLOAD_RETRY_AFTER_MS = 1000;
export const DEFAULT_RETRY_AFTER_MS = 1000;

const CODE_RE = /^[A-Za-z][A-Za-z0-9_.-]{0,63}$/;
const OVERLOAD_RE = /^Rate limit: \d+ active queries/;

function fail(
  kind: BackendErrorKind,
  message: string,
  extra: { status?: number; retryAfterMs?: number; cause?: unknown; oversized?: boolean } = {},
) {
  return new BackendError({ kind, backend: "openmemory", message: `OpenMemory ${message}`, ...extra });
}

function parseJson(text: string): unknown {
  const parsed = parseUpstreamJson(text);
  return parsed.ok ? parsed.value : undefined;
}

function field(body: unknown, key: string): unknown {
  return typeof body === "object" && body !== null && !Array.isArray(body)
    ? (body as Record<string, unknown>)[key]
    : undefined;
}

/** The server's error code (`error` or `err`), when it is a short identifier safe to log. */
function errorCode(body: unknown): string | undefined {
  const code = field(body, "error") ?? field(body, "err");
  return typeof code === "string" && CODE_RE.test(code) ? code : undefined;
}

function positiveMs(ms: number): number | undefined {
  return Number.isFinite(ms) && ms > 0 ? Math.ceil(ms) : undefined;
}

/** Seconds (number or numeric string) → ms. */
function secondsToMs(v: unknown): number | undefined {
  const n = typeof v === "number" ? v : typeof v === "string" && v.trim() !== "" ? Number(v) : Number.NaN;
  return positiveMs(n * 1000);
}

/**
 * Response headers: a fetch `Headers`, or the plain object `undici.request` gives (lower-case names; a repeated
 * header is an array).
 */
export type ResponseHeaders = Headers | Readonly<Record<string, string | string[] | undefined>>;

/** One header's value as `Headers.get` gives it: null when absent, repeated values joined with ", ". */
function headerValue(headers: ResponseHeaders, name: string): string | null {
  // Not `instanceof Headers`: a Headers from another realm (a test sandbox, another undici) must work too.
  if (typeof headers.get === "function") return (headers as Headers).get(name);
  const v = (headers as Readonly<Record<string, string | string[] | undefined>>)[name];
  if (v === undefined) return null;
  return typeof v === "string" ? v : v.length === 0 ? null : v.join(", ");
}

/** How long a 429 asks us to wait, in ms (always > 0). */
export function retryAfterMs(body: unknown, headers: ResponseHeaders, now = Date.now()): number {
  const fromBody = secondsToMs(field(body, "retry_after"));
  if (fromBody !== undefined) return fromBody;
  const header = headerValue(headers, "retry-after");
  if (header !== null) {
    const secs = secondsToMs(header);
    if (secs !== undefined) return secs;
    const date = positiveMs(Date.parse(header) - now);
    if (date !== undefined) return date;
  }
  const reset = Number(headerValue(headers, "x-ratelimit-reset") ?? Number.NaN);
  // Either an epoch in seconds or a delay in seconds; 1e9 s is 2001, far beyond any sane delay.
  const fromReset = reset > 1e9 ? positiveMs(reset * 1000 - now) : secondsToMs(reset);
  return fromReset ?? DEFAULT_RETRY_AFTER_MS;
}

/** Classifies a non-2xx answer. `op` names the call ("query", "health"). */
export function errorFromResponse(
  op: string,
  status: number,
  bodyText: string,
  headers: ResponseHeaders,
): BackendError {
  const body = parseJson(bodyText);
  const code = errorCode(body);
  const what = `${op} failed: HTTP ${status}${code === undefined ? "" : ` ${code}`}`;

  if (status === 429) {
    return fail("rate_limited", what, { status, retryAfterMs: retryAfterMs(body, headers) });
  }
  if (status >= 500) {
    const message = field(body, "message");
    if (code === "query_failed" && typeof message === "string" && OVERLOAD_RE.test(message)) {
      return fail("rate_limited", `${what} (too many concurrent queries)`, {
        status,
        retryAfterMs: OVERLOAD_RETRY_AFTER_MS,
      });
    }
    return fail("unavailable", what, { status });
  }
  if (status === 401 || status === 403) {
    const hint =
      code === "tenant_mismatch"
        ? "the server derives the user from the API key: use userScoping api_key"
        : "check the OpenMemory API key";
    return fail("unavailable", `${what} (${hint})`, { status });
  }
  if (status === 404) {
    return body === undefined
      ? fail("unavailable", `${what} (no such route: check the OpenMemory base URL)`, { status })
      : fail("not_found", what, { status });
  }
  if (status === 400 || status === 413 || status === 422) return fail("invalid_query", what, { status });
  return fail("unavailable", what, { status });
}

/**
 * Classifies a thrown request/body-read error: fetch's (`TypeError("fetch failed")` whose `cause` carries the
 * code) or `undici.request`'s (the undici or socket error itself, with its `code`; the signal's reason on abort).
 * Whatever the error, a fired signal decides: the reason's name tells a timeout from a caller abort.
 */
export function errorFromThrown(op: string, err: unknown, signal: AbortSignal): BackendError {
  if (err instanceof BodyTooLargeError)
    return fail("unavailable", `${op}: ${err.message}`, { cause: err, oversized: true });
  if (err instanceof RedirectRefusedError)
    return fail("unavailable", `${op} failed: redirect refused (HTTP ${err.status})`, { cause: err });
  if (signal.aborted) {
    // By name, not `instanceof Error`: the reason of `AbortSignal.timeout` is a DOMException from another realm
    // under jest (not an instance of the test's `Error`).
    const timedOut = field(signal.reason, "name") === "TimeoutError";
    return fail("unavailable", `${op} ${timedOut ? "timed out" : "aborted"}`, { cause: err });
  }
  const cause = field(err, "cause");
  const sysCode = field(err, "code") ?? field(cause, "code");
  const detail = typeof sysCode === "string" && CODE_RE.test(sysCode) ? ` (${sysCode})` : "";
  return fail("unavailable", `${op} failed: network error${detail}`, { cause: err });
}

export function malformedBody(op: string, reason: string, status: number): BackendError {
  return fail("unavailable", `${op} answered HTTP ${status} with a malformed body: ${reason}`, { status });
}
