import { createServer as createHttpServer, type Server, type ServerOptions } from "node:http";
import type { AddressInfo } from "node:net";
import type { BackendFactories } from "../backends/registry";
import { EnvError, isLoopback, parseEnv } from "../config/env";
import { createApp } from "../http/app";
import { createLogger, type Logger } from "../logging/logger";
import { routeTelemetryDiagnostics, shutdownTelemetry } from "../telemetry/lifecycle";
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
  const app = createApp(services);
  const server = createHttpServer(serverOptions(env), app);
  if (env.MEMGATE_MAX_CONNECTIONS > 0) server.maxConnections = env.MEMGATE_MAX_CONNECTIONS;
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(env.PORT, env.HOST, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  const host = env.HOST.includes(":") ? `[${env.HOST}]` : env.HOST;
  const url = `http://${host}:${port}`;
  log.info({ url, devMode: services.tenants.devMode }, "memgate listening");

  let stopping: Promise<void> | undefined;
  const stop = () => {
    stopping ??= (async () => {
      services.lifecycle.shuttingDown = true;
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
