/**
 * `GET /metrics` (docs/api.md#operations-endpoints, docs/observability.md): the Prometheus text of ./prometheus.ts,
 * cheap to ask for however often it is asked.
 *
 *   - One render at a time, and its text kept `cacheMs` (MEMGATE_METRICS_CACHE_MS, default 1 s with `memgate
 *     serve`): every scrape meanwhile is answered from that copy. Rendering walks every series and serializes
 *     them; thousands of scrapes at once (pipelined on one socket, or from many) rendered each their own.
 *   - At most `maxConcurrent` scrapes in flight (answers not yet written out, MEMGATE_METRICS_MAX_CONCURRENT,
 *     default 8): more get 503 with `Retry-After: 1`, a few bytes instead of another copy of the text queued
 *     behind a client that does not read.
 *   - Behind a bearer token when `token` is set (MEMGATE_METRICS_TOKEN): `Authorization: Bearer <token>`, else 401.
 *   - On the gateway's port (default: unauthenticated like /healthz, loopback-friendly) or, with
 *     MEMGATE_METRICS_PORT, on a listener of its own (src/server/serve.ts) and not on the gateway's port.
 */
import { createHash, timingSafeEqual } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import { Router } from "express";
import { headerOf, sendText } from "../http/plain";
import { PROMETHEUS_CONTENT_TYPE, renderMetrics } from "./prometheus";

export interface MetricsEndpoint {
  /** Served on its own listener (MEMGATE_METRICS_PORT): not on the gateway's port. */
  ownPort?: boolean;
  /** Required as `Authorization: Bearer <token>` (MEMGATE_METRICS_TOKEN). */
  token?: string;
  /** How long one rendered text answers scrapes (ms); 0 = only the scrapes that arrive while it renders. */
  cacheMs?: number;
  /** Scrapes in flight at most; more get 503. */
  maxConcurrent?: number;
}

export const DEFAULT_METRICS_MAX_CONCURRENT = 8;

const digest = (text: string): Buffer => createHash("sha256").update(text).digest();

/** Whether the request carries `Authorization: Bearer <token>` (compared in constant time). */
function authorized(req: IncomingMessage, expected: Buffer): boolean {
  const m = /^Bearer\s+(\S+)\s*$/i.exec(headerOf(req, "authorization") ?? "");
  return m?.[1] !== undefined && timingSafeEqual(digest(m[1]), expected);
}

/** The `/metrics` handler on Node's request and response (see the top of this file). */
export function metricsHandler(
  opts: MetricsEndpoint = {},
): (req: IncomingMessage, res: ServerResponse) => void {
  const cacheMs = opts.cacheMs ?? 0;
  const maxConcurrent = opts.maxConcurrent ?? DEFAULT_METRICS_MAX_CONCURRENT;
  const expected = opts.token === undefined ? undefined : digest(opts.token);
  let rendering: Promise<string> | undefined;
  let copy: { text: string; until: number } | undefined;
  let inFlight = 0;

  function current(): Promise<string> {
    if (copy !== undefined && performance.now() < copy.until) return Promise.resolve(copy.text);
    rendering ??= renderMetrics().then(
      (text) => {
        rendering = undefined;
        if (cacheMs > 0) copy = { text, until: performance.now() + cacheMs };
        return text;
      },
      (err: unknown) => {
        rendering = undefined;
        throw err;
      },
    );
    return rendering;
  }

  return function metrics(req, res) {
    res.setHeader("cache-control", "no-store");
    if (expected !== undefined && !authorized(req, expected)) {
      res.setHeader("www-authenticate", 'Bearer realm="metrics"');
      sendText(res, 401, "text/plain", "metrics: a bearer token is required\n");
      return;
    }
    if (inFlight >= maxConcurrent) {
      res.setHeader("retry-after", "1");
      sendText(res, 503, "text/plain", "metrics: too many scrapes at once; retry\n");
      return;
    }
    inFlight++;
    res.once("close", () => {
      inFlight--;
    });
    current().then(
      (text) => sendText(res, 200, PROMETHEUS_CONTENT_TYPE, text),
      () => sendText(res, 503, "text/plain", "metrics: rendering failed; retry\n"),
    );
  };
}

/** `GET /metrics` on the gateway's own port (none when it has a port of its own). */
export function metricsRoute(opts: MetricsEndpoint = {}): Router {
  const router = Router();
  if (opts.ownPort === true) return router;
  const handle = metricsHandler(opts);
  router.get("/metrics", function metrics(req, res) {
    handle(req, res);
  });
  return router;
}
