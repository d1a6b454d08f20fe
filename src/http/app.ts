import express, { type Express } from "express";
import { compatRoutes } from "../compat";
import type { LocalStores } from "../compat/local-stores";
import type { Logger } from "../logging/logger";
import type { PolicyRegistry } from "../policy/registry-types";
import type { RetrievalService } from "../retrieval/service";
import { accessLog } from "../telemetry/access-log";
import { httpServerTelemetry } from "../telemetry/http-server";
import { metricsRoute } from "../telemetry/prometheus";
import type { TenantDirectory } from "../tenants/types";
import { HttpProblem } from "./errors";
import { errorHandler, notFound, requestId } from "./middleware";
import type { KeyLimits } from "./rate-limit";
import { opsRoutes, type Readiness } from "./routes/ops";
import { type PlaygroundConfig, playgroundRoutes } from "./routes/playground";
import { retrieveRoute } from "./routes/retrieve";
import { securityHeaders } from "./security-headers";

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
  /** The policy playground (/ui, /v1/playground): set only when MEMGATE_PLAYGROUND is on. */
  playground?: PlaygroundConfig;
}

export function createApp(services: AppServices): Express {
  const app = express();
  app.disable("x-powered-by");
  app.set("etag", false);
  app.set("query parser", "simple");
  app.use(httpServerTelemetry()); // the HTTP server span and http.server.request.duration (src/telemetry)
  app.use(securityHeaders()); // helmet: nosniff, no framing, strict CSP, … on every answer
  app.use(requestId());
  app.use(accessLog(services.logger));
  app.use(function refuseWhenShuttingDown(req, res, next) {
    if (services.lifecycle?.shuttingDown) {
      res.setHeader("connection", "close");
      // /readyz answers for itself: 503 with `status: "draining"`, so a prober sees why (src/http/routes/ops.ts).
      if (req.path === "/readyz" && (req.method === "GET" || req.method === "HEAD")) return next();
      next(new HttpProblem("SHUTTING_DOWN", "the gateway is shutting down; retry", { "retry-after": "1" }));
      return;
    }
    next();
  });
  app.use(metricsRoute()); // GET /metrics: Prometheus text, unauthenticated like /healthz (src/telemetry)
  app.use(opsRoutes(services));
  app.use(retrieveRoute(services));
  const { playground } = services;
  if (playground !== undefined) app.use(playgroundRoutes({ ...services, playground })); // /ui, /v1/playground (admin)
  app.use(compatRoutes(services)); // drop-in Zep (/api/v2/*) and OpenMemory (/memory/*, …) APIs (src/compat)
  app.use(notFound());
  app.use(errorHandler(services.logger));
  return app;
}
