import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, writeFileSync } from "node:fs";
import { Agent, request as httpRequest } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createLocalBackendFromRecords } from "../../src/backends/local";
import { silentLogger } from "../../src/logging/logger";
import { startServer } from "../../src/server/serve";
import { FakeBackend } from "../helpers/fake-backend";
import { makeCandidate } from "../helpers/items";

const ROOT = join(__dirname, "../..");
const BIN = join(ROOT, "bin/memgate.js");

function ensureBuilt(): void {
  if (!existsSync(join(ROOT, "dist/cli/main.js"))) {
    const r = spawnSync("npm", ["run", "build"], { cwd: ROOT, encoding: "utf8" });
    if (r.status !== 0) throw new Error(`npm run build failed: ${r.stderr}`);
  }
}

function runBin(env: Record<string, string>, timeoutMs = 10_000) {
  return spawnSync(process.execPath, [BIN, "serve"], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? "", ...env },
    encoding: "utf8",
    timeout: timeoutMs,
  });
}

describe("memgate serve (the real binary)", () => {
  beforeAll(ensureBuilt);

  test("a bad environment value exits non-zero with one line naming the variable", () => {
    const r = runBin({ PORT: "80a" });
    expect(r.status).toBe(1);
    expect(r.stderr.trim().split("\n")).toEqual([
      'memgate: PORT: must be a port number from 0 to 65535 (got "80a")',
    ]);
  });

  test("dev mode refuses a non-loopback listen address", () => {
    const r = runBin({ HOST: "0.0.0.0", PORT: "0" });
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(/^memgate: HOST: dev mode \(no tenants file\) .* loopback only/);
  });

  test("serves the demo, then exits 0 on SIGTERM", async () => {
    const child: ChildProcess = spawn(process.execPath, [BIN, "serve"], {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? "", PORT: "0", LOG_LEVEL: "info" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    const url = await new Promise<string>((resolve, reject) => {
      let out = "";
      const timer = setTimeout(() => reject(new Error(`no listening line: ${out}`)), 15_000);
      child.stdout?.on("data", (chunk: Buffer) => {
        out += chunk.toString();
        const m = /"url":"(http:\/\/[^"]+)"/.exec(out);
        if (m?.[1]) {
          clearTimeout(timer);
          resolve(m[1]);
        }
      });
      child.on("exit", (code) => reject(new Error(`exited early with ${code}: ${out}`)));
    });
    const res = await fetch(`${url}/v1/retrieve`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ userId: "ana", sessionId: "s-1", query: "coffee", useMemory: true }),
    });
    expect(res.status).toBe(200);
    const payload = (await res.json()) as { memories: unknown[] };
    expect(payload.memories.length).toBeGreaterThan(0);
    const started = Date.now();
    const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
    child.kill("SIGTERM");
    expect(await exited).toBe(0);
    expect(Date.now() - started).toBeLessThan(10_000);
  });
});

describe("graceful shutdown (in process)", () => {
  test("stop(): an in-flight request finishes with its answer, then the server stops listening", async () => {
    const dir = mkdtempSync(join(tmpdir(), "memgate-serve-"));
    const data = join(dir, "empty.jsonl");
    writeFileSync(data, "");
    const slow = new FakeBackend("zep").setUser("u-1", [
      makeCandidate({ id: "a", content: "Slow memory.", score: 0.9 }),
    ]);
    slow.script = { kind: "delay", ms: 400 };
    const running = await startServer(
      {
        PORT: "0",
        MEMGATE_BACKEND: "zep",
        ZEP_API_KEY: "k",
        MEMGATE_LOCAL_DATA: data,
        MEMGATE_POLICY_DIR: join(ROOT, "policies"),
      },
      {
        logger: silentLogger(),
        factories: {
          zep: () => slow,
          openmemory: () => slow,
          local: () => createLocalBackendFromRecords([]),
        },
      },
    );
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const post = (body: object) =>
      new Promise<{ status: number; headers: Record<string, unknown>; body: string }>((resolve, reject) => {
        const req = httpRequest(
          `${running.url}/v1/retrieve`,
          { method: "POST", agent, headers: { "content-type": "application/json" } },
          (res) => {
            let text = "";
            res.on("data", (c: Buffer) => {
              text += c.toString();
            });
            res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text }));
          },
        );
        req.on("error", reject);
        req.end(JSON.stringify(body));
      });
    const ask = { userId: "u-1", sessionId: "s-1", query: "slow", useMemory: true, policy: "default" };
    // Warm the existence cache and the keep-alive connection.
    expect((await post({ ...ask, query: "warm" })).status).toBe(200);
    const inFlight = post(ask);
    await new Promise((r) => setTimeout(r, 100));
    const stopped = running.stop();
    const done = await inFlight;
    expect(done.status).toBe(200);
    expect(JSON.parse(done.body).memories.map((m: { id: string }) => m.id)).toEqual(["a"]);
    await stopped;
    expect(running.server.listening).toBe(false);
    agent.destroy();
  });

  test("a request arriving during shutdown is refused with 503 problem+json and Retry-After", async () => {
    const running = await startServer(
      { PORT: "0", MEMGATE_POLICY_DIR: join(ROOT, "policies") },
      { logger: silentLogger() },
    );
    running.services.lifecycle.shuttingDown = true;
    const res = await fetch(`${running.url}/healthz`);
    expect(res.status).toBe(503);
    expect(res.headers.get("retry-after")).toBe("1");
    expect(res.headers.get("content-type")).toMatch(/^application\/problem\+json/);
    expect(((await res.json()) as { code: string }).code).toBe("SHUTTING_DOWN");
    running.services.lifecycle.shuttingDown = false;
    await running.stop();
  });
});
