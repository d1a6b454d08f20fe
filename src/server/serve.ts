import {
  createServer as createHttpServer,
  type RequestListener,
  type Server,
  type ServerOptions,
} from "node:http";
import type { AddressInfo } from "node:net";
import type { BackendFactories } from "../backends/registry";
import { EnvError, isLoopback, parseEnv } from "../config/env";
import { createApp } from "../http/app";
import { limitPipelining } from "../http/pipelining";
import { createLogger, type Logger } from "../logging/logger";
import { routeTelemetryDiagnostics, shutdownTelemetry } from "../telemetry/lifecycle";
import { type MetricsEndpoint, metricsHandler } from "../telemetry/metrics-endpoint";
import { buildServices, type Services } from "./services";

export interface Running {
  server: Server;
  services: Services;
  url: string;
  /** Graceful stop: refuse new requests (503), finish in-flight ones, close connections. */
  stop(): Promise<void>;
}

/**
 * The server's own limits, set explicitly rather than left to Node's defaults (60 s for headers, 300 s for a
 * request, checked only every 30 s): a client that sends its headers or body slowly gets 408 and is cut off
 * within about a second of its limit, and an idle keep-alive connection is closed.
 */
function serverOptions(env: ReturnType<typeof parseEnv>): ServerOptions {
  return {
    headersTimeout: env.MEMGATE_HEADERS_TIMEOUT_MS,
    requestTimeout:
      env.MEMGATE_REQUEST_TIMEOUT_MS === 0
        ? 0
        : Math.max(env.MEMGATE_REQUEST_TIMEOUT_MS, env.MEMGATE_HEADERS_TIMEOUT_MS),
    keepAliveTimeout: env.MEMGATE_KEEPALIVE_TIMEOUT_MS,
    connectionsCheckingInterval: 1000,
  };
}

/** GET /metrics as the environment asks (src/telemetry/metrics-endpoint.ts). */
function metricsEndpoint(env: ReturnType<typeof parseEnv>): MetricsEndpoint {
  return {
    ownPort: env.MEMGATE_METRICS_PORT !== undefined,
    cacheMs: env.MEMGATE_METRICS_CACHE_MS,
    maxConcurrent: env.MEMGATE_METRICS_MAX_CONCURRENT,
    ...(env.MEMGATE_METRICS_TOKEN === undefined ? {} : { token: env.MEMGATE_METRICS_TOKEN }),
  };
}

/** The listener of MEMGATE_METRICS_PORT: `GET /metrics` and nothing else, with the same server limits. */
function metricsListener(env: ReturnType<typeof parseEnv>, metrics: MetricsEndpoint, log: Logger): Server {
  const handle = metricsHandler(metrics);
  const only: RequestListener = (req, res) => {
    const path = (req.url ?? "/").split("?", 1)[0];
    if (path === "/metrics" && (req.method === "GET" || req.method === "HEAD")) return handle(req, res);
    res.statusCode = 404;
    res.setHeader("content-type", "text/plain; charset=utf-8");
    res.end("not found: this listener serves GET /metrics only\n");
  };
  const server = createHttpServer(serverOptions(env), limitPipelining(only, env.MEMGATE_MAX_PIPELINED, log));
  server.maxConnections = METRICS_MAX_CONNECTIONS;
  return server;
}

/** Scrapers are few: the metrics listener keeps at most this many connections. */
const METRICS_MAX_CONNECTIONS = 64;

/** Listens; resolves with the URL. */
function listen(server: Server, port: number, host: string): Promise<string> {
  return new Promise<string>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => {
      server.off("error", reject);
      const address = server.address() as AddressInfo;
      resolve(`http://${host.includes(":") ? `[${host}]` : host}:${address.port}`);
    });
  });
}

/** Starts the gateway from an environment. Rejects with a one-line reason on bad configuration. */
export async function startServer(
  rawEnv: NodeJS.ProcessEnv,
  opts: { logger?: Logger; factories?: BackendFactories } = {},
): Promise<Running> {
  const env = parseEnv(rawEnv);
  const log = opts.logger ?? createLogger(env.LOG_LEVEL);
  routeTelemetryDiagnostics(log);
  const services = await buildServices({ env, rawEnv, logger: log, factories: opts.factories });
  if (services.tenants.devMode && !isLoopback(env.HOST)) {
    await services.close();
    throw new EnvError(
      `HOST: dev mode (no tenants file) accepts any key, so it listens on loopback only (got "${env.HOST}"); set MEMGATE_TENANTS_FILE or HOST=127.0.0.1`,
    );
  }
  const metrics = metricsEndpoint(env);
  const app = createApp({ ...services, metrics });
  const server = createHttpServer(serverOptions(env), limitPipelining(app, env.MEMGATE_MAX_PIPELINED, log));
  if (env.MEMGATE_MAX_CONNECTIONS > 0) server.maxConnections = env.MEMGATE_MAX_CONNECTIONS;
  const metricsServer = metrics.ownPort === true ? metricsListener(env, metrics, log) : undefined;
  let url: string;
  try {
    url = await listen(server, env.PORT, env.HOST);
    if (metricsServer !== undefined) {
      const metricsUrl = await listen(metricsServer, env.MEMGATE_METRICS_PORT ?? 0, env.MEMGATE_METRICS_HOST);
      log.info({ url: metricsUrl }, "metrics listening");
    }
  } catch (err) {
    server.close();
    metricsServer?.close();
    await services.close();
    throw err;
  }
  log.info({ url, devMode: services.tenants.devMode }, "memgate listening");

  let stopping: Promise<void> | undefined;
  const stop = () => {
    stopping ??= (async () => {
      services.lifecycle.shuttingDown = true;
      metricsServer?.close();
      metricsServer?.closeAllConnections();
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      const idle = setInterval(() => server.closeIdleConnections(), 100);
      const force = setTimeout(() => server.closeAllConnections(), env.MEMGATE_SHUTDOWN_TIMEOUT_MS);
      await closed;
      clearInterval(idle);
      clearTimeout(force);
      await services.close();
      await shutdownTelemetry(); // flush pending spans and metrics (bounded)
      log.info("memgate stopped");
    })();
    return stopping;
  };
  return { server, services, url, stop };
}

/** `memgate serve`: runs until SIGTERM/SIGINT, then shuts down gracefully and exits 0. */
export async function serveCommand(): Promise<number> {
  let running: Running;
  try {
    running = await startServer(process.env);
  } catch (err) {
    process.stderr.write(`memgate: ${err instanceof Error ? err.message : String(err)}\n`);
    return 1;
  }
  return new Promise<number>((resolve) => {
    const onSignal = (signal: NodeJS.Signals) => {
      running.services.logger.info({ signal }, "shutting down");
      running.stop().then(
        () => resolve(0),
        () => resolve(1),
      );
    };
    process.once("SIGTERM", onSignal);
    process.once("SIGINT", onSignal);
  });
}
