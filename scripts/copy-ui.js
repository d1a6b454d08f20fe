#!/usr/bin/env node
// `npm run build`, last step: the playground page's HTML, CSS and icon next to its compiled script (src/ui → dist/ui).
const { copyFileSync, mkdirSync, readdirSync } = require("node:fs");
const { join } = require("node:path");

const from = join(__dirname, "..", "src", "ui");
const to = join(__dirname, "..", "dist", "ui");
mkdirSync(to, { recursive: true });
for (const name of readdirSync(from)) {
  if (/\.(html|css|svg)$/.test(name)) copyFileSync(join(from, name), join(to, name));
}
