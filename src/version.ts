/**
 * memgate's version: package.json's, read once (from src/ and from dist/ alike: both sit one level under the
 * package root). Shown by `memgate --version`, GET /healthz and the `memgate_build_info` gauge.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";

function readVersion(): string {
  const pkg = JSON.parse(readFileSync(join(__dirname, "..", "package.json"), "utf8")) as {
    version?: unknown;
  };
  if (typeof pkg.version !== "string") throw new Error("package.json has no version");
  return pkg.version;
}

export const MEMGATE_VERSION: string = readVersion();
