/**
 * Library instrumentations: incoming HTTP (continues the caller's W3C trace; the route is named by
 * src/telemetry/access-log.ts), ioredis (cache and rate limits), undici (the `undici` package's `request` the
 * OpenMemory calls and Zep's searches use, and the global `fetch` of the Zep SDK's `user.get` and ping — both
 * publish on the same diagnostics channels; their calls carry `traceparent`/`baggage` out).
 *
 * Privacy (docs/api.md#privacy): URLs are recorded as templates — Zep's `GET /users/{userId}` would otherwise put a plain
 * user id in `url.full` — with query values removed; Redis statements are the command name only (values are
 * cached payloads, i.e. memory contents); no header is captured.
 */
import type { IncomingMessage } from "node:http";
import { HttpInstrumentation } from "@opentelemetry/instrumentation-http";
import { IORedisInstrumentation } from "@opentelemetry/instrumentation-ioredis";
import { UndiciInstrumentation } from "@opentelemetry/instrumentation-undici";
import type { NodeSDKConfiguration } from "@opentelemetry/sdk-node";
import { safePath, safeQuery, safeUrl } from "./redact";

/** Probes and scrapes: every few seconds, never interesting as traces. */
const UNTRACED_PATHS = new Set(["/healthz", "/readyz", "/metrics"]);

function splitUrl(url: string): { path: string; search: string } {
  const q = url.indexOf("?");
  return q === -1 ? { path: url, search: "" } : { path: url.slice(0, q), search: url.slice(q) };
}

function incomingAttributes(req: IncomingMessage): Record<string, string> {
  const { path, search } = splitUrl(req.url ?? "/");
  const attributes: Record<string, string> = { "url.path": safePath(path) };
  if (search !== "") attributes["url.query"] = safeQuery(search);
  return attributes;
}

export type Instrumentations = NodeSDKConfiguration["instrumentations"];

export function createInstrumentations(): Instrumentations {
  return [
    new HttpInstrumentation({
      ignoreIncomingRequestHook: (req) => UNTRACED_PATHS.has(splitUrl(req.url ?? "/").path),
      startIncomingSpanHook: incomingAttributes,
      // The backends are called through undici (fetch or undici.request, below); the only node:http client traffic is the OTLP
      // exporters' own, which would otherwise show up in the http.client.* metrics.
      disableOutgoingRequestInstrumentation: true,
    }),
    // No Express instrumentation: it wrapped every middleware layer of every request to set one value, the route
    // (`http.route`, the span name "POST /v1/retrieve"), which the access-log middleware now sets itself
    // (src/telemetry/access-log.ts); its own spans — one per middleware, router and handler — were off anyway.
    new IORedisInstrumentation({ dbStatementSerializer: (command) => command }),
    new UndiciInstrumentation({
      startSpanHook: (request) => {
        const { path, search } = splitUrl(request.path);
        return {
          "url.full": safeUrl(`${request.origin}${request.path}`),
          "url.path": safePath(path),
          "url.query": safeQuery(search),
        };
      },
    }),
  ];
}
