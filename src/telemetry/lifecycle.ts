/**
 * The running telemetry SDK, if any, seen from the server: flush it at shutdown and route the SDK's own
 * diagnostics (an unreachable collector, a rejected export) into the gateway's logger. Deliberately free of SDK
 * imports: the server loads this module whether or not telemetry runs.
 */
import { type DiagLogger, DiagLogLevel, diag } from "@opentelemetry/api";
import type { Logger } from "../logging/logger";

export interface Telemetry {
  shutdown(): Promise<void>;
}

let active: Telemetry | undefined;

export function setActiveTelemetry(t: Telemetry | undefined): void {
  active = t;
}

/** Flushes pending spans and metrics, waiting at most `timeoutMs` (an unreachable collector must not hang exit). */
export async function shutdownTelemetry(timeoutMs = 5_000): Promise<void> {
  const t = active;
  active = undefined;
  if (!t) return;
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, timeoutMs);
    timer.unref();
  });
  await Promise.race([t.shutdown().catch(() => undefined), deadline]);
  clearTimeout(timer);
}

/** The first Error among a diag call's arguments, as its message only (no stack, no request bodies). */
function errorOf(args: unknown[]): string | undefined {
  const err = args.find((a): a is Error => a instanceof Error);
  return err?.message;
}

/**
 * Sends OpenTelemetry's diagnostics (warnings and errors) to `logger`, unless OTEL_LOG_LEVEL asks for the SDK's
 * own console logger. Only while telemetry runs.
 */
export function routeTelemetryDiagnostics(logger: Logger, env: NodeJS.ProcessEnv = process.env): void {
  if (!active || (env.OTEL_LOG_LEVEL ?? "") !== "") return;
  const log =
    (level: "error" | "warn" | "info" | "debug") =>
    (message: string, ...args: unknown[]) =>
      logger[level]({ component: "opentelemetry", error: errorOf(args) }, message);
  const bridge: DiagLogger = {
    error: log("error"),
    warn: log("warn"),
    info: log("info"),
    debug: log("debug"),
    verbose: log("debug"),
  };
  diag.setLogger(bridge, { logLevel: DiagLogLevel.WARN, suppressOverrideMessage: true });
}
