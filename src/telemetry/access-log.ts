/**
 * One log line per HTTP request when it ends — method, route template, status, duration, requestId and the
 * request's trace ids — and the `ratelimit.rejections{scope="key"}` count for 429 answers. The path is logged as a
 * template (src/telemetry/redact.ts): proxied Zep/OpenMemory paths carry user ids.
 */
import { performance } from "node:perf_hooks";
import { context, isSpanContextValid, trace } from "@opentelemetry/api";
import { localsOf, type Middleware, requestPath } from "../http/plain";
import type { Logger } from "../logging/logger";
import { UNTRACED_PATHS } from "./http-server";
import { recordRateLimitRejection } from "./metrics";
import { safePath } from "./redact";

export function accessLog(logger: Logger): Middleware {
  // Every field of the line is memgate's own (an id checked or made at the edge, trace ids, the method, a path
  // template, the status, a duration): nothing the redaction paths could match. Without them a line costs ~3 µs
  // instead of ~15 µs (pino's redaction walks its 30 paths, wildcards included, on every line).
  const lines = logger.child({}, { redact: [] });
  return function accessLog(req, res, next) {
    const started = performance.now();
    // Read now: a mounted router may leave `req.url` stripped of its prefix by the time the response closes.
    const path = requestPath(req);
    // The HTTP server span (./http-server.ts made it active before this middleware ran).
    const active = context.active();
    const spanContext = trace.getSpan(active)?.spanContext();
    const ids = spanContext !== undefined && isSpanContextValid(spanContext) ? spanContext : undefined;
    res.on("close", () => {
      // (`on`: a response closes once; see src/telemetry/http-server.ts)
      const status = res.statusCode;
      // Our own 429s are always the caller key's rate limit (a retrieval never answers 429: it falls back).
      if (
        status === 429 &&
        String(res.getHeader("content-type") ?? "").startsWith("application/problem+json")
      )
        recordRateLimitRejection("key");
      const fields: Record<string, unknown> = { requestId: localsOf(res).requestId };
      if (ids !== undefined) {
        fields.trace_id = ids.traceId;
        fields.span_id = ids.spanId;
      }
      fields.method = req.method;
      fields.path = safePath(path);
      fields.status = status;
      fields.durationMs = Math.round((performance.now() - started) * 100) / 100;
      if (!res.writableFinished) fields.aborted = true;
      // Probes and scrapes, polled every few seconds by orchestrators and scrapers: logged at debug only.
      if (UNTRACED_PATHS.has(path)) lines.debug(fields, "request");
      else lines.info(fields, "request");
    });
    next();
  };
}
