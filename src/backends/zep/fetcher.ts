/**
 * The HTTP layer plugged into `ZepClient` through its documented `fetcher` option. The SDK still builds every
 * request (URL, auth and Fern headers, serialization), parses answers and throws its own error classes; this
 * replaces only its transport, because the SDK's own one (3.30.0 `makeRequest`) arms a plain `setTimeout` of
 * `timeoutInSeconds` and clears it only when a response arrives: after every timeout, abort or network error
 * the timer stays armed, holding the event loop open for the full safety-net time (30 s) — a shutdown delay,
 * thousands of live timers during an outage, and test runs that hang.
 *
 * Behaviour kept from the SDK's fetcher: the same `APIResponse` results (`status-code`, `non-json`, `timeout`,
 * `unknown` with "The user aborted a request" when the caller's signal fired), error bodies parsed as JSON when
 * the content type says so and as text otherwise. Differences: the time limit is an `AbortSignal.timeout`
 * (unref'd, gone with the call), and there are no retries (`maxRetries` is ignored: the adapter passes 0).
 */
import type { ZepClient } from "@getzep/zep-cloud";
import { BodyTooLargeError, readResponseText } from "../body";
import { unsafePathReason } from "../upstream-path";

type ClientOptions = NonNullable<ConstructorParameters<typeof ZepClient>[0]>;
type FetchFunction = NonNullable<ClientOptions["fetcher"]>;
type FetcherArgs = Parameters<FetchFunction>[0];
type ApiResponse = Awaited<ReturnType<FetchFunction>>;
type RawResponse = ApiResponse["rawResponse"];

const JSON_TYPES = /^(application\/(json|hal\+json|ld\+json|problem\+json|vnd\..+\+json)|text\/json)$/;

function rawOf(response: Response): RawResponse {
  const { headers, redirected, status, statusText, type, url } = response;
  return { headers, redirected, status, statusText, type, url };
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

function parseJson(text: string): { ok: true; value: unknown } | { ok: false } {
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch {
    return { ok: false };
  }
}

/** An error answer's body: JSON when the content type says JSON (or says nothing and it parses), else text. */
async function errorBody(response: Response): Promise<unknown> {
  const text = await readResponseText(response);
  const contentType = (response.headers.get("content-type") ?? "").split(";")[0]?.trim().toLowerCase() ?? "";
  if (contentType !== "" && !JSON_TYPES.test(contentType)) return text;
  if (text === "") return undefined;
  const parsed = parseJson(text);
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
  try {
    const response = await fetch(requestUrl(args), {
      method: args.method,
      headers: await resolveHeaders(args),
      body: args.body === undefined ? undefined : JSON.stringify(args.body),
      signal: signals.length === 0 ? null : AbortSignal.any(signals),
    });
    const rawResponse = rawOf(response);
    if (response.status < 200 || response.status >= 400) {
      const body = await errorBody(response);
      return { ok: false, error: { reason: "status-code", statusCode: response.status, body }, rawResponse };
    }
    const text = await readResponseText(response);
    if (text === "") return { ok: true, body: undefined, rawResponse };
    const parsed = parseJson(text);
    if (parsed.ok) return { ok: true, body: parsed.value, rawResponse };
    return {
      ok: false,
      error: { reason: "non-json", statusCode: response.status, rawBody: text },
      rawResponse,
    };
  } catch (err) {
    if (err instanceof BodyTooLargeError) {
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
