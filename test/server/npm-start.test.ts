/**
 * `npm start` forwards SIGTERM (issue 28, item 10): an orchestrator that runs the gateway through npm signals npm,
 * not node. npm runs the script through `sh -c`, and npm's run-script forwards SIGTERM and SIGINT to it; the
 * gateway must drain and exit 0 as when run directly (test/server/shutdown.test.ts): a request in flight at a slow
 * backend when the signal arrives is answered 200, npm exits 0 within seconds, the gateway logs "memgate stopped",
 * no memgate process is left, and the port is free again.
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { FakeOpenMemoryServer } from "../backends/fakes/openmemory-server";
import { ensureBuilt } from "../redis/gateway-process";
import { startSlowOpenMemory } from "./slow-openmemory";

const ROOT = join(__dirname, "../..");
const SLOW_MS = 1_000;

/** A port nothing listens on now (the kernel's pick, released). */
async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, "127.0.0.1", resolve));
  const address = probe.address();
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  if (address === null || typeof address === "string") throw new Error("no port");
  return address.port;
}

/** Whether a server can listen on the port now. */
async function canListen(port: number): Promise<boolean> {
  const probe = createServer();
  return new Promise<boolean>((resolve) => {
    probe.once("error", () => resolve(false));
    probe.listen(port, "127.0.0.1", () => probe.close(() => resolve(true)));
  });
}

async function waitFor(what: string, check: () => boolean, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** The pids of node processes running `bin/memgate.js serve` on `port` (ps, and /proc for their environment). */
function gatewayPids(port: number): number[] {
  const r = spawnSync("ps", ["-eo", "pid=,comm=,args="], { encoding: "utf8" });
  return r.stdout
    .split("\n")
    .map((l) => l.trim().split(/\s+/))
    .filter(([, comm, ...args]) => comm === "node" && args.join(" ").includes("bin/memgate.js serve"))
    .map(([pid]) => Number(pid))
    .filter((pid) => {
      try {
        return spawnSync("cat", [`/proc/${pid}/environ`], { encoding: "utf8" }).stdout.includes(
          `PORT=${port}\0`,
        );
      } catch {
        return false;
      }
    });
}

describe("npm start and SIGTERM", () => {
  let fake: FakeOpenMemoryServer;
  let npm: ChildProcess | undefined;
  let dir: string;

  beforeAll(ensureBuilt);
  beforeEach(async () => {
    fake = await startSlowOpenMemory(SLOW_MS);
    dir = mkdtempSync(join(tmpdir(), "memgate-npm-start-"));
  });
  afterEach(async () => {
    if (npm?.exitCode === null) npm.kill("SIGKILL");
    await fake.close();
    rmSync(dir, { recursive: true, force: true });
  });

  test("SIGTERM to the npm process: the in-flight request is answered, exit 0, nothing left, the port free", async () => {
    const port = await freePort();
    const data = join(dir, "empty.jsonl");
    writeFileSync(data, "");
    const proc = spawn("npm", ["start", "--silent"], {
      cwd: ROOT,
      env: {
        PATH: process.env.PATH ?? "",
        HOME: process.env.HOME ?? dir,
        PORT: String(port),
        LOG_LEVEL: "info",
        MEMGATE_BACKEND: "openmemory",
        OPENMEMORY_URL: fake.baseUrl,
        MEMGATE_LOCAL_DATA: data,
        MEMGATE_POLICY_DIR: join(ROOT, "policies"),
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    npm = proc;
    let stdout = "";
    proc.stdout?.on("data", (c: Buffer) => {
      stdout += c.toString();
    });
    const exited = new Promise<number | null>((resolve) => proc.on("exit", (code) => resolve(code)));
    await waitFor("the listening line", () => stdout.includes(`"url":"http://127.0.0.1:${port}"`));
    expect(gatewayPids(port)).toHaveLength(1);

    fake.fail("slow", 1);
    const inFlight = fetch(`http://127.0.0.1:${port}/v1/retrieve`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ userId: "u-1", sessionId: "s-1", query: "coffee", useMemory: true }),
    });
    await waitFor("the request at the backend", () => fake.requests.some((r) => r.path === "/memory/query"));

    const signalled = Date.now();
    proc.kill("SIGTERM"); // npm's own pid, not the gateway's
    const res = await inFlight;
    expect(res.status).toBe(200);
    expect(((await res.json()) as { metadata: { fallback: unknown } }).metadata.fallback).toBeNull();
    expect(await exited).toBe(0);
    expect(Date.now() - signalled).toBeLessThan(8_000);
    expect(stdout).toContain('"signal":"SIGTERM"');
    expect(stdout).toContain('"memgate stopped"');
    expect(gatewayPids(port)).toEqual([]);
    expect(await canListen(port)).toBe(true);
  }, 40_000);
});
