/**
 * Tracing overhead: the gateway answering `POST /v1/retrieve` end to end over HTTP, with and without the
 * OpenTelemetry SDK. Issue goal: tracing adds at most 10 % to the p50 latency.
 *
 *   npx tsx bench/tracing.bench.ts [--quick]        (or: npx tsx bench/index.ts tracing)
 *
 * Each configuration runs in its own server process (the instrumentations patch http/express at load time, so
 * they cannot be switched in one process); this process is the client: one keep-alive connection, one request
 * at a time, a different query each time (every request is a cache miss: backend call + all policy stages).
 *   none    no SDK at all (the baseline)
 *   sdk     the SDK as `memgate serve` starts it with no OTEL_* variable: instrumentations, propagation,
 *           Prometheus metrics, no span exporter (spans are not recorded)
 *   traced  the same plus every span recorded and batched to an exporter that drops them (OTLP's cost on the
 *           wire is the collector's, not the request's: the batch processor exports off the request path)
 * The backend is in-process and instant (16 candidates of ~500 chars, 1 in 8 near-duplicates), which makes the
 * gateway's own time the whole denominator: the worst case for a relative overhead. The three servers run
 * side by side and requests alternate between them (rotating who goes first), so drift on a shared machine
 * hits all of them alike.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { Agent, request as httpRequest } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { makeCandidates } from "./lib/corpus";
import { heading, hostInfo, int, ms, summarize, table } from "./lib/stats";

type Mode = "none" | "sdk" | "traced";
const MODES: readonly Mode[] = ["none", "sdk", "traced"];
const QUICK = process.argv.includes("--quick");
const ROUNDS = QUICK ? 1 : 4;
const WARMUP = QUICK ? 150 : 400;
const SAMPLES = QUICK ? 400 : 1000;

// ---- the server (child process) -----------------------------------------------------------------------

async function serveChild(mode: Mode): Promise<void> {
  let exportedSpans = 0;
  if (mode !== "none") {
    const { startTelemetry } = require("../src/telemetry/sdk") as typeof import("../src/telemetry/sdk");
    const { BatchSpanProcessor } =
      require("@opentelemetry/sdk-trace-base") as typeof import("@opentelemetry/sdk-trace-base");
    const dropAll = {
      export(spans: unknown[], done: (r: { code: 0 }) => void) {
        exportedSpans += spans.length;
        done({ code: 0 });
      },
      shutdown: async () => undefined,
    };
    startTelemetry(mode === "traced" ? { spanProcessors: [new BatchSpanProcessor(dropAll)] } : {});
  }
  // Loaded only now, after the SDK: that is what bin/memgate.js does for `serve`.
  const pino = require("pino") as typeof import("pino");
  const { createLogger } = require("../src/logging/logger") as typeof import("../src/logging/logger");
  const { startServer } = require("../src/server/serve") as typeof import("../src/server/serve");
  const { shutdownTelemetry } =
    require("../src/telemetry/lifecycle") as typeof import("../src/telemetry/lifecycle");

  const dir = mkdtempSync(join(tmpdir(), "memgate-bench-"));
  writeFileSync(
    join(dir, "default.yaml"),
    "name: default\nversion: 1\ntokenizer: o200k_base\nrateLimit: { perUser: { points: 1000000, durationSeconds: 60 } }\n",
  );
  writeFileSync(join(dir, "empty.jsonl"), "");
  const candidates = makeCandidates({ count: 16, chars: 500, seed: 7 });
  const fake = (name: "local" | "zep" | "openmemory") => ({
    name,
    search: async (req: { limit: number }) => candidates.slice(0, req.limit),
    userExists: async () => true,
    ping: async () => undefined,
  });
  const running = await startServer(
    {
      HOST: "127.0.0.1",
      PORT: "0",
      MEMGATE_POLICY_DIR: dir,
      MEMGATE_LOCAL_DATA: join(dir, "empty.jsonl"),
      MEMGATE_KEY_RATE_LIMIT: "9999999/60",
    },
    {
      // Production logging (one access line per request, with the mixin), written where it costs little.
      logger: createLogger("info", pino.destination({ dest: "/dev/null", sync: true })),
      factories: { local: () => fake("local"), zep: () => fake("zep"), openmemory: () => fake("openmemory") },
    },
  );
  process.stdout.write(`${JSON.stringify({ url: running.url })}\n`);
  process.once("SIGTERM", () => {
    void (async () => {
      await running.stop();
      await shutdownTelemetry();
      process.stdout.write(`${JSON.stringify({ spans: exportedSpans })}\n`);
      process.exit(0);
    })();
  });
}

// ---- the client (this process) ------------------------------------------------------------------------

function startChild(mode: Mode): { child: ChildProcess; url: Promise<string>; spans: Promise<number> } {
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH ?? "" };
  const child = spawn(process.execPath, [...process.execArgv, __filename, `--serve=${mode}`], {
    env,
    stdio: ["ignore", "pipe", "inherit"],
  });
  let out = "";
  const lines: Array<(o: Record<string, unknown>) => void> = [];
  child.stdout?.on("data", (chunk: Buffer) => {
    out += chunk.toString();
    let nl = out.indexOf("\n");
    while (nl !== -1) {
      const line = out.slice(0, nl);
      out = out.slice(nl + 1);
      try {
        const parsed = JSON.parse(line) as Record<string, unknown>;
        for (const l of lines) l(parsed);
      } catch {
        // not ours
      }
      nl = out.indexOf("\n");
    }
  });
  const field = <T>(name: string) =>
    new Promise<T>((resolve, reject) => {
      lines.push((o) => {
        if (name in o) resolve(o[name] as T);
      });
      child.once("exit", (code) =>
        reject(new Error(`${mode} server exited (${code}) before reporting ${name}`)),
      );
    });
  return { child, url: field<string>("url"), spans: field<number>("spans") };
}

function post(url: string, agent: Agent, body: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      `${url}/v1/retrieve`,
      { method: "POST", agent, headers: { "content-type": "application/json" } },
      (res) => {
        if (res.statusCode !== 200) reject(new Error(`HTTP ${res.statusCode}`));
        res.resume();
        res.on("end", () => resolve());
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}

/** One running server per configuration; requests alternate between them, so load drift hits all alike. */
async function measureInterleaved(): Promise<Map<Mode, { samples: number[]; spans: number }>> {
  const servers = MODES.map((mode) => ({
    mode,
    ...startChild(mode),
    agent: new Agent({ keepAlive: true, maxSockets: 1 }),
  }));
  const urls = await Promise.all(servers.map((s) => s.url));
  let q = 0;
  const ask = (i: number) =>
    post(
      urls[i] ?? "",
      servers[i]?.agent ?? new Agent(),
      JSON.stringify({
        userId: "bench-user",
        sessionId: "s-1",
        query: `what did I order, ${q++}?`,
        useMemory: true,
      }),
    );
  const samples = new Map<Mode, number[]>(MODES.map((m) => [m, []]));
  const total = ROUNDS * SAMPLES;
  for (let n = 0; n < WARMUP + total; n++) {
    // Rotate which configuration goes first, so none always follows the same one.
    for (let k = 0; k < servers.length; k++) {
      const i = (n + k) % servers.length;
      const started = process.hrtime.bigint();
      await ask(i);
      const ns = Number(process.hrtime.bigint() - started);
      if (n >= WARMUP) samples.get(MODES[i] ?? "none")?.push(ns);
    }
  }
  const out = new Map<Mode, { samples: number[]; spans: number }>();
  for (const s of servers) {
    s.agent.destroy();
    s.child.kill("SIGTERM");
    out.set(s.mode, { samples: samples.get(s.mode) ?? [], spans: (await s.spans) / (WARMUP + total) });
  }
  return out;
}

async function main(): Promise<void> {
  console.log(heading("tracing overhead: POST /v1/retrieve end to end (cache miss, in-process backend)"));
  for (const line of hostInfo()) console.log(line);
  console.log(
    `${int(ROUNDS * SAMPLES)} requests per configuration, interleaved across the three servers (after ${WARMUP} warm-up each)`,
  );
  const measured = await measureInterleaved();
  const stats = new Map(MODES.map((m) => [m, summarize(measured.get(m)?.samples ?? [])]));
  const rows = MODES.map((m) => {
    const s = stats.get(m);
    if (!s) return [m];
    const spans = (measured.get(m)?.spans ?? 0).toFixed(1);
    return [m, int(s.n), ms(s.median), ms(s.p90), ms(s.p99), ms(s.mean), spans];
  });
  console.log(
    `\n${table(["config", "n", "p50 ms", "p90 ms", "p99 ms", "mean ms", "spans/req"], rows, ["left"])}`,
  );
  const base = stats.get("none");
  if (!base) return;
  const pct = (x: number) => `${x >= 0 ? "+" : ""}${x.toFixed(1)} %`;
  for (const m of ["sdk", "traced"] as const) {
    const s = stats.get(m);
    if (!s) continue;
    const p50 = (s.median / base.median - 1) * 100;
    const p99 = (s.p99 / base.p99 - 1) * 100;
    const goal = m === "traced" ? `  (goal ≤ +10 % at p50: ${p50 <= 10 ? "met" : "NOT met"})` : "";
    console.log(`${m} vs none: p50 ${pct(p50)}, p99 ${pct(p99)}${goal}`);
  }
}

const serveArg = process.argv.find((a) => a.startsWith("--serve="));
if (serveArg !== undefined) {
  const mode = serveArg.slice("--serve=".length);
  if (mode !== "none" && mode !== "sdk" && mode !== "traced") throw new Error(`unknown mode ${mode}`);
  void serveChild(mode);
} else {
  main().catch((err: unknown) => {
    console.error(err);
    process.exit(1);
  });
}
