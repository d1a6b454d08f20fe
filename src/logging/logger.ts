import pino, { type DestinationStream, type Logger } from "pino";

export type { Logger };

/**
 * Paths pino removes from every log line: credentials, raw queries and memory contents never reach logs
 * (CONTRACT §8). Code should not log them in the first place; this is the net under it.
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
];

/** The one logger factory. Tests pass a destination stream to capture lines. */
export function createLogger(level = "info", destination?: DestinationStream): Logger {
  const options = {
    level,
    base: { service: "memgate" },
    redact: { paths: REDACT_PATHS, censor: "[REDACTED]" },
    timestamp: pino.stdTimeFunctions.isoTime,
  };
  return destination ? pino(options, destination) : pino(options);
}

/** A logger that writes nowhere (for tests and tools that don't log). */
export function silentLogger(): Logger {
  return pino({ level: "silent" });
}
