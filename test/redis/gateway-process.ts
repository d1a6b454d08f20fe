/**
 * Real `memgate serve` processes for the multi-replica suites (two-process, Cluster, Sentinel, key-limit sync): the
 * current sources through tsx (`--import tsx`: the CLI imports each command lazily) (no stale dist/) or the built binary, listening on a free port (PORT=0) read back from the "memgate listening" log line
 * (so LOG_LEVEL must be info or lower). Every process started is stopped by `stopGateway` (SIGTERM, then
 * SIGKILL after 10 s), and killed when the test process exits, whatever happened.
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { waitFor } from "./redis-helpers";

export const ROOT = join(__dirname, "../..");

export interface Gateway {
  child: ChildProcess;
  url: string;
  /** stdout and stderr as they came. */
  output: () => string;
  stdout: () => string;
  stderr: () => string;
}

const running = new Set<ChildProcess>();
process.once("exit", () => {
  for (const child of running) child.kill("SIGKILL");
});

/** Builds dist/ (`npm run build`) when it is missing, for a test run alone that starts the gateway `from: "dist"`. */
export function ensureBuilt(): void {
  if (!existsSync(join(ROOT, "dist/telemetry/register.js")) || !existsSync(join(ROOT, "dist/cli/main.js"))) {
    const r = spawnSync("npm", ["run", "build"], { cwd: ROOT, encoding: "utf8" });
    if (r.status !== 0) throw new Error(`npm run build failed: ${r.stderr}`);
  }
}

/**
 * `from: "sources"` (the default) runs src/ through tsx; `"dist"` runs `node bin/memgate.js serve` as an operator
 * does (telemetry registered first), on the compiled dist/ — `npm test` builds it before jest; run `npm run build`
 * before running such a test alone.
 */
export async function startGateway(
  env: Record<string, string>,
  from: "sources" | "dist" = "sources",
): Promise<Gateway> {
  const args =
    from === "dist"
      ? [join(ROOT, "bin/memgate.js"), "serve"]
      : [
          "--import",
          "tsx",
          "-e",
          "require('./src/cli/main').main(['serve']).then((c) => { process.exitCode = c; })",
        ];
  const child = spawn(process.execPath, args, {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? "", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  running.add(child);
  child.once("exit", () => running.delete(child));
  let out = "";
  let stdout = "";
  let stderr = "";
  child.stdout?.on("data", (c: Buffer) => {
    out += c.toString();
    stdout += c.toString();
  });
  child.stderr?.on("data", (c: Buffer) => {
    out += c.toString();
    stderr += c.toString();
  });
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no "memgate listening" line in 30 s:\n${out}`)), 30_000);
    const onData = () => {
      const m = /"url":"(http:\/\/[^"]+)"/.exec(out);
      if (m?.[1]) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    };
    child.stdout?.on("data", onData);
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`the gateway exited with ${code}:\n${out}`));
    });
  }).catch((err: unknown) => {
    child.kill("SIGKILL");
    throw err;
  });
  return { child, url, output: () => out, stdout: () => stdout, stderr: () => stderr };
}

export async function stopGateway(g: Gateway): Promise<void> {
  if (g.child.exitCode !== null || g.child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => g.child.once("exit", () => resolve()));
  g.child.kill("SIGTERM");
  const timer = setTimeout(() => g.child.kill("SIGKILL"), 10_000);
  await exited;
  clearTimeout(timer);
}

/** Waits until the gateway's /readyz shows Redis connected. */
export async function waitForRedis(g: Gateway, timeoutMs = 15_000): Promise<void> {
  await waitFor(
    `redis ready on ${g.url}`,
    async () => {
      const res = await fetch(`${g.url}/readyz`);
      const json = (await res.json()) as { checks: Array<{ name: string; ok: boolean }> };
      return json.checks.some((c) => c.name === "redis" && c.ok);
    },
    timeoutMs,
  );
}
