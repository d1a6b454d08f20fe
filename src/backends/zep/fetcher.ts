/**
 * The HTTP layer plugged into `ZepClient` through its documented `fetcher` option: the one upstream call helper
 * (../upstream.ts: no redirect followed, the answer read up to 8 MiB, `user-agent: memgate`). Before it, this
 * used the global `fetch`, which follows redirects: a 307 on the existence check (`GET /users/{id}`) made memgate
 * request any address, a same-origin 302 sent the tenant's key to any path (issue 26, finding 4). The SDK still builds every
 * request (URL, auth and Fern headers, serialization), parses answers and throws its own error classes; this
 * replaces only its transport, because the SDK's own one (3.30.0 `makeRequest`) arms a plain `setTimeout` of
 * `timeoutInSeconds` and clears it only when a response arrives: after every timeout, abort or network error
 * the timer stays armed, holding the event loop open for the full safety-net time (30 s) — a shutdown delay,
 * thousands of live timers during an outage, and test runs that hang.
 *
 * Behaviour kept from the SDK's fetcher: the same `APIResponse` results (`status-code`, `non-json`, `timeout`,
 * `unknown` with "The user aborted a request" when the caller's signal fired), error bodies parsed as JSON when
 * the content type says so and as text otherwise. Differences: the time limit is an `AbortSignal.timeout`
 * (unref'd, gone with the call), there are no retries (`maxRetries` is ignored: the adapter passes 0), a redirect
 * is an `unknown` failure ("unexpected redirect (HTTP 307)"), and the user-agent is memgate's.
 */
import type { ZepClient } from "@getzep/zep-cloud";
import { BodyTooLargeError } from "../body";
import { parseUpstreamJson } from "../json";
import { ACCEPT_ENCODING, callUpstream, RedirectRefusedError, type UpstreamAnswer } from "../upstream";
import { unsafePathReason } from "../upstream-path";

type ClientOptions = NonNullable<ConstructorParameters<typeof ZepClient>[0]>;
type FetchFunction = NonNullable<ClientOptions["fetcher"]>;
type FetcherArgs = Parameters<FetchFunction>[0];
type ApiResponse = Awaited<ReturnType<FetchFunction>>;
type RawResponse = ApiResponse["rawResponse"];

const JSON_TYPES = /^(application\/(json|hal\+json|ld\+json|problem\+json|vnd\..+\+json)|text\/json)$/;

function rawOf(answer: UpstreamAnswer, url: string): RawResponse {
  return {
    headers: answer.headers.toHeaders(),
    redirected: false,
    status: answer.status,
    statusText: "",
    type: "basic",
    url,
  };
}

function failedRaw(status: number, statusText: string): RawResponse {
  return { headers: new Headers(), redirected: false, status, statusText, type: "error", url: "" };
}

async function resolveHeaders(args: FetcherArgs): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  if (args.body !== undefined && args.contentType != null) out["Content-Type"] = args.contentType;
  for (const [name, supplier] of Object.entries(args.headers ?? {})) {
    const value = typeof supplier === "function" ? await supplier() : await supplier;
    if (value != null) out[name] = String(value);
  }
  return out;
}

function requestUrl(args: FetcherArgs): string {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(args.queryParameters ?? {})) {
    for (const v of Array.isArray(value) ? value : [value]) {
      if (v != null) params.append(key, typeof v === "string" ? v : JSON.stringify(v));
    }
  }
  const query = params.toString();
  return query === "" ? args.url : `${args.url}${args.url.includes("?") ? "&" : "?"}${query}`;
}

/** An error answer's body: JSON when the content type says JSON (or says nothing and it parses), else text. */
function errorBody(answer: UpstreamAnswer): unknown {
  const text = answer.body;
  const contentType = (answer.headers.get("content-type") ?? "").split(";")[0]?.trim().toLowerCase() ?? "";
  if (contentType !== "" && !JSON_TYPES.test(contentType)) return text;
  if (text === "") return undefined;
  const parsed = parseUpstreamJson(text);
  return parsed.ok ? parsed.value : text;
}

async function fetchOnce(args: FetcherArgs): Promise<ApiResponse> {
  // The one guard of every upstream URL (../upstream-path.ts), on the path the SDK built.
  const unsafe = unsafePathReason(args.url.replace(/^[A-Za-z][A-Za-z0-9+.-]*:\/\/[^/?#]*/, "") || "/");
  if (unsafe !== undefined) {
    const error = { reason: "unknown", errorMessage: `unsafe upstream path (${unsafe})` } as const;
    return { ok: false, error, rawResponse: failedRaw(0, "Unknown Error") };
  }
  const timeout = args.timeoutMs == null ? undefined : AbortSignal.timeout(args.timeoutMs);
  const signals = [args.abortSignal, timeout].filter((s): s is AbortSignal => s !== undefined);
  const url = requestUrl(args);
  try {
    const headers = await resolveHeaders(args);
    headers["accept-encoding"] = ACCEPT_ENCODING;
    const answer = await callUpstream({
      url,
      method: args.method,
      headers,
      ...(args.body === undefined ? {} : { body: JSON.stringify(args.body) }),
      signal: signals.length === 0 ? new AbortController().signal : AbortSignal.any(signals),
    });
    const rawResponse = rawOf(answer, url);
    if (answer.status < 200 || answer.status >= 400) {
      const body = errorBody(answer);
      return { ok: false, error: { reason: "status-code", statusCode: answer.status, body }, rawResponse };
    }
    if (answer.body === "") return { ok: true, body: undefined, rawResponse };
    const parsed = parseUpstreamJson(answer.body);
    if (parsed.ok) return { ok: true, body: parsed.value, rawResponse };
    return {
      ok: false,
      error: { reason: "non-json", statusCode: answer.status, rawBody: answer.body },
      rawResponse,
    };
  } catch (err) {
    if (err instanceof BodyTooLargeError || err instanceof RedirectRefusedError) {
      // No status: the SDK throws a ZepError without one, which ./errors.ts classifies by this message.
      const error = { reason: "unknown", errorMessage: err.message } as const;
      return { ok: false, error, rawResponse: failedRaw(502, "Bad Gateway") };
    }
    if (args.abortSignal?.aborted) {
      const error = { reason: "unknown", errorMessage: "The user aborted a request" } as const;
      return { ok: false, error, rawResponse: failedRaw(499, "Client Closed Request") };
    }
    if (timeout?.aborted)
      return { ok: false, error: { reason: "timeout" }, rawResponse: failedRaw(499, "Timeout") };
    const errorMessage = err instanceof Error ? err.message : String(err);
    return {
      ok: false,
      error: { reason: "unknown", errorMessage },
      rawResponse: failedRaw(0, "Unknown Error"),
    };
  }
}

/** The transport given to `new ZepClient({ fetcher })`. */
export const zepFetcher = fetchOnce as FetchFunction;
