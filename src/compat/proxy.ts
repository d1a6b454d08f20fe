/**
 * The transparent half of the drop-in compatibility (docs/adopting.md#the-proxy): a request the gateway does not shape goes to
 * the tenant's own upstream unchanged, and the upstream's answer comes back unchanged.
 *
 * - Methods: GET, HEAD, POST, PUT, PATCH and DELETE (what the Zep and OpenMemory APIs use); any other (TRACE,
 *   OPTIONS, WebDAV's, made-up ones) is refused with 405 and `Allow`, never forwarded.
 * - Credentials: the caller's memgate key (`Authorization`, `x-api-key`) never leaves the gateway; the tenant's
 *   own upstream credential is set instead. Cookies, `x-memgate-*` headers, `Host`, `Expect`, the hop-by-hop
 *   headers (RFC 9110 §7.6.1, plus any named in `Connection`) and the caller's own claims about where the request
 *   came from (`Forwarded`, `X-Forwarded-*`, `X-Real-IP`, `True-Client-IP`, …: anyone can write them) are
 *   dropped; everything else is forwarded.
 * - Answers: the upstream's headers come back but for the ones that are the gateway's to decide: cookies
 *   (`Set-Cookie` would set them on the gateway's origin), CORS (`Access-Control-*`), the security headers the
 *   gateway sets on every answer (CSP, `X-Frame-Options`, HSTS, `X-Content-Type-Options`, …) and `Alt-Svc`.
 * - Bodies are streamed both ways (node:http/https, no buffering, no size limit of the gateway's own): request
 *   bytes are piped to the upstream as they arrive, response bytes (still compressed, if they were) to the caller.
 * - Status codes, content type and error bodies are passed through as they are, 4xx and 5xx included: a caller
 *   of a transparent route expects the upstream's own answer, not a memgate fallback.
 * - Redirects are not followed (a 3xx is passed through like any other answer).
 * - The gateway answers for itself only when no upstream answer exists: 502 problem+json (`UPSTREAM_UNREACHABLE`)
 *   when the upstream cannot be reached, 504 (`UPSTREAM_TIMEOUT`) after `timeoutMs` (default 30 s) without any
 *   upstream activity or past `deadlineMs` (`MEMGATE_PROXY_DEADLINE_MS`, default 120 s) for the whole exchange.
 *   An upstream that fails after its answer started, or is still answering at the deadline (one byte at a time
 *   keeps the idle timeout from firing), is cut off (the caller sees a reset).
 *   This differs on purpose from the shaped routes, where a failing backend yields the policy's fallback.
 * - A request the upstream could read as one of the doors' shaped routes (`POST /graph/search`, `POST /memory/query`,
 *   …: ./shaped-routes.ts) is refused (400): the edge already made its path canonical (src/http/canonical-path.ts).
 * - Only origin-form targets are forwarded, and paths with `.` or `..` segments, backslashes or slashes inside
 *   a segment (also percent-encoded, once or twice) are refused (400): they could otherwise step out of the
 *   upstream's base path (e.g. out of `/api/v2`); see `assertSafePath`.
 */
import { request as httpRequest, type IncomingHttpHeaders, type OutgoingHttpHeaders } from "node:http";
import { request as httpsRequest } from "node:https";
import { pipeline } from "node:stream";
import type { NextFunction, Request, Response } from "express";
import { unsafePathReason } from "../backends/upstream-path";
import { HttpProblem } from "../http/errors";
import type { Logger } from "../logging/logger";
import { refuseShapedAlias } from "./shaped-routes";

/** Upstream sockets that already carry the late-error guard (`proxy`, below). */
const guardedSockets = new WeakSet<object>();

export const DEFAULT_PROXY_TIMEOUT_MS = 30_000;
export const DEFAULT_PROXY_DEADLINE_MS = 120_000;

/** The methods proxied; any other is refused (405) with this list as `Allow`. */
export const PROXIED_METHODS: readonly string[] = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"];

export interface ProxyTarget {
  /** The upstream URL for this request (path and query string included). */
  url: URL;
  /** Headers that carry the tenant's credential, e.g. `{ authorization: "Api-Key …" }`. */
  credential: Record<string, string>;
  /** For messages and logs: "Zep", "OpenMemory". */
  label: string;
  timeoutMs?: number;
  /** The whole exchange, the answer's last byte included (default `DEFAULT_PROXY_DEADLINE_MS`). */
  deadlineMs?: number;
  logger: Logger;
  /** Awaited with the upstream's status before its answer is passed on (a write's cache invalidation: ./invalidate.ts). */
  beforeAnswer?: (status: number) => Promise<void>;
}

const HOP_BY_HOP: ReadonlySet<string> = new Set([
  "connection",
  "keep-alive",
  "proxy-authenticate",
  "proxy-authorization",
  "proxy-connection",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade",
]);
/** Request headers never forwarded besides the hop-by-hop ones (and every `x-forwarded-*`, `x-memgate-*`). */
const NOT_FORWARDED: ReadonlySet<string> = new Set([
  "host",
  "authorization",
  "x-api-key",
  "cookie",
  "expect",
  // Where the request came from, as the caller claims it.
  "forwarded",
  "via",
  "x-real-ip",
  "true-client-ip",
  "x-client-ip",
  "x-cluster-client-ip",
  "cf-connecting-ip",
  "fastly-client-ip",
  "x-original-forwarded-for",
]);
/** Response headers the gateway keeps its own values of (or none), besides every `access-control-*`. */
const NOT_RETURNED: ReadonlySet<string> = new Set([
  "x-request-id",
  "set-cookie",
  "set-cookie2",
  "content-security-policy",
  "content-security-policy-report-only",
  "x-frame-options",
  "x-content-type-options",
  "strict-transport-security",
  "referrer-policy",
  "permissions-policy",
  "cross-origin-opener-policy",
  "cross-origin-embedder-policy",
  "cross-origin-resource-policy",
  "origin-agent-cluster",
  "x-dns-prefetch-control",
  "x-download-options",
  "x-permitted-cross-domain-policies",
  "x-xss-protection",
  "x-powered-by",
  "alt-svc",
  "clear-site-data",
]);

function connectionListed(headers: IncomingHttpHeaders): Set<string> {
  const value = headers.connection;
  const listed = Array.isArray(value) ? value.join(",") : (value ?? "");
  return new Set(
    listed
      .split(",")
      .map((h) => h.trim().toLowerCase())
      .filter((h) => h !== ""),
  );
}

/** The headers sent upstream: the caller's, minus credentials and hop-by-hop ones, plus the tenant's credential. */
export function forwardHeaders(
  incoming: IncomingHttpHeaders,
  credential: Record<string, string>,
): OutgoingHttpHeaders {
  const listed = connectionListed(incoming);
  const out: OutgoingHttpHeaders = {};
  for (const [name, value] of Object.entries(incoming)) {
    const lower = name.toLowerCase();
    if (value === undefined || HOP_BY_HOP.has(lower) || NOT_FORWARDED.has(lower) || listed.has(lower))
      continue;
    if (lower.startsWith("x-memgate-") || lower.startsWith("x-forwarded-")) continue;
    out[lower] = value;
  }
  for (const [name, value] of Object.entries(credential)) out[name.toLowerCase()] = value;
  return out;
}

/** The headers returned to the caller: the upstream's, minus hop-by-hop ones and the gateway's own. */
export function returnHeaders(incoming: IncomingHttpHeaders): Array<[string, string | string[]]> {
  const listed = connectionListed(incoming);
  const out: Array<[string, string | string[]]> = [];
  for (const [name, value] of Object.entries(incoming)) {
    const lower = name.toLowerCase();
    if (value === undefined || HOP_BY_HOP.has(lower) || NOT_RETURNED.has(lower) || listed.has(lower))
      continue;
    if (lower.startsWith("access-control-")) continue;
    out.push([lower, value]);
  }
  return out;
}

/**
 * Throws a 400 unless `pathAndQuery` is an origin-form target ("/…": an absolute-form request target such as
 * `http://evil.example/api/v2/x` would be glued onto the upstream's base path) whose path (before `?`) has no
 * dot segment, no backslash and no slash inside a segment — raw, percent-encoded ("..%2f", "%2e%2e") or
 * encoded twice ("%252e%252e", which an upstream that decodes again would read as ".."): any of them could
 * step out of the upstream's base path (e.g. out of `/api/v2`).
 */
export function assertSafePath(pathAndQuery: string): void {
  // The one guard of every upstream URL (src/backends/upstream-path.ts).
  const reason = unsafePathReason(pathAndQuery);
  if (reason !== undefined) throw new HttpProblem("VALIDATION_FAILED", reason);
}

/** `base` (no trailing slash kept) + `pathAndQuery` (starting with "/"), after `assertSafePath`. */
export function joinUrl(base: string, pathAndQuery: string): URL {
  assertSafePath(pathAndQuery);
  return new URL(`${base.replace(/\/+$/, "")}${pathAndQuery}`);
}

class ProxyTimeout extends Error {
  constructor() {
    super("upstream timeout");
    this.name = "ProxyTimeout";
  }
}

/** Forwards `req` to `target` and streams the answer to `res` (see the top of this file). */
export function proxy(req: Request, res: Response, next: NextFunction, target: ProxyTarget): void {
  // Never a shaped route's data unshaped, whatever the upstream's router reads (./shaped-routes.ts).
  refuseShapedAlias(req.method, req.originalUrl);
  const send = target.url.protocol === "https:" ? httpsRequest : httpRequest;
  const timeoutMs = target.timeoutMs ?? DEFAULT_PROXY_TIMEOUT_MS;
  const deadlineMs = target.deadlineMs ?? DEFAULT_PROXY_DEADLINE_MS;
  // The HTTP span's route (src/telemetry/access-log.ts) is the proxy's mount path (`/api/v2`, `/memory`): the rest of
  // a proxied path may hold ids. Lower-cased: routing ignores case, and a label must not take one value per spelling.
  res.locals.httpRoute = req.baseUrl.toLowerCase();
  if (!PROXIED_METHODS.includes(req.method)) {
    req.resume();
    next(
      new HttpProblem("METHOD_NOT_ALLOWED", `method: ${req.method} is not proxied`, {
        allow: PROXIED_METHODS.join(", "),
      }),
    );
    return;
  }
  const upstream = send(target.url, {
    method: req.method,
    headers: forwardHeaders(req.headers, target.credential),
  });
  let answered = false;
  upstream.setTimeout(timeoutMs, () => upstream.destroy(new ProxyTimeout()));
  // The whole exchange: an upstream trickling bytes never lets the idle timeout fire.
  const deadline = setTimeout(() => {
    if (answered) {
      target.logger.warn({ upstream: target.label, reason: "deadline" }, "proxied answer cut off");
      upstream.destroy();
      res.destroy();
    } else upstream.destroy(new ProxyTimeout());
  }, deadlineMs);
  deadline.unref();
  // One 'close' listener for the exchange: the deadline ends, and a client gone before its answer ends the upstream
  // call. The response already carries the edge's (span, access log, pipelining) and stream.pipeline's own; over
  // Node's 10 it would print a "possible memory leak" warning per proxied request (test/compat/zep.proxy.test.ts).
  res.once("close", () => {
    clearTimeout(deadline);
    if (!res.writableFinished) upstream.destroy();
  });
  // The request reports socket errors while it owns the socket; one arriving after that (the request already
  // failed or finished) must not become an unhandled 'error' event that takes the process down.
  // Once per socket: the agent reuses kept-alive sockets, and a guard added per request would pile up on them.
  upstream.on("socket", (socket) => {
    if (guardedSockets.has(socket)) return;
    guardedSockets.add(socket);
    socket.on("error", () => undefined);
  });

  upstream.on("response", (answer) => {
    answered = true;
    const passOn = () => {
      res.status(answer.statusCode ?? 502);
      for (const [name, value] of returnHeaders(answer.headers)) res.setHeader(name, value);
      pipeline(answer, res, (err) => {
        if (err) {
          target.logger.warn({ upstream: target.label, error: err.name }, "proxied answer cut off");
          upstream.destroy();
        }
      });
    };
    if (target.beforeAnswer === undefined) return passOn();
    target
      .beforeAnswer(answer.statusCode ?? 502)
      .catch(() => undefined)
      .finally(passOn);
  });

  upstream.on("error", (err) => {
    if (answered || res.headersSent || res.destroyed) {
      res.destroy();
      return;
    }
    const timedOut = err instanceof ProxyTimeout;
    target.logger.warn(
      { upstream: target.label, reason: timedOut ? "timeout" : "unreachable", error: err.name },
      "proxied request failed",
    );
    req.unpipe(upstream);
    req.resume();
    next(
      timedOut
        ? new HttpProblem("UPSTREAM_TIMEOUT", `${target.label} did not answer in time`)
        : new HttpProblem("UPSTREAM_UNREACHABLE", `${target.label} could not be reached`),
    );
  });

  req.pipe(upstream);
}
