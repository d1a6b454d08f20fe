/**
 * memgate as the bench runs it: the real binary (`node bin/memgate.js serve`, compiled dist/) in its own process,
 * with Redis (cache, single-flight, per-key and per-user limits, cooldowns) or without (every store in-process),
 * tracing on (every span recorded and exported over OTLP/HTTP protobuf by the SDK's batch processor to the
 * bench's sink) or as `serve` starts without OTEL_TRACES_EXPORTER (no span exporter), access logs at `info` (to
 * /dev/null) and the Prometheus `/metrics`. Bench-only additions: `--expose-gc` and bench/gateway/heap-probe.cjs
 * (heap on SIGUSR2), and `--cpu-prof` when asked.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { HeapReader } from "../lib/heap-reader";
import { freePort, stopChild, track, until } from "./procs";

const ROOT = resolve(__dirname, "../..");

/**
 * policies/default.yaml (or the file `MEMGATE_BENCH_POLICY` names, to compare another policy on the same path) with
 * the backend named and the per-user limit out of the way (one bench user).
 */
function benchPolicy(backend: BenchBackend): string {
  const shipped = readFileSync(
    process.env.MEMGATE_BENCH_POLICY ?? join(ROOT, "policies/default.yaml"),
    "utf8",
  );
  return shipped
    .replace(/^# backend: .*$/m, `backend: ${backend}`)
    .replace(/perUser: \{[^}]*\}/, "perUser: { points: 1000000, durationSeconds: 60 }")
    .replace(/backendMs: \d+/, "backendMs: 10000");
}

export interface HeapSample {
  heapUsedBeforeGc: number;
  heapUsed: number;
  external: number;
  arrayBuffers: number;
  rss: number;
}

export type BenchBackend = "openmemory" | "zep";

export interface GatewayOptions {
  /** Which backend the tenant uses (default openmemory); `backendUrl` is its origin (Zep: `/api/v2` is added). */
  backend?: BenchBackend;
  backendUrl: string;
  /** Redis for the cache, single-flight, limits and cooldowns; without it every store is in-process. */
  redisUrl?: string;
  /** The OTLP sink every span is exported to; without it no span exporter (the default of `memgate serve`). */
  sinkUrl?: string;
  /** Directory for a CPU profile (`--cpu-prof`), written when the gateway exits. */
  cpuProfDir?: string;
  /** More environment (experiments: e.g. OTEL_SDK_DISABLED=true to see what tracing costs). */
  env?: Record<string, string>;
  /**
   * Another build to run (a directory holding its own bin/ and dist/, e.g. an earlier commit's, to compare in the
   * same run); default this checkout.
   */
  root?: string;
}

export class Gateway {
  private readonly probe: HeapReader<HeapSample>;

  private constructor(
    readonly child: ChildProcess,
    readonly url: string,
    private readonly dir: string,
  ) {
    this.probe = new HeapReader(child, "BENCH_HEAP");
  }

  static async start(opts: GatewayOptions): Promise<Gateway> {
    const root = opts.root ?? ROOT;
    if (!existsSync(join(root, "dist/cli/main.js")))
      throw new Error(`${root}/dist/ is missing: run \`npm run build\``);
    const dir = mkdtempSync(join(tmpdir(), "memgate-gwbench-"));
    const backend = opts.backend ?? "openmemory";
    writeFileSync(join(dir, "default.yaml"), benchPolicy(backend));
    writeFileSync(join(dir, "empty.jsonl"), "");
    const port = await freePort();
    const prof = opts.cpuProfDir === undefined ? [] : ["--cpu-prof", `--cpu-prof-dir=${opts.cpuProfDir}`];
    const args = [
      ...prof,
      "--expose-gc",
      "-r",
      join(__dirname, "heap-probe.cjs"),
      join(root, "bin/memgate.js"),
    ];
    const child = track(
      spawn(process.execPath, [...args, "serve"], {
        cwd: root,
        env: {
          PATH: process.env.PATH ?? "",
          HOST: "127.0.0.1",
          PORT: String(port),
          MEMGATE_BACKEND: backend,
          ...(backend === "zep"
            ? { ZEP_BASE_URL: `${opts.backendUrl}/api/v2`, ZEP_API_KEY: "bench-zep-key" }
            : { OPENMEMORY_URL: opts.backendUrl }),
          ...(opts.redisUrl === undefined
            ? {}
            : { REDIS_URL: opts.redisUrl, MEMGATE_REDIS_PREFIX: "gwbench:" }),
          MEMGATE_POLICY_DIR: dir,
          MEMGATE_LOCAL_DATA: join(dir, "empty.jsonl"),
          MEMGATE_KEY_RATE_LIMIT: "9999999/60",
          // Room for the heap phase's in-flight requests (the default bulkhead is 32 + 32 queued).
          MEMGATE_BULKHEAD_LIMIT: "512",
          LOG_LEVEL: "info",
          ...(opts.sinkUrl === undefined
            ? {}
            : {
                OTEL_TRACES_EXPORTER: "otlp",
                OTEL_EXPORTER_OTLP_PROTOCOL: "http/protobuf",
                OTEL_EXPORTER_OTLP_ENDPOINT: opts.sinkUrl,
              }),
          ...opts.env,
        },
        stdio: ["ignore", "ignore", "pipe"],
      }),
    );
    const gw = new Gateway(child, `http://127.0.0.1:${port}`, dir);
    try {
      await until(`the gateway's /readyz${opts.redisUrl === undefined ? "" : " with Redis"}`, async () => {
        if (child.exitCode !== null)
          throw new Error(`the gateway exited (${child.exitCode}): ${gw.probe.tail}`);
        const res = await fetch(`${gw.url}/readyz`);
        const json = (await res.json()) as { checks?: Array<{ name: string; ok: boolean }> };
        const redisOk = (json.checks ?? []).some((c) => c.name === "redis" && c.ok);
        return res.ok && (opts.redisUrl === undefined || redisOk);
      });
    } catch (err) {
      await stopChild(child, 2000);
      rmSync(dir, { recursive: true, force: true });
      throw err;
    }
    return gw;
  }

  /** The heap before and after two forced GCs (bench/gateway/heap-probe.cjs). */
  heap(timeoutMs = 10_000): Promise<HeapSample> {
    return this.probe.heap(timeoutMs);
  }

  /** Sums of the retrieval counters on /metrics: cache results and fallbacks by code. */
  async answers(): Promise<Map<string, number>> {
    const text = await (await fetch(`${this.url}/metrics`)).text();
    const out = new Map<string, number>();
    for (const line of text.split("\n")) {
      const cache = /^memgate_retrieval_cache_lookups_total\{[^}]*cache="(\w+)"[^}]*\} (\S+)/.exec(line);
      const fallback = /^memgate_retrieval_fallbacks_total\{[^}]*code="(\w+)"[^}]*\} (\S+)/.exec(line);
      const m = cache ?? fallback;
      if (m?.[1] === undefined) continue;
      const key = cache ? m[1] : `fallback ${m[1]}`;
      out.set(key, (out.get(key) ?? 0) + Number(m[2]));
    }
    return out;
  }

  /** Graceful stop (SIGTERM); a CPU profile is written on this exit. */
  async stop(): Promise<number | null> {
    const code = await stopChild(this.child);
    rmSync(this.dir, { recursive: true, force: true });
    return code;
  }
}
