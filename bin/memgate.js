#!/usr/bin/env node
// The memgate command. Runs the compiled CLI in dist/ (built by `npm ci` through the `prepare` script).
const path = require("node:path");
const fs = require("node:fs");

const entry = path.join(__dirname, "..", "dist", "cli", "main.js");
if (!fs.existsSync(entry)) {
  process.stderr.write("memgate: dist/ is missing; run `npm run build` (npm ci runs it for you)\n");
  process.exit(1);
}
require(entry)
  .main(process.argv.slice(2))
  .then((code) => {
    if (typeof code === "number") process.exitCode = code;
  });
