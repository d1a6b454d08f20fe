import pino, { type DestinationStream, type Logger } from "pino";
import { logCorrelation } from "../telemetry/log-context";
import { stdoutDestination } from "./stdout";

export type { Logger };

/**
 * Paths pino removes from every log line: credentials, raw queries and memory contents never reach logs
 * (docs/api.md#privacy). Code should not log them in the first place; this is the net under it.
 */
export const REDACT_PATHS = [
  "req.headers.authorization",
  "req.headers['x-api-key']",
  "req.headers.cookie",
  "headers.authorization",
  "headers['x-api-key']",
  "apiKey",
  "*.apiKey",
  "query",
  "*.query",
  "content",
  "*.content",
  "body",
  "*.body",
  // Plain user ids stay out of logs (docs/api.md#privacy); telemetry shows them hashed.
  "userId",
  "*.userId",
  "user_id",
  "*.user_id",
  "*.headers.authorization",
  "*.headers['x-api-key']",
  "authorization",
  "*.authorization",
  "password",
  "*.password",
  "token",
  "*.token",
];

let lastMs = Number.NaN;
let lastTime = "";

/**
 * pino's `isoTime` (`,"time":"<ISO 8601>"`), made once per millisecond: a busy gateway writes several lines in the
 * same one (an access line per request).
 */
export function isoTime(): string {
  const now = Date.now();
  if (now !== lastMs) {
    lastMs = now;
    lastTime = `,"time":"${new Date(now).toISOString()}"`;
  }
  return lastTime;
}

/**
 * The one logger factory. Without a destination, lines go to stdout in batches of a few milliseconds
 * (./stdout.ts); tests pass a destination stream to capture lines.
 */
export function createLogger(level = "info", destination?: DestinationStream): Logger {
  const options = {
    level,
    base: { service: "memgate" },
    redact: { paths: REDACT_PATHS, censor: "[REDACTED]" },
    timestamp: isoTime,
    // requestId, trace_id, span_id of the request and span being handled, on every line.
    mixin: logCorrelation,
  };
  return pino(options, destination ?? stdoutDestination());
}

/** A logger that writes nowhere (for tests and tools that don't log). */
export function silentLogger(): Logger {
  return pino({ level: "silent" });
}
