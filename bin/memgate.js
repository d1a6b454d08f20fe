#!/usr/bin/env node
// The memgate command. Runs the compiled CLI in dist/ (built by `npm ci` through the `prepare` script).
const path = require("node:path");
const fs = require("node:fs");

const entry = path.join(__dirname, "..", "dist", "cli", "main.js");
if (!fs.existsSync(entry)) {
  process.stderr.write("memgate: dist/ is missing; run `npm run build` (npm ci runs it for you)\n");
  process.exit(1);
}
// OpenTelemetry first: its instrumentations patch http, express and ioredis when they are first required, so
// the SDK must be running before the CLI (and through it the gateway) loads them. Only `serve` needs it.
// `serve --help` only prints: it needs neither.
const helpOnly = process.argv.slice(3).some((a) => a === "--help" || a === "-h");
if (process.argv[2] === "serve" && !helpOnly)
  require(path.join(__dirname, "..", "dist", "telemetry", "register.js"));
require(entry)
  .main(process.argv.slice(2))
  .then((code) => {
    if (typeof code === "number") process.exitCode = code;
    // A `serve` that failed to boot has printed its one-line reason: exit now, whatever handle a half-built
    // boot (a file watcher, a connection, the telemetry SDK) may still hold, instead of neither serving nor exiting.
    if (process.argv[2] === "serve" && code !== 0) process.exit(typeof code === "number" ? code : 1);
  });
