/**
 * Finding 5 (issue 26) — pipelined requests amplify (docs/security-findings/05.md).
 *
 * The real binary with the real telemetry SDK (`memgate serve`, dev mode, the embedded local backend), attacked as
 * the report did: thousands of pipelined `GET /metrics` in one write from one unauthenticated socket that never
 * reads its answers. The gateway must stay responsive (`/healthz` within 2 s throughout: Node itself takes a few
 * hundred ms to parse the first 64 KiB of such a write on a loaded machine; before the fix it took more than 15 s),
 * its memory must
 * not balloon, and the abusive connection must be cut. Also: a scrape logs no ERROR line (the SDK's "Accessing
 * resource attributes before async attributes settled"), `/metrics` can be put behind a token and on its own port.
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { connect } from "node:net";
import { join } from "node:path";

const ROOT = join(__dirname, "../..");
const BIN = join(ROOT, "bin/memgate.js");

function ensureBuilt(): void {
  if (!existsSync(join(ROOT, "dist/telemetry/register.js")) || !existsSync(join(ROOT, "dist/cli/main.js"))) {
    const r = spawnSync("npm", ["run", "build"], { cwd: ROOT, encoding: "utf8" });
    if (r.status !== 0) throw new Error(`npm run build failed: ${r.stderr}`);
  }
}

interface Served {
  child: ChildProcess;
  /** The main listener's URL, and the metrics listener's when it has its own. */
  urls: Promise<{ main: string; metrics?: string }>;
  lines: () => Array<Record<string, unknown>>;
}

function serve(env: Record<string, string>): Served {
  const child = spawn(process.execPath, [BIN, "serve"], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? "", PORT: "0", LOG_LEVEL: "info", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  child.stdout?.on("data", (chunk: Buffer) => {
    out += chunk.toString();
  });
  /** The complete JSON lines written so far. */
  const lines = () =>
    out
      .split("\n")
      .slice(0, -1)
      .filter((l) => l.startsWith("{"))
      .flatMap((l) => {
        try {
          return [JSON.parse(l) as Record<string, unknown>];
        } catch {
          return [];
        }
      });
  const urls = new Promise<{ main: string; metrics?: string }>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no listening line: ${out}`)), 20_000);
    const check = () => {
      const main = lines().find((l) => l.msg === "memgate listening");
      if (main === undefined) return;
      const metrics = lines().find((l) => l.msg === "metrics listening");
      if (env.MEMGATE_METRICS_PORT !== undefined && metrics === undefined) return;
      clearTimeout(timer);
      resolve({
        main: String(main.url),
        ...(metrics === undefined ? {} : { metrics: String(metrics.url) }),
      });
    };
    child.stdout?.on("data", check);
    child.on("exit", (code) => reject(new Error(`exited early with ${code}: ${out}`)));
  });
  return { child, urls, lines };
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  const exited = new Promise<void>((resolve) => child.on("exit", () => resolve()));
  child.kill("SIGTERM");
  const timer = setTimeout(() => child.kill("SIGKILL"), 10_000);
  await exited;
  clearTimeout(timer);
}

function rssMb(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  return Number(m?.[1] ?? 0) / 1024;
}

async function retrieve(base: string): Promise<void> {
  const res = await fetch(`${base}/v1/retrieve`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ userId: "ana", sessionId: "s-1", query: "coffee", useMemory: true }),
  });
  await res.text();
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("finding 05 — pipelined requests do not amplify", () => {
  beforeAll(ensureBuilt);

  test("3,000 pipelined GET /metrics on one socket: /healthz stays fast, memory stays flat, the socket is cut", async () => {
    const { child, urls } = serve({});
    const pid = child.pid ?? 0;
    try {
      const { main } = await urls;
      for (let i = 0; i < 5; i++) await retrieve(main);
      const before = rssMb(pid);
      const { port, hostname } = new URL(main);

      // One write of 3,000 requests; the attacker never reads (the socket is paused).
      const attack = connect(Number(port), hostname);
      let closed = false;
      attack.on("error", () => undefined);
      attack.on("close", () => {
        closed = true;
      });
      await new Promise<void>((resolve) => attack.once("connect", () => resolve()));
      attack.pause();
      attack.write("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n".repeat(3000));

      let slowest = 0;
      let peak = before;
      // Sampled from this process on its own timer: the server's stalls do not stop the sampling.
      const sampler = setInterval(() => {
        peak = Math.max(peak, rssMb(pid));
      }, 50);
      const until = Date.now() + 4000;
      while (Date.now() < until) {
        const started = Date.now();
        try {
          const res = await fetch(`${main}/healthz`, { signal: AbortSignal.timeout(15_000) });
          await res.text();
        } catch {
          // No answer within 15 s: counted as 15 s.
        }
        slowest = Math.max(slowest, Date.now() - started);
        await sleep(100);
      }
      clearInterval(sampler);
      attack.destroy();
      expect({
        slowestHealthzMs: slowest < 2000 ? "< 2000" : slowest,
        rssGrowthMb: peak - before < 150 ? "< 150" : Math.round(peak - before),
        attackSocketCut: closed,
      }).toEqual({ slowestHealthzMs: "< 2000", rssGrowthMb: "< 150", attackSocketCut: true });
    } finally {
      await stop(child);
    }
  }, 60_000);

  test("a scrape logs no ERROR line (resource attributes read before they settled)", async () => {
    const { child, urls, lines } = serve({});
    try {
      const { main } = await urls;
      await retrieve(main);
      for (let i = 0; i < 3; i++) {
        const res = await fetch(`${main}/metrics`);
        expect(res.status).toBe(200);
        expect(await res.text()).toContain("target_info");
      }
      await sleep(200);
      const errors = lines().filter((l) => Number(l.level) >= 50);
      expect(errors.map((l) => l.msg)).toEqual([]);
    } finally {
      await stop(child);
    }
  }, 60_000);

  test("MEMGATE_METRICS_TOKEN: /metrics needs the bearer token", async () => {
    const { child, urls } = serve({ MEMGATE_METRICS_TOKEN: "scrape-token-0123456789abcdef" });
    try {
      const { main } = await urls;
      expect((await fetch(`${main}/metrics`)).status).toBe(401);
      const wrong = await fetch(`${main}/metrics`, { headers: { authorization: "Bearer nope" } });
      expect(wrong.status).toBe(401);
      const ok = await fetch(`${main}/metrics`, {
        headers: { authorization: "Bearer scrape-token-0123456789abcdef" },
      });
      expect(ok.status).toBe(200);
      expect(await ok.text()).toContain("target_info");
      expect((await fetch(`${main}/healthz`)).status).toBe(200);
    } finally {
      await stop(child);
    }
  }, 60_000);

  test("MEMGATE_METRICS_PORT: /metrics on its own listener only", async () => {
    const { child, urls } = serve({ MEMGATE_METRICS_PORT: "0" });
    try {
      const { main, metrics } = await urls;
      expect(metrics).toBeDefined();
      expect((await fetch(`${main}/metrics`)).status).toBe(404);
      const res = await fetch(`${metrics}/metrics`);
      expect(res.status).toBe(200);
      expect(await res.text()).toContain("target_info");
      expect((await fetch(`${metrics}/v1/retrieve`, { method: "POST" })).status).toBe(404);
    } finally {
      await stop(child);
    }
  }, 60_000);
});
