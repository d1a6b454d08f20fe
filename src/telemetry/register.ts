/**
 * Starts telemetry as a side effect of being loaded. bin/memgate.js requires this file before the CLI when the
 * command is `serve`, so the instrumentations are in place before express, http and ioredis are first loaded.
 * It can also be preloaded: `node --require ./dist/telemetry/register.js …`.
 *
 * An invalid OTEL_* value stops the process with one line naming the variable (exit 1), like the rest of the
 * environment; any other failure leaves the gateway running without telemetry, and says so.
 */
import { TelemetryConfigError } from "./config";
import { startTelemetry } from "./sdk";

try {
  startTelemetry();
} catch (err) {
  if (err instanceof TelemetryConfigError) {
    process.stderr.write(`memgate: ${err.message}\n`);
    process.exit(1);
  }
  const reason = err instanceof Error ? err.message : String(err);
  process.stderr.write(`memgate: telemetry could not start, serving without it (${reason})\n`);
}
