/**
 * The HTTP server span and the `http.server.request.duration` metric of every request, made by memgate itself as
 * the app's first middleware (src/http/app.ts), with the attributes and names of the HTTP semantic conventions:
 *
 *   span    `POST /v1/retrieve` (method and matched route; the method alone when nothing matched), kind SERVER,
 *           child of the caller's W3C trace context (OTEL_PROPAGATORS); `http.request.method`, `url.scheme`,
 *           `url.path` (a template, src/telemetry/redact.ts), `url.query` (parameter names only),
 *           `server.address`/`server.port` (the Host header), `network.protocol.version`, `network.peer.*`,
 *           `user_agent.original`, then `http.response.status_code` and `http.route`; status ERROR for a 5xx or a
 *           failed response.
 *   metric  `http.server.request.duration` (s; Prometheus `http_server_request_duration_seconds`) by
 *           `http.request.method`, `url.scheme`, `network.protocol.version`, `http.response.status_code`,
 *           `http.route` (only when a route matched: an unmatched path never becomes a label) and `error.type`
 *           (5xx); `http.server.active_requests` (Prometheus `http_server_active_requests`, the in-flight
 *           gauge) by `http.request.method` and `url.scheme`.
 *
 * Probes and scrapes (`/healthz`, `/readyz`, `/metrics`) get neither, and what they call (a readiness ping)
 * is not traced.
 *
 * Why not @opentelemetry/instrumentation-http, which did this before: it patches `http.Server#emit` and, per
 * request, computes its attributes through generic helpers, wraps every call in `safeExecuteInTheMiddle`, and
 * binds both the request and the response emitters to the context — 136 µs of CPU of a ~500 µs cache hit in
 * `npm run bench -- zep` (issue 16). This does the same work directly, and binds no emitter. The outgoing side (backends, Redis) stays
 * with the undici and ioredis instrumentations (./instrumentations.ts).
 */
import { errorMonitor } from "node:events";
import { type IncomingMessage, type ServerResponse, STATUS_CODES } from "node:http";
import { performance } from "node:perf_hooks";
import {
  type Attributes,
  type Context,
  context,
  propagation,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  SpanStatusCode,
  trace,
} from "@opentelemetry/api";
import { suppressTracing } from "@opentelemetry/core";
import { localsOf, type Middleware } from "../http/plain";
import { semconvMethod } from "./http-method";
import { recordActiveRequest, recordHttpServerDuration } from "./metrics";
import { safePath, safeQuery, splitUrl } from "./redact";
import { TRACER_NAME } from "./tracing";

/** Probes and scrapes: every few seconds, never interesting as traces. */
export const UNTRACED_PATHS: ReadonlySet<string> = new Set(["/healthz", "/readyz", "/metrics"]);

/** What Express adds to a request it routed: the matched route and the mount path of its router. */
type Routed = IncomingMessage & { route?: { path?: unknown }; baseUrl?: string };

/**
 * The matched route template: the route's path (`/v1/retrieve`, `/memory/:id`; an array of paths joined by
 * commas) under its router's mount path; or what a handler set in `res.locals.httpRoute`. None when nothing
 * matched (a 404).
 */
export function routeOf(req: Routed, res: ServerResponse): string | undefined {
  const set = localsOf(res).httpRoute;
  if (set !== undefined) return set;
  const path: unknown = req.route?.path;
  const base = req.baseUrl ?? "";
  if (typeof path === "string") return `${base}${path}`;
  if (Array.isArray(path) && path.every((p) => typeof p === "string")) return `${base}${path.join(",")}`;
  return undefined;
}

/** Host headers split before (a client sends the same one on every request), bounded. */
const hosts = new Map<string, { address?: string; port?: number }>();
const MAX_HOSTS = 256;

function splitHost(host: string | undefined): { address?: string; port?: number } {
  if (host === undefined || host === "") return {};
  let split = hosts.get(host);
  if (split === undefined) {
    split = splitHostOnce(host);
    if (hosts.size < MAX_HOSTS) hosts.set(host, split);
  }
  return split;
}

function splitHostOnce(host: string): { address?: string; port?: number } {
  // [::1]:8080, host:8080, host
  const close = host.lastIndexOf("]");
  const colon = host.lastIndexOf(":");
  if (colon > close) {
    const port = Number(host.slice(colon + 1));
    return { address: host.slice(0, colon), ...(Number.isInteger(port) ? { port } : {}) };
  }
  return { address: host };
}

function requestAttributes(
  req: IncomingMessage,
  method: string,
  url: { path: string; search: string },
): Attributes {
  const attributes: Attributes = {
    "http.request.method": method,
    "url.scheme": "http",
    "url.path": safePath(url.path),
    "network.protocol.version": req.httpVersion,
    "network.peer.address": req.socket.remoteAddress,
    "network.peer.port": req.socket.remotePort,
  };
  if (url.search !== "") attributes["url.query"] = safeQuery(url.search);
  if (method !== req.method) attributes["http.request.method_original"] = req.method;
  const { address, port } = splitHost(req.headers.host);
  if (address !== undefined) attributes["server.address"] = address;
  if (port !== undefined) attributes["server.port"] = port;
  const agent = req.headers["user-agent"];
  if (agent !== undefined) attributes["user_agent.original"] = agent;
  return attributes;
}

/**
 * The status as a metric label: a status Node has a name for (`STATUS_CODES`) as it is, any other as its class
 * (`5xx`). A proxied upstream chooses the status; it must not choose how many series there are.
 */
export function statusLabel(status: number): number | string {
  return STATUS_CODES[status] !== undefined
    ? status
    : `${Math.min(9, Math.max(0, Math.floor(status / 100)))}xx`;
}

/**
 * The duration metric's label sets of answers without an error, made once per method, protocol version, status and
 * route (bounded: past the bound they are made per answer). An error's set is made per answer.
 */
const durationLabels = new Map<string, Attributes>();
const MAX_DURATION_LABELS = 1024;

function durationAttributes(
  method: string,
  version: string,
  status: number,
  route: string | undefined,
): Attributes {
  const key = `${method} ${version} ${status} ${route ?? ""}`;
  let attributes = durationLabels.get(key);
  if (attributes === undefined) {
    attributes = {
      "http.request.method": method,
      "url.scheme": "http",
      "network.protocol.version": version,
      "http.response.status_code": statusLabel(status),
    };
    if (route !== undefined) attributes["http.route"] = route;
    if (durationLabels.size < MAX_DURATION_LABELS) durationLabels.set(key, attributes);
  }
  return attributes;
}

/** Ends the span and records the duration, once, when the response closes (sent, failed or abandoned). */
function finish(
  span: Span,
  req: IncomingMessage,
  res: ServerResponse,
  method: string,
  started: number,
  error: Error | undefined,
): void {
  const status = res.statusCode;
  const route = routeOf(req, res);
  if (route !== undefined) {
    span.updateName(`${method} ${route}`);
    span.setAttribute("http.route", route);
  }
  span.setAttribute("http.response.status_code", status);
  let metric: Attributes;
  if (error !== undefined) {
    span.recordException(error);
    span.setStatus({ code: SpanStatusCode.ERROR, message: error.message });
    metric = { ...durationAttributes(method, req.httpVersion, status, route), "error.type": error.name };
  } else if (status >= 500) {
    span.setStatus({ code: SpanStatusCode.ERROR });
    metric = {
      ...durationAttributes(method, req.httpVersion, status, route),
      "error.type": String(statusLabel(status)),
    };
  } else metric = durationAttributes(method, req.httpVersion, status, route);
  span.end();
  recordActiveRequest(-1, method);
  recordHttpServerDuration((performance.now() - started) / 1000, metric);
}

/**
 * The first middleware: continues the caller's trace in a SERVER span, runs the rest of the request in its
 * context, and ends the span and records the duration when the response closes.
 */
export function httpServerTelemetry(): Middleware {
  return function httpServerTelemetry(req, res, next) {
    const url = splitUrl(req.url ?? "/");
    if (UNTRACED_PATHS.has(url.path)) {
      context.with(suppressTracing(context.active()), next);
      return;
    }
    const started = performance.now();
    const original = req.method ?? "GET"; // always set on a server's request
    const method = semconvMethod(original);
    recordActiveRequest(1, method);
    const parent = propagation.extract(ROOT_CONTEXT, req.headers);
    const span = trace
      .getTracer(TRACER_NAME)
      .startSpan(method, { kind: SpanKind.SERVER, attributes: requestAttributes(req, method, url) }, parent);
    const ctx: Context = trace.setSpan(parent, span);
    let failed: Error | undefined;
    // `on`, not `once`: a response closes once, and `once` would wrap each listener and take it off again when it
    // runs (two objects and a listener-array copy per listener per request). The first error is the one kept.
    res.on(errorMonitor, (err: Error) => {
      failed ??= err;
    });
    res.on("close", () => finish(span, req, res, method, started, failed));
    // The rest of the chain runs in the span's context; the request and response emitters are not bound to it
    // (binding both, as the http instrumentation did, cost ~8 % of a hit). The JSON body parser hands the body on in
    // the context it was asked in (raw-body binds its callback to it), also when the body comes after the headers
    // (test/telemetry/http-server.test.ts).
    context.with(ctx, next);
  };
}
