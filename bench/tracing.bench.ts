/**
 * Tracing overhead: the gateway answering `POST /v1/retrieve` end to end over HTTP, with and without the
 * OpenTelemetry SDK. Issue goal: tracing adds at most 10 % to the p50 latency.
 *
 *   npx tsx bench/tracing.bench.ts [--quick] [--backend-ms=N]      (or: npx tsx bench/index.ts tracing)
 *
 * Each configuration runs in its own server process (the instrumentations patch http/express at load time, so
 * they cannot be switched in one process):
 *   none    no SDK at all (the baseline)
 *   sdk     the SDK as `memgate serve` starts it with no OTEL_* variable: instrumentations, propagation,
 *           Prometheus metrics, no span exporter (spans are not recorded)
 *   traced  the same plus every span recorded and batched to an exporter that drops them (OTLP's cost on the
 *           wire is the collector's: the batch processor exports off the request path)
 * This process is the client: one keep-alive connection per server, one request at a time, requests alternating
 * between the three servers (rotating who goes first) so drift on a shared machine hits all alike, and a new
 * query each time (every request is a cache miss: backend call + every policy stage). The backend is in-process
 * (16 candidates of ~500 chars, 1 in 8 near-duplicates) and instant unless `--backend-ms` adds a delay: the
 * gateway's own time is then the whole denominator, the worst case for a relative overhead.
 * Besides latency it reports each server's CPU time per request, which a busy machine disturbs far less.
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
const WARMUP = QUICK ? 150 : 500;
const SAMPLES = QUICK ? 400 : 4000;
const BACKEND_MS = Number(process.argv.find((a) => a.startsWith("--backend-ms="))?.split("=")[1] ?? 0);

type ToChild = "cpu" | "stop";
type FromChild = { url: string } | { cpuUs: number } | { spans: number };

// ---- the server (child process) -----------------------------------------------------------------------

async function serveChild(mode: Mode, backendMs: number): Promise<void> {
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
  // Loaded only now, after the SDK, as bin/memgate.js does for `serve`.
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
    search: async (req: { limit: number }) => {
      if (backendMs > 0) await new Promise((r) => setTimeout(r, backendMs));
      return candidates.slice(0, req.limit);
    },
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
  const send = (m: FromChild) => process.send?.(m);
  send({ url: running.url });
  process.on("message", (m: ToChild) => {
    if (m === "cpu") {
      const { user, system } = process.cpuUsage();
      send({ cpuUs: user + system });
      return;
    }
    void (async () => {
      await running.stop();
      await shutdownTelemetry();
      send({ spans: exportedSpans });
      process.disconnect();
    })();
  });
}

// ---- the client (this process) ------------------------------------------------------------------------

interface Server {
  mode: Mode;
  child: ChildProcess;
  agent: Agent;
  /** The next message from the child that has `key`. */
  next<K extends "url" | "cpuUs" | "spans">(key: K): Promise<number | string>;
}

function startServerProcess(mode: Mode): Server {
  const child = spawn(
    process.execPath,
    [...process.execArgv, __filename, `--serve=${mode}`, `--backend-ms=${BACKEND_MS}`],
    { env: { PATH: process.env.PATH ?? "" }, stdio: ["ignore", "ignore", "inherit", "ipc"] },
  );
  const waiting: Array<{ key: string; resolve: (v: number | string) => void }> = [];
  child.on("message", (m: Record<string, number | string>) => {
    const i = waiting.findIndex((w) => w.key in m);
    const w = waiting[i];
    if (w === undefined) return;
    waiting.splice(i, 1);
    w.resolve(m[w.key] ?? "");
  });
  return {
    mode,
    child,
    agent: new Agent({ keepAlive: true, maxSockets: 1 }),
    next: (key) =>
      new Promise((resolve, reject) => {
        waiting.push({ key, resolve });
        child.once("exit", (code) =>
          reject(new Error(`${mode} server exited (${code}) before sending ${key}`)),
        );
      }),
  };
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

interface Measured {
  samples: number[];
  cpuUsPerRequest: number;
  spansPerRequest: number;
}

async function measure(): Promise<Map<Mode, Measured>> {
  const servers = MODES.map(startServerProcess);
  const urls = (await Promise.all(servers.map((s) => s.next("url")))).map(String);
  let q = 0;
  const ask = (i: number) => {
    const query = `what did I order, ${q++}?`;
    const body = JSON.stringify({ userId: "bench-user", sessionId: "s-1", query, useMemory: true });
    return post(urls[i] ?? "", servers[i]?.agent ?? new Agent(), body);
  };
  const samples = servers.map((): number[] => []);
  const cpu = async () =>
    Promise.all(
      servers.map(async (s) => {
        s.child.send("cpu");
        return Number(await s.next("cpuUs"));
      }),
    );
  let cpuBefore: number[] = [];
  for (let n = 0; n < WARMUP + SAMPLES; n++) {
    if (n === WARMUP) cpuBefore = await cpu();
    for (let k = 0; k < servers.length; k++) {
      const i = (n + k) % servers.length;
      const started = process.hrtime.bigint();
      await ask(i);
      if (n >= WARMUP) samples[i]?.push(Number(process.hrtime.bigint() - started));
    }
  }
  const cpuAfter = await cpu();
  const out = new Map<Mode, Measured>();
  for (const [i, s] of servers.entries()) {
    s.agent.destroy();
    s.child.send("stop");
    const spans = Number(await s.next("spans"));
    out.set(s.mode, {
      samples: samples[i] ?? [],
      cpuUsPerRequest: ((cpuAfter[i] ?? 0) - (cpuBefore[i] ?? 0)) / SAMPLES,
      spansPerRequest: spans / (WARMUP + SAMPLES),
    });
  }
  return out;
}

async function main(): Promise<void> {
  const backend = BACKEND_MS > 0 ? `backend ${BACKEND_MS} ms` : "instant in-process backend";
  console.log(heading(`tracing overhead: POST /v1/retrieve end to end (cache miss, ${backend})`));
  for (const line of hostInfo()) console.log(line);
  console.log(`${int(SAMPLES)} requests per configuration, interleaved (after ${WARMUP} warm-up each)`);
  const measured = await measure();
  const stats = new Map(MODES.map((m) => [m, summarize(measured.get(m)?.samples ?? [])]));
  const rows = MODES.map((m) => {
    const s = stats.get(m);
    const r = measured.get(m);
    if (!s || !r) return [m];
    const cpu = (r.cpuUsPerRequest / 1000).toFixed(3);
    return [m, int(s.n), ms(s.median), ms(s.p90), ms(s.p99), ms(s.mean), cpu, r.spansPerRequest.toFixed(1)];
  });
  const header = ["config", "n", "p50 ms", "p90 ms", "p99 ms", "mean ms", "server CPU ms/req", "spans/req"];
  console.log(`\n${table(header, rows, ["left"])}`);
  const pct = (x: number) => `${x >= 0 ? "+" : ""}${x.toFixed(1)} %`;
  const compare = (label: string, on: Mode, off: Mode, goal: boolean) => {
    const a = stats.get(on);
    const b = stats.get(off);
    if (!a || !b) return;
    const p50 = (a.median / b.median - 1) * 100;
    const p99 = (a.p99 / b.p99 - 1) * 100;
    const cpu =
      ((measured.get(on)?.cpuUsPerRequest ?? 0) / (measured.get(off)?.cpuUsPerRequest ?? 1) - 1) * 100;
    const verdict = goal ? `   goal ≤ +10 % at p50: ${p50 <= 10 ? "met" : "NOT met"}` : "";
    console.log(`${label.padEnd(44)} p50 ${pct(p50)}, p99 ${pct(p99)}, server CPU ${pct(cpu)}${verdict}`);
  };
  console.log("");
  // `memgate serve` always runs the SDK (Prometheus /metrics); OTEL_TRACES_EXPORTER switches tracing on.
  compare("tracing on vs off (traced vs sdk):", "traced", "sdk", true);
  compare("SDK without span export vs no SDK (sdk vs none):", "sdk", "none", false);
  compare("everything vs no SDK (traced vs none):", "traced", "none", false);
}

const serveArg = process.argv.find((a) => a.startsWith("--serve="));
if (serveArg !== undefined) {
  const mode = serveArg.slice("--serve=".length);
  if (mode !== "none" && mode !== "sdk" && mode !== "traced") throw new Error(`unknown mode ${mode}`);
  void serveChild(mode, BACKEND_MS);
} else {
  main().catch((err: unknown) => {
    console.error(err);
    process.exit(1);
  });
}
