import { spawn, spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";

/**
 * The short form of `npm run soak` in CI (bench/soak.ts): 35 s at 150 req/s against the compiled gateway, with a
 * backend 5xx burst, a latency spike beyond the timeout and Redis killed and restarted. Every request must be
 * answered, none with a 5xx, the heap must stay flat and the gateway must exit 0 on SIGTERM.
 * Needs `redis-server` on the PATH (.ci/run installs it). The long run's figures are in docs/benchmarks.md#the-soak.
 */
const ROOT = join(__dirname, "../..");

interface SoakJson {
  pass: boolean;
  reasons: string[];
  sent: number;
  answered: number;
  unanswered: number;
  fiveXx: number;
  fallbacks: Record<string, number>;
  faults: Array<{ kind: string }>;
  heapGrowth: number;
  gatewayExit: number | null;
}

function ensureBuilt(): void {
  if (!existsSync(join(ROOT, "dist/cli/main.js"))) {
    const r = spawnSync("npm", ["run", "build"], { cwd: ROOT, encoding: "utf8" });
    if (r.status !== 0) throw new Error(`npm run build failed: ${r.stderr}`);
  }
}

describe("soak (short form)", () => {
  beforeAll(ensureBuilt);

  test("35 s at 150 req/s with faults: all answered, zero 5xx, flat heap, exit 0", async () => {
    const child = spawn(
      process.execPath,
      [require.resolve("tsx/cli"), "bench/soak.ts", "--duration", "35", "--rate", "150", "--json"],
      { cwd: ROOT, env: { ...process.env }, stdio: ["ignore", "pipe", "pipe"] },
    );
    let out = "";
    let err = "";
    child.stdout.on("data", (c: Buffer) => {
      out += c.toString();
    });
    child.stderr.on("data", (c: Buffer) => {
      err += c.toString();
    });
    const code = await new Promise<number | null>((resolve) => child.on("exit", (c) => resolve(c)));
    const last = out.trim().split("\n").pop() ?? "";
    if (!last.startsWith("{")) throw new Error(`no JSON summary (exit ${code}):\n${out}\n${err}`);
    const r = JSON.parse(last) as SoakJson;
    expect({ reasons: r.reasons, code }).toEqual({ reasons: [], code: 0 });
    expect(r.pass).toBe(true);
    expect(r.fiveXx).toBe(0);
    expect(r.unanswered).toBe(0);
    expect(r.answered).toBe(r.sent);
    expect(r.sent).toBeGreaterThan(35 * 150 * 0.95);
    expect(r.gatewayExit).toBe(0);
    expect(r.faults.map((f) => f.kind)).toEqual(
      expect.arrayContaining(["backend_5xx", "latency_spike", "redis_down"]),
    );
    // The faults were felt (and answered with the declared fallback), not silently skipped.
    expect(r.fallbacks.OPENMEMORY_UNAVAILABLE ?? 0).toBeGreaterThan(0);
    expect(r.fallbacks.none ?? 0).toBeGreaterThan(0);
  }, 120_000);
});
