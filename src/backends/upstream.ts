/**
 * The one way memgate calls an upstream memory service on its own behalf: every backend call (Zep's searches and
 * the SDK's `user.get`/`project.get` through ./zep/fetcher.ts, every OpenMemory call) and the Zep door's writes.
 * (The transparent proxy, src/compat/proxy.ts, streams the caller's own exchange and passes a 3xx back as it is.)
 *
 * What every call gets here, written once:
 * - **No redirect is followed.** A 301/302/303/307/308 answer is drained (its connection goes back to the pool)
 *   and refused with `RedirectRefusedError`: following one would send the tenant's key to wherever it points,
 *   or make memgate request any address a hostile upstream names (blind SSRF with a yes/no oracle). Callers
 *   classify it as the backend being unavailable. Other 3xx (300, 304) are plain non-2xx answers.
 * - **A bounded read.** The answer is read up to 8 MiB of decoded text (./body.ts); over it the stream is
 *   destroyed and `BodyTooLargeError` thrown. A compressed answer (`content-encoding` gzip, deflate, br) is
 *   decoded before the bound applies, so a small compressed answer cannot inflate past it.
 * - **`user-agent: memgate`**, whatever the caller (or an SDK) set: undici.request sends none of its own.
 * - An already aborted signal sends nothing (as fetch); the signal aborts the exchange and the body read.
 * - **memgate's own CLIENT span** (../telemetry/http-client.ts: the HTTP semantic conventions' attributes, URLs as
 *   templates, `http.client.request.duration`) with `traceparent` (and `baggage`) out, naming it; it ends when the
 *   answer is read or the call failed. (Not the OpenTelemetry undici instrumentation, which memgate no longer
 *   installs: 11–19 % of the Zep adapter's CPU, issue 29.)
 * Over `undici.request` (about a third to a half of the global `fetch`'s CPU per call).
 */
import type { IncomingHttpHeaders } from "node:http";
import { pipeline, type Transform } from "node:stream";
import { createBrotliDecompress, createGunzip, createInflate, constants as zlibConstants } from "node:zlib";
import { type Dispatcher, getGlobalDispatcher, request } from "undici";
import { ClientCall } from "../telemetry/http-client";
import { MAX_UPSTREAM_BODY_BYTES, readBoundedText } from "./body";

export const USER_AGENT = "memgate";
/** The redirecting statuses (those fetch would follow): refused, never followed. */
export const REDIRECT_STATUSES: ReadonlySet<number> = new Set([301, 302, 303, 307, 308]);
/** Sent by callers whose upstream compresses its JSON answers for callers that accept it (Zep Cloud). */
export const ACCEPT_ENCODING = "gzip, deflate, br";

export class RedirectRefusedError extends Error {
  constructor(readonly status: number) {
    super(`unexpected redirect (HTTP ${status})`);
    this.name = "RedirectRefusedError";
  }
}

/** A response's headers, read as fetch's `Headers` are (`get`, case-insensitive; repeated values joined). */
export class AnswerHeaders {
  constructor(readonly raw: IncomingHttpHeaders) {}
  get(name: string): string | null {
    const value = this.raw[name.toLowerCase()];
    if (value === undefined) return null;
    return Array.isArray(value) ? value.join(", ") : value;
  }
  /** The same headers as a fetch `Headers` (for an SDK's raw response). */
  toHeaders(): Headers {
    const out = new Headers();
    for (const [name, value] of Object.entries(this.raw)) {
      for (const v of Array.isArray(value) ? value : value === undefined ? [] : [value]) out.append(name, v);
    }
    return out;
  }
}

export interface UpstreamRequest {
  url: string;
  method: string;
  /** The caller's headers; any `user-agent` among them (whatever its case) is replaced by memgate's. */
  headers: Record<string, string>;
  /** Already serialized. */
  body?: string;
  signal: AbortSignal;
  /** The keep-alive pool to call through (a backend instance's own); default undici's process-wide one. */
  dispatcher?: Dispatcher;
  limitBytes?: number;
}

export interface UpstreamAnswer {
  status: number;
  headers: AnswerHeaders;
  /** The decoded text, at most `limitBytes` bytes. */
  body: string;
}

/** A decoder for the answer's `content-encoding` (one coding, as fetch decodes them); undefined: read as it is. */
function decoderFor(encoding: string | null): Transform | undefined {
  switch (encoding?.trim().toLowerCase()) {
    case "gzip":
    case "x-gzip":
      return createGunzip({ flush: zlibConstants.Z_SYNC_FLUSH, finishFlush: zlibConstants.Z_SYNC_FLUSH });
    case "deflate":
      return createInflate();
    case "br":
      return createBrotliDecompress();
    default:
      return undefined;
  }
}

function withUserAgent(headers: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers))
    if (name.toLowerCase() !== "user-agent") out[name] = value;
  out["user-agent"] = USER_AGENT;
  return out;
}

/**
 * One buffered exchange (see the top of this file): the answer as it came, any status but a redirect. Throws the
 * signal's reason, undici's network errors, `RedirectRefusedError` or `BodyTooLargeError`; callers classify.
 */
export async function callUpstream(req: UpstreamRequest): Promise<UpstreamAnswer> {
  req.signal.throwIfAborted();
  const headers = withUserAgent(req.headers);
  // memgate's own CLIENT span and `http.client.request.duration`; `traceparent` goes out in `headers`.
  const call = ClientCall.start(req.method, req.url, headers);
  try {
    const res = await request(req.url, {
      dispatcher: req.dispatcher ?? getGlobalDispatcher(),
      method: req.method as Dispatcher.HttpMethod,
      headers,
      body: req.body,
      signal: req.signal,
    });
    call.answered(res.statusCode);
    if (REDIRECT_STATUSES.has(res.statusCode)) {
      await res.body.dump().catch(() => undefined);
      throw new RedirectRefusedError(res.statusCode);
    }
    const answerHeaders = new AnswerHeaders(res.headers);
    const decoder = decoderFor(answerHeaders.get("content-encoding"));
    const stream = decoder === undefined ? res.body : pipeline(res.body, decoder, () => undefined);
    const body = await readBoundedText(
      stream,
      () => {
        res.body.destroy();
        decoder?.destroy();
      },
      req.limitBytes ?? MAX_UPSTREAM_BODY_BYTES,
    );
    call.end();
    return { status: res.statusCode, headers: answerHeaders, body };
  } catch (err) {
    call.end(err, req.signal.aborted);
    throw err;
  }
}
