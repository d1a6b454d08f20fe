/**
 * The CLIENT span and the `http.client.request.duration` metric of every call memgate makes to an upstream on its
 * own behalf (src/backends/upstream.ts `callUpstream`: Zep's searches, thread reads and SDK calls, OpenMemory, the
 * Zep door's writes), made by memgate itself, with the names of the HTTP semantic conventions:
 *
 *   span    `GET` / `POST` … (the method; `HTTP` for a method outside the conventions' list), kind CLIENT, child of
 *           the active span (e.g. `memgate.backend.search`); `http.request.method` (`_OTHER` with
 *           `http.request.method_original`), `url.full` and `url.path` (templates: an id segment is `{id}`,
 *           ./redact.ts), `url.query` (values replaced by `REDACTED`), `url.scheme`, `server.address`,
 *           `server.port`, `network.protocol.version` (1.1), `user_agent.original` (`memgate`); then
 *           `http.response.status_code`; on a 4xx/5xx answer `error.type` (the status) and status ERROR; on a
 *           failure without a usable answer (network error, a refused redirect, an answer over the read bound)
 *           `error.type` (the error's code or name), the exception and status ERROR; a call cancelled by its signal
 *           is ended without an error (the conventions: a cancellation is not an error). The span lasts until the
 *           answer's body is read (or the call failed).
 *   header  `traceparent` (and `baggage`, `tracestate`: OTEL_PROPAGATORS) naming this span, set on the outgoing
 *           headers.
 *   metric  `http.client.request.duration` (s; Prometheus `http_client_request_duration_seconds`) by
 *           `http.request.method`, `server.address`, `server.port`, `url.scheme`, `network.protocol.version`,
 *           `http.response.status_code` (a status Node has no name for as its class, `5xx`) and `error.type`.
 *
 * Why not @opentelemetry/instrumentation-undici, which did this before (issue 29): it listens on undici's
 * diagnostics channels and, per call, parses the URL again (`new URL`), scans the request headers for the
 * user-agent, copies the startSpanHook's attributes, keeps a WeakMap record per request, and hashes a new metric
 * label set per call — 11–19 % of the Zep adapter's CPU (`npx tsx bench/undici-ab.ts`). Here the attributes of a
 * target (method + URL) are made once and reused (RecentCache), the label sets once per method, origin and status.
 * Not recorded any more: `network.peer.address`/`.port` (the socket's, which only the diagnostics channel sees).
 */
import {
  type Attributes,
  context,
  propagation,
  type Span,
  SpanKind,
  SpanStatusCode,
  trace,
} from "@opentelemetry/api";
import { RecentCache } from "../pipeline/text/recent";
import { semconvMethod } from "./http-method";
import { statusLabel } from "./http-server";
import { recordHttpClientDuration } from "./metrics";
import { safePath, safeQuery, safeUrl, splitUrl } from "./redact";
import { TRACER_NAME } from "./tracing";

const USER_AGENT = "memgate";
const DEFAULT_PORTS: Readonly<Record<string, number>> = { http: 80, https: 443 };

interface Target {
  /** The span's name. */
  name: string;
  /** The span's attributes at its start (never written to: the SDK copies them). */
  attributes: Readonly<Attributes>;
  /** The metric's label sets of this target by status (`error.type` aside), made once each. */
  labels: Map<string, Attributes>;
  /** What the label sets share. */
  base: Readonly<Attributes>;
}

/**
 * The span attributes of recent targets (`METHOD url` → attributes): a miss's calls — the same search URL every
 * time — do not parse and template their URL again. Bounded (RecentCache); a value is a pure function of its key.
 */
const targets = new RecentCache<Target>(1024, 1024 * 256);
const MAX_LABEL_SETS = 64;

function urlParts(url: string): { origin: string; target: string; scheme: string } {
  const schemeEnd = url.indexOf("://");
  const pathStart = schemeEnd < 0 ? -1 : url.indexOf("/", schemeEnd + 3);
  const query = url.indexOf("?", schemeEnd + 3);
  const end =
    pathStart < 0 ? (query < 0 ? url.length : query) : query < 0 ? pathStart : Math.min(pathStart, query);
  const origin = url.slice(0, end);
  const rest = url.slice(end);
  return {
    origin,
    target: rest === "" ? "/" : rest.startsWith("?") ? `/${rest}` : rest,
    scheme: schemeEnd < 0 ? "" : url.slice(0, schemeEnd).toLowerCase(),
  };
}

function makeTarget(method: string, url: string): Target {
  const known = semconvMethod(method);
  const { origin, target, scheme } = urlParts(url);
  const { path, search } = splitUrl(target);
  let address: string | undefined;
  let port: number | undefined;
  try {
    const parsed = new URL(origin);
    address = parsed.hostname;
    const p = parsed.port === "" ? DEFAULT_PORTS[scheme] : Number(parsed.port);
    if (p !== undefined && Number.isInteger(p)) port = p;
  } catch {
    // No server attributes for an origin that is not a URL (the call itself will fail).
  }
  const attributes: Attributes = {
    "http.request.method": known,
    "url.full": safeUrl(`${origin}${target}`),
    "url.path": safePath(path),
    "url.query": safeQuery(search),
    "url.scheme": scheme,
    "network.protocol.version": "1.1",
    "user_agent.original": USER_AGENT,
  };
  if (known !== method) attributes["http.request.method_original"] = method;
  const base: Attributes = {
    "http.request.method": known,
    "url.scheme": scheme,
    "network.protocol.version": "1.1",
  };
  if (address !== undefined) {
    attributes["server.address"] = address;
    base["server.address"] = address;
  }
  if (port !== undefined) {
    attributes["server.port"] = port;
    base["server.port"] = port;
  }
  return {
    name: known === "_OTHER" ? "HTTP" : known,
    attributes: Object.freeze(attributes),
    labels: new Map(),
    base: Object.freeze(base),
  };
}

function targetOf(method: string, url: string): Target {
  const key = `${method} ${url}`;
  let target = targets.get(key);
  if (target === undefined) {
    target = makeTarget(method, url);
    targets.set(key, target);
  }
  return target;
}

function labelsOf(target: Target, status: number | undefined, errorType: string | undefined): Attributes {
  const key = `${status ?? ""} ${errorType ?? ""}`;
  let labels = target.labels.get(key);
  if (labels === undefined) {
    labels = { ...target.base };
    if (status !== undefined) labels["http.response.status_code"] = statusLabel(status);
    if (errorType !== undefined) labels["error.type"] = errorType;
    if (target.labels.size < MAX_LABEL_SETS) target.labels.set(key, labels);
  }
  return labels;
}

function isAbort(err: unknown): boolean {
  return (
    err instanceof Error && (err.name === "AbortError" || (err as { code?: unknown }).code === "ABORT_ERR")
  );
}

/** One upstream call's span and metric: `answered` when the status is known, then `end` once. */
export class ClientCall {
  private status: number | undefined;
  private ended = false;

  private constructor(
    private readonly span: Span,
    private readonly target: Target,
    private readonly started: number,
  ) {}

  /**
   * Starts the CLIENT span of `method url` under the active context and puts its trace context into `headers`
   * (a mutable object the caller sends).
   */
  static start(method: string, url: string, headers: Record<string, string>): ClientCall {
    const target = targetOf(method, url);
    const active = context.active();
    const span = trace
      .getTracer(TRACER_NAME)
      .startSpan(target.name, { kind: SpanKind.CLIENT, attributes: target.attributes }, active);
    propagation.inject(trace.setSpan(active, span), headers);
    return new ClientCall(span, target, performance.now());
  }

  /** The answer's status line arrived. */
  answered(status: number): void {
    this.status = status;
    this.span.setAttribute("http.response.status_code", status);
  }

  /**
   * Ends the span and records the duration. `error`: why the call failed (no answer, or one not read); a
   * cancellation by the call's signal is ended as a success would be.
   */
  end(error?: unknown, aborted = false): void {
    if (this.ended) return;
    this.ended = true;
    const span = this.span;
    let errorType: string | undefined;
    if (error !== undefined && !(aborted || isAbort(error))) {
      const code = (error as { code?: unknown } | null)?.code;
      errorType =
        typeof code === "string" && code !== ""
          ? code
          : error instanceof Error && error.name !== ""
            ? error.name
            : "Error";
      span.setAttribute("error.type", errorType);
      if (error instanceof Error) span.recordException(error);
      span.setStatus({
        code: SpanStatusCode.ERROR,
        ...(error instanceof Error ? { message: error.message } : {}),
      });
    } else if (this.status !== undefined && this.status >= 400) {
      errorType = String(this.status);
      span.setAttribute("error.type", errorType);
      span.setStatus({ code: SpanStatusCode.ERROR });
    }
    span.end();
    recordHttpClientDuration(
      (performance.now() - this.started) / 1000,
      labelsOf(this.target, this.status, errorType),
    );
  }
}
