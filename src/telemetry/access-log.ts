/**
 * One log line per HTTP request when it ends — method, route template, status, duration, requestId and the
 * request's trace ids — and the `ratelimit.rejections{scope="key"}` count for 429 answers. The path is logged as a
 * template (src/telemetry/redact.ts): proxied Zep/OpenMemory paths carry user ids.
 *
 * It also names the HTTP server span's route (`http.route`, the span name `POST /v1/retrieve`, the `http_route`
 * label of `http.server.request.duration`): the http instrumentation reads the route from the request's RPC
 * metadata when the response closes, and this is where memgate writes it (the Express instrumentation, which
 * otherwise did so, wrapped every middleware layer of every request for that one value).
 */
import { performance } from "node:perf_hooks";
import { context, isSpanContextValid, trace } from "@opentelemetry/api";
import { getRPCMetadata, RPCType } from "@opentelemetry/core";
import type { Request, RequestHandler, Response } from "express";
import type { Logger } from "../logging/logger";
import { recordRateLimitRejection } from "./metrics";
import { safePath } from "./redact";

/** Polled every few seconds by orchestrators and scrapers: logged at debug only. */
const PROBES = new Set(["/healthz", "/readyz", "/metrics"]);

declare global {
  namespace Express {
    interface Locals {
      /** A route template set by a handler Express did not route to by path (the drop-in proxies' mount path). */
      httpRoute?: string;
    }
  }
}

/**
 * The matched route template, as the Express instrumentation named it: the route's path (`/v1/retrieve`,
 * `/memory/:id`; an array of paths joined by commas) under its router's mount path; or what a handler set in
 * `res.locals.httpRoute`. None when nothing matched (a 404): an unmatched path never becomes a label.
 */
function routeOf(req: Request, res: Response): string | undefined {
  if (res.locals.httpRoute !== undefined) return res.locals.httpRoute;
  const path: unknown = req.route?.path;
  if (typeof path === "string") return `${req.baseUrl}${path}`;
  if (Array.isArray(path) && path.every((p) => typeof p === "string"))
    return `${req.baseUrl}${path.join(",")}`;
  return undefined;
}

export function accessLog(logger: Logger): RequestHandler {
  return function accessLog(req, res, next) {
    const started = performance.now();
    // Read now: a mounted router may leave `req.url` stripped of its prefix by the time the response closes.
    const path = req.path;
    // The HTTP server span (the instrumentation made it active before Express ran).
    const active = context.active();
    const spanContext = trace.getSpan(active)?.spanContext();
    const ids =
      spanContext !== undefined && isSpanContextValid(spanContext)
        ? { trace_id: spanContext.traceId, span_id: spanContext.spanId }
        : {};
    const rpc = getRPCMetadata(active);
    // Prepended: the http instrumentation's own `close` listener (added before Express ran) reads the route.
    res.prependOnceListener("close", () => {
      if (rpc?.type === RPCType.HTTP && rpc.route === undefined) rpc.route = routeOf(req, res);
      const status = res.statusCode;
      const problem = String(res.getHeader("content-type") ?? "").startsWith("application/problem+json");
      // Our own 429s are always the caller key's rate limit (a retrieval never answers 429: it falls back).
      if (status === 429 && problem) recordRateLimitRejection("key");
      const fields = {
        requestId: res.locals.requestId,
        ...ids,
        method: req.method,
        path: safePath(path),
        status,
        durationMs: Math.round((performance.now() - started) * 100) / 100,
        ...(res.writableFinished ? {} : { aborted: true }),
      };
      if (PROBES.has(path)) logger.debug(fields, "request");
      else logger.info(fields, "request");
    });
    next();
  };
}
