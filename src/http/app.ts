/**
 * The HTTP request path (docs/request-lifecycle.md#at-the-edge-srchttp-srccompat). Every request first takes the
 * edge steps — the HTTP server span and duration metric, secure headers, the request id, the access log, the
 * draining check —, then goes to its route:
 *
 *   - a **hot route** (`POST /v1/retrieve`, and the doors' searches `POST /api/v2/graph/search` and
 *     `POST /memory/query`: ./hot.ts) is served right there, on Node's request and response: its own steps
 *     (authentication, per-key limit, scope, JSON body) are the functions the Express middlewares wrap;
 *   - every other route is Express's (the operations endpoints, the playground, the rest of the drop-in Zep and
 *     OpenMemory APIs), then its 404 and error handler.
 *
 * Why: Express's router and request/response objects cost more per request than anything a cache hit does
 * (`npm run bench -- zep`: a bare Express route ~90 µs of CPU; memgate's whole cache hit, outside Express, about
 * as much). An error that ends a hot route or an edge step is answered as the Express routes' errors are
 * (`answerError`, src/http/middleware.ts).
 */
import type { RequestListener } from "node:http";
import express, { type Express } from "express";
import { compatHotRoutes, compatRoutes } from "../compat";
import type { LocalStores } from "../compat/local-stores";
import type { Logger } from "../logging/logger";
import { mcpMethodNotAllowed, mcpRoute } from "../mcp/route";
import type { PolicyRegistry } from "../policy/registry-types";
import type { RetrievalService } from "../retrieval/service";
import type { ShadowRunner } from "../rollout/shadow";
import { accessLog } from "../telemetry/access-log";
import { httpServerTelemetry } from "../telemetry/http-server";
import { type MetricsEndpoint, metricsRoute } from "../telemetry/metrics-endpoint";
import type { TenantDirectory } from "../tenants/types";
import { canonicalizePath } from "./canonical-path";
import { HttpProblem } from "./errors";
import { flushHead } from "./head";
import { type HotHandler, type HotRoute, hotRouteOf, hotRouteTable } from "./hot";
import { answerError, edgeHead, errorHandler, notFound } from "./middleware";
import { openApiRoute } from "./openapi/route";
import { localsOf, type Middleware, requestPath, runSteps } from "./plain";
import type { KeyLimits } from "./rate-limit";
import { disclosureRoutes } from "./routes/disclosure";
import { opsRoutes, type Readiness } from "./routes/ops";
import { type PlaygroundConfig, playgroundRoutes } from "./routes/playground";
import { retrieveRoute } from "./routes/retrieve";

/** Everything the HTTP layer needs, wired once (src/server/services.ts) or by a test with fakes. */
export interface AppServices {
  logger: Logger;
  tenants: TenantDirectory;
  policies: PolicyRegistry;
  retrieval: RetrievalService;
  readiness: Readiness;
  /** Set during graceful shutdown: new requests get 503 with Retry-After; /readyz answers 503 "draining". */
  lifecycle?: { shuttingDown: boolean };
  // --- redis/rate limits: per-API-key limit, applied right after authenticate (src/http/rate-limit.ts) ---
  keyLimits?: KeyLimits;
  /** Lets the OpenMemory-compatible API serve a tenant's embedded local store (src/compat). */
  localStores?: LocalStores;
  /** The transparent proxy's deadline for a whole exchange (`MEMGATE_PROXY_DEADLINE_MS`). */
  proxyDeadlineMs?: number;
  /** The policy playground (/ui, /v1/playground): set only when MEMGATE_PLAYGROUND is on. */
  playground?: PlaygroundConfig;
  /** Shadow policies' recent runs, for the playground's shadow report (src/rollout/shadow.ts). */
  shadow?: ShadowRunner;
  /** GET /metrics: its port, token and scrape bounds (src/telemetry/metrics-endpoint.ts; `memgate serve` sets it). */
  metrics?: MetricsEndpoint;
}

/** The paths a draining replica still answers (GET/HEAD): the probes that must see it drain. */
const ANSWERED_WHILE_DRAINING: ReadonlySet<string> = new Set([
  // /readyz answers for itself: 503 with `status: "draining"`, so a prober sees why (src/http/routes/ops.ts).
  "/readyz",
  // A scrape still answers (memgate_ready 0, the last counts): Prometheus sees a draining replica, not a dead one.
  "/metrics",
]);

/**
 * Draining: new requests get 503 with Retry-After and `connection: close`; /readyz and /metrics answer for
 * themselves (with `connection: close`).
 */
function refuseWhenShuttingDown(lifecycle: { shuttingDown: boolean } | undefined): Middleware {
  return function refuseWhenShuttingDown(req, res, next) {
    if (lifecycle?.shuttingDown) {
      res.setHeader("connection", "close");
      if (ANSWERED_WHILE_DRAINING.has(requestPath(req)) && (req.method === "GET" || req.method === "HEAD"))
        return next();
      next(new HttpProblem("SHUTTING_DOWN", "the gateway is shutting down; retry", { "retry-after": "1" }));
      return;
    }
    next();
  };
}

/**
 * The hot routes (./hot.ts), served before Express. Every route here and in `expressRoutes` is also one line in
 * the OpenAPI document's registry (src/http/openapi/routes.ts): test/http/openapi.routes.test.ts fails otherwise.
 */
export function hotRoutes(services: AppServices): HotRoute[] {
  return [
    retrieveRoute(services),
    ...disclosureRoutes(services), // /v1/memories/details and /timeline: progressive disclosure
    mcpRoute(services), // POST /mcp: the agents' door (src/mcp)
    ...compatHotRoutes(services),
  ];
}

/** The Express routes: everything but the hot routes, then 404 and the error handler. */
export function expressRoutes(services: AppServices): Express {
  const app = express();
  app.disable("x-powered-by");
  app.set("etag", false);
  app.set("query parser", "simple");
  app.use(metricsRoute(services.metrics)); // GET /metrics: Prometheus text, bounded scrapes (src/telemetry)
  app.use(opsRoutes(services));
  app.use(openApiRoute()); // GET /openapi.json (src/http/openapi): a new route is one line in its routes.ts
  const { playground } = services;
  if (playground !== undefined) app.use(playgroundRoutes({ ...services, playground })); // /ui, /v1/playground (admin)
  app.use(mcpMethodNotAllowed()); // GET / DELETE /mcp: 405 (the MCP server is stateless)
  app.use(compatRoutes(services)); // drop-in Zep (/api/v2/*) and OpenMemory (/memory/*, …) APIs (src/compat)
  app.use(notFound());
  app.use(errorHandler(services.logger));
  return app;
}

/** The gateway's request listener (src/server/serve.ts gives it to `http.createServer`). */
export function createApp(services: AppServices): RequestListener {
  const { logger } = services;
  const edge: readonly Middleware[] = [
    httpServerTelemetry(), // the HTTP server span and http.server.request.duration (src/telemetry)
    // helmet's headers (nosniff, no framing, strict CSP, …) and the request id on every answer: set aside for the
    // hot answers that write their head at once (./head.ts), set on the response for every other one.
    edgeHead(),
    accessLog(logger),
    canonicalizePath(), // one canonical path before any routing: no alias of a shaped route reaches the proxy
    refuseWhenShuttingDown(services.lifecycle),
  ];
  const hotList = hotRoutes(services);
  const hot = hotRouteTable(hotList);
  const headOnce: ReadonlySet<HotHandler> = new Set(hotList.filter((r) => r.headOnce).map((r) => r.handle));
  const routes = expressRoutes(services);
  return function memgate(req, res) {
    const failed = (err: unknown) => {
      try {
        answerError(err, req, res, logger);
      } catch (cause) {
        // Never an unhandled rejection (a crash) for one request: cut it off.
        logger.error({ err: cause, requestId: localsOf(res).requestId }, "answering an error failed");
        res.destroy();
      }
    };
    runSteps(
      req,
      res,
      edge,
      () => {
        const handle = hotRouteOf(hot, req);
        if (handle === undefined || !headOnce.has(handle)) flushHead(res);
        if (handle === undefined) routes(req, res);
        else handle(req, res).catch(failed);
      },
      failed,
    );
  };
}
