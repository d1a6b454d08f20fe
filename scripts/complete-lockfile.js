#!/usr/bin/env node
// Completes package-lock.json with the other platforms' optional binaries (e.g. @biomejs/cli-darwin-arm64).
//
// The registry these machines reach serves only the packages for this platform and answers 404 for the others,
// so `npm install` cannot record them, and `npm ci` then refuses the lock as out of sync ("Missing: … from lock
// file"). An entry with the package's os/cpu/libc is all `npm ci` needs: it skips a package built for another
// platform without fetching it. Run after any dependency change: `node scripts/complete-lockfile.js`.
const fs = require("node:fs");
const path = require("node:path");

const OS = [
  "android",
  "darwin",
  "freebsd",
  "linux",
  "openharmony",
  "win32",
  "sunos",
  "aix",
  "netbsd",
  "openbsd",
];
const CPU = {
  arm64: "arm64",
  x64: "x64",
  arm: "arm",
  ia32: "ia32",
  loong64: "loong64",
  ppc64: "ppc64",
  riscv64: "riscv64",
  s390x: "s390x",
  wasm32: "wasm32",
};

function platformOf(name) {
  const parts = name.split("/").pop().split("-");
  const os = parts.find((p) => OS.includes(p));
  const cpu = parts.map((p) => CPU[p]).find(Boolean);
  if (!os || !cpu) return undefined;
  const entry = { os: [os], cpu: [cpu] };
  if (parts.includes("musl") || parts.includes("musleabihf")) entry.libc = ["musl"];
  else if (os === "linux" && (parts.includes("gnu") || parts.includes("gnueabihf"))) entry.libc = ["glibc"];
  return entry;
}

const file = path.join(__dirname, "..", "package-lock.json");
const lock = JSON.parse(fs.readFileSync(file, "utf8"));
const added = [];
for (const [where, pkg] of Object.entries(lock.packages)) {
  for (const [name, version] of Object.entries(pkg.optionalDependencies ?? {})) {
    const key = `node_modules/${name}`;
    const nested = where ? `${where}/node_modules/${name}` : key;
    if (lock.packages[key] || lock.packages[nested]) continue;
    const platform = platformOf(name);
    if (!platform) continue; // not a platform binary: leave it to npm
    lock.packages[key] = { version, ...(pkg.dev ? { dev: true } : {}), optional: true, ...platform };
    added.push(`${name}@${version}`);
  }
}
lock.packages = Object.fromEntries(
  Object.entries(lock.packages).sort(([a], [b]) =>
    a === "" ? -1 : b === "" ? 1 : a < b ? -1 : a > b ? 1 : 0,
  ),
);
fs.writeFileSync(file, `${JSON.stringify(lock, null, 2)}\n`);
process.stdout.write(
  added.length ? `added ${added.length}: ${added.join(", ")}\n` : "package-lock.json is complete\n",
);
