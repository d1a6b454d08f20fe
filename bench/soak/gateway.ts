import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { HeapReader } from "../lib/heap-reader";

const ROOT = join(__dirname, "../..");

/** The policy the soak serves: defaults, except limits out of the way and a short cache TTL (more misses). */
const SOAK_POLICY = `name: default
version: 1
retrieval: { topK: 8, minScore: 0 }
tokenizer: o200k_base
cache: { ttlSeconds: 3, staleSeconds: 120 }
rateLimit: { perUser: { points: 1000000, durationSeconds: 60 } }
timeouts: { backendMs: 1500 }
`;

export interface HeapSample {
  heapUsed: number;
  heapTotal: number;
  rss: number;
  external: number;
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const addr = srv.address();
      const port = typeof addr === "object" && addr !== null ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

/**
 * The real binary (`node bin/memgate.js serve`, compiled dist/) in a child process, with `--expose-gc` and the
 * soak's heap probe preloaded: `heap()` forces a GC in the child and reads its heap (bench/soak/heap-probe.cjs).
 */
export class SoakGateway {
  private readonly probe: HeapReader<HeapSample>;

  private constructor(
    private readonly child: ChildProcess,
    readonly url: string,
    private readonly dir: string,
  ) {
    this.probe = new HeapReader(child, "SOAK_HEAP");
    child.stdout?.resume(); // warn-level logs: drained, not kept
  }

  static async start(env: {
    openMemoryUrl: string;
    redisUrl: string;
    nodeFlags?: readonly string[];
  }): Promise<SoakGateway> {
    if (!existsSync(join(ROOT, "dist/cli/main.js"))) {
      throw new Error("dist/ is missing: run `npm run build` first (the soak runs the compiled gateway)");
    }
    const dir = mkdtempSync(join(tmpdir(), "memgate-soak-"));
    writeFileSync(join(dir, "default.yaml"), SOAK_POLICY);
    writeFileSync(join(dir, "empty.jsonl"), "");
    const port = await freePort();
    const child = spawn(
      process.execPath,
      [
        ...(env.nodeFlags ?? []),
        "--expose-gc",
        "-r",
        join(__dirname, "heap-probe.cjs"),
        join(ROOT, "bin/memgate.js"),
        "serve",
      ],
      {
        cwd: ROOT,
        env: {
          PATH: process.env.PATH ?? "",
          HOST: "127.0.0.1",
          PORT: String(port),
          MEMGATE_BACKEND: "openmemory",
          OPENMEMORY_URL: env.openMemoryUrl,
          REDIS_URL: env.redisUrl,
          MEMGATE_REDIS_PREFIX: "soak:",
          MEMGATE_POLICY_DIR: dir,
          MEMGATE_LOCAL_DATA: join(dir, "empty.jsonl"),
          MEMGATE_KEY_RATE_LIMIT: "1000000/60",
          LOG_LEVEL: "warn",
        },
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
    const gw = new SoakGateway(child, `http://127.0.0.1:${port}`, dir);
    await gw.waitReady(20_000);
    return gw;
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  private async waitReady(timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      if (this.child.exitCode !== null)
        throw new Error(`the gateway exited with ${this.child.exitCode}: ${this.probe.tail}`);
      const ok = await fetch(`${this.url}/healthz`).then(
        (r) => r.ok,
        () => false,
      );
      if (ok) return;
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error(`the gateway did not answer /healthz within ${timeoutMs} ms`);
  }

  /** Forces a GC in the gateway and returns its heap afterwards. */
  heap(timeoutMs = 10_000): Promise<HeapSample> {
    return this.probe.heap(timeoutMs);
  }

  /** SIGTERM (graceful shutdown); resolves with the exit code. */
  async stop(timeoutMs = 15_000): Promise<number | null> {
    const exited = new Promise<number | null>((resolve) => {
      if (this.child.exitCode !== null) resolve(this.child.exitCode);
      else this.child.once("exit", (code) => resolve(code));
    });
    this.child.kill("SIGTERM");
    const timer = setTimeout(() => this.child.kill("SIGKILL"), timeoutMs);
    const code = await exited;
    clearTimeout(timer);
    rmSync(this.dir, { recursive: true, force: true });
    return code;
  }
}
