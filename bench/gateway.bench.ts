/**
 * The whole gateway against its floor (issue "Performance: measure the whole gateway against its floor and its
 * peers"). Every party runs in its own process on loopback:
 *   - a private redis-server (no persistence), stopped at the end;
 *   - a fake OpenMemory answering `POST /memory/query` in a fixed time (0 ms and 50 ms; bench/gateway/servers.ts);
 *   - a bare Express app with one route that does nothing (the floor);
 *   - an OTLP/HTTP sink that discards spans;
 *   - memgate itself: `node bin/memgate.js serve` from dist/ (rebuilt first unless `--no-build`) with Redis cache
 *     and limits, tracing on (OTLP http/protobuf, batch processor) and info access logs (bench/gateway/memgate.ts);
 *   - the load generator (bench/gateway/load.ts).
 * Scenarios: (a) direct calls to the fake backend, (b) memgate cache miss (a new query per request), (c) memgate
 * cache hit (one query), (d) the floor; each at a fixed rate (open loop, latency) and at max throughput (autocannon,
 * closed loop). Then the heap per in-flight request (N requests held at a slow backend; heap after GC vs idle)
 * and the pipeline's growth with input size. Prints goal lines; exits 0 whatever the figures.
 *
 *   npx tsx bench/gateway.bench.ts [--quick] [--no-build] [--rate=500] [--profile] [--only=hit,floor]
 *                                  [--env=NAME=value,NAME=value] [--seconds=N]
 *                                  [--modes=seq,rate,max]
 *
 * `--profile` runs the gateway under `node --cpu-prof` and prints its top self-time functions and packages.
 * `--seconds` sets every run's length (longer runs: steadier tails).
 * `--env` adds environment to the gateway's (experiments: `--env=OTEL_TRACES_EXPORTER=none` is tracing off).
 */
import { type ChildProcess, spawnSync } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { growthTable } from "./gateway/growth";
import { diff, heapPerInFlight } from "./gateway/in-flight";
import type { LoadResult, LoadSpec } from "./gateway/load";
import { Gateway } from "./gateway/memgate";
import { cpuMs, Helper, startRedis, stopChild } from "./gateway/procs";
import {
  addedTable,
  goalLines,
  latencyTable,
  type Measured,
  type Mode,
  maxTable,
  merge,
  type Run,
  type Scenario,
  type Target,
} from "./gateway/report";
import type { ServerReply, ServerRequest } from "./gateway/servers";
import { benchArgs } from "./lib/args";
import { profileReport } from "./lib/cpuprofile";
import { bytes, heading, hostInfo, int } from "./lib/stats";

const ROOT = resolve(__dirname, "..");
const ARGS = benchArgs(process.argv.slice(2), {
  full: { seq: 2, rate: 4, max: 3 },
  quick: { seq: 1, rate: 2, max: 2 },
});
const { rate: RATE, only: ONLY, gatewayEnv: GATEWAY_ENV, rounds: ROUNDS, modes: MODES } = ARGS;
const { quick: QUICK, profile: PROFILE, seconds: SECONDS, warmupSeconds: WARMUP_S } = ARGS;
const CONNECTIONS = 32;
const DELAYS = [0, 50] as const;
const IN_FLIGHT = 200;
const USER = "bench-user";

const SCENARIOS: Scenario[] = [
  ...DELAYS.flatMap((d): Scenario[] => [
    { target: "direct", backendMs: d },
    { target: "miss", backendMs: d },
  ]),
  { target: "hit", backendMs: undefined } satisfies Scenario,
  { target: "floor", backendMs: undefined } satisfies Scenario,
].filter((s) => ONLY === undefined || ONLY.includes(s.target));

type Server = Helper<ServerRequest, ServerReply>;

interface Parties {
  backend: { helper: Server; url: string };
  floor: { child: ChildProcess; url: string };
  redis: ChildProcess;
  gateway: Gateway;
  load: Helper<LoadSpec, LoadResult>;
}

const retrieveBody = (query: string) =>
  JSON.stringify({ userId: USER, sessionId: "s-1", query, useMemory: true });

function specFor(
  p: Parties,
  target: Target,
  mode: Mode,
  warmupS = WARMUP_S,
  seconds = SECONDS[mode],
): LoadSpec {
  const common = { mode, rate: RATE, connections: CONNECTIONS, warmupS, durationS: seconds };
  switch (target) {
    case "direct": {
      const query = {
        query: "what do I usually order? {n}",
        k: 16,
        user_id: USER,
        filters: { user_id: USER },
      };
      return { ...common, url: `${p.backend.url}/memory/query`, body: JSON.stringify(query), unique: true };
    }
    case "miss":
      return {
        ...common,
        url: `${p.gateway.url}/v1/retrieve`,
        body: retrieveBody("what do I order? {n}"),
        unique: true,
      };
    case "hit":
      return {
        ...common,
        url: `${p.gateway.url}/v1/retrieve`,
        body: retrieveBody("what do I order?"),
        unique: false,
      };
    case "floor":
      return {
        ...common,
        url: `${p.floor.url}/floor`,
        body: retrieveBody("what do I order?"),
        unique: false,
      };
  }
}

async function runScenario(p: Parties, s: Scenario, mode: Mode): Promise<Run> {
  if (s.backendMs !== undefined) await p.backend.helper.ask({ op: "delay", ms: s.backendMs });
  const viaGateway = s.target === "miss" || s.target === "hit";
  const server =
    s.target === "direct" ? p.backend.helper.child : s.target === "floor" ? p.floor.child : p.gateway.child;
  const before = viaGateway ? await p.gateway.answers() : new Map<string, number>();
  const cpu0 = [cpuMs(server.pid), cpuMs(p.redis.pid)];
  const result = await p.load.ask(specFor(p, s.target, mode));
  const cpu1 = [cpuMs(server.pid), cpuMs(p.redis.pid)];
  const answers = viaGateway ? diff(await p.gateway.answers(), before) : new Map<string, number>();
  const cpu = { serverMs: (cpu1[0] ?? 0) - (cpu0[0] ?? 0), redisMs: (cpu1[1] ?? 0) - (cpu0[1] ?? 0) };
  return { result, answers, cpu };
}

async function main(): Promise<void> {
  const started = Date.now();
  console.log(`# gateway bench${QUICK ? " — QUICK mode, rough figures" : ""}`);
  for (const line of hostInfo()) console.log(line);
  if (Object.keys(GATEWAY_ENV).length > 0)
    console.log(`gateway environment added: ${JSON.stringify(GATEWAY_ENV)}`);
  if (ARGS.build) {
    const build = spawnSync("npm", ["run", "--silent", "build"], { cwd: ROOT, stdio: "inherit" });
    if (build.status !== 0)
      throw new Error("npm run build failed: the bench runs the compiled gateway (dist/)");
  }
  console.log(
    `processes: redis-server, fake OpenMemory, bare Express, OTLP sink, memgate (dist/, Redis cache + limits, ` +
      `tracing → OTLP, info logs), load generator; ${ROUNDS} round(s) per scenario and mode of ` +
      `${SECONDS.seq} s (one at a time), ${SECONDS.rate} s (fixed rate), ${SECONDS.max} s (max) ` +
      `(+ ${WARMUP_S} s warm-up each), rounds interleaved`,
  );

  const redis = await startRedis();
  const servers = join(__dirname, "gateway/servers.ts");
  const backend = await Helper.start<ServerRequest, ServerReply>(servers, ["backend"]);
  const floor = await Helper.start<ServerRequest, ServerReply>(servers, ["floor"]);
  const sink = await Helper.start<ServerRequest, ServerReply>(servers, ["sink"]);
  const load = await Helper.start<LoadSpec, LoadResult>(join(__dirname, "gateway/load.ts"), []);
  const profDir = PROFILE ? mkdtempSync(join(tmpdir(), "memgate-prof-")) : undefined;
  const url = (r: ServerReply) => `http://127.0.0.1:${r.port ?? 0}`;
  const gateway = await Gateway.start({
    backendUrl: url(backend.hello),
    redisUrl: redis.url,
    sinkUrl: url(sink.hello),
    ...(profDir === undefined ? {} : { cpuProfDir: profDir }),
    env: GATEWAY_ENV,
  });
  const p: Parties = {
    backend: { helper: backend.helper, url: url(backend.hello) },
    floor: { child: floor.helper.child, url: url(floor.hello) },
    redis: redis.child,
    gateway,
    load: load.helper,
  };

  const runs = new Map<string, Run[]>();
  let heap: Awaited<ReturnType<typeof heapPerInFlight>> | undefined;
  try {
    // JIT warm-up of every path (not counted), and the hit query's cache entry.
    for (const target of ["miss", "hit", "direct", "floor"] as const) {
      await p.load.ask(specFor(p, target, "max", 0, QUICK ? 1 : 2));
    }
    for (let round = 0; round < ROUNDS; round++) {
      for (const mode of MODES) {
        for (const s of SCENARIOS) {
          const key = `${mode}:${s.target}:${s.backendMs}`;
          runs.set(key, [...(runs.get(key) ?? []), await runScenario(p, s, mode)]);
        }
      }
    }
    if (ONLY === undefined || ONLY.includes("heap"))
      heap = await heapPerInFlight({
        backend: p.backend.helper,
        gateway: p.gateway,
        inFlight: IN_FLIGHT,
        holdMs: QUICK ? 2500 : 4000,
        callsPerRequest: 1,
        body: (i) => retrieveBody(`heap probe ${process.pid} ${i}`),
      });
  } finally {
    const sunk = await sink.helper.ask({ op: "stats" });
    console.log(`OTLP sink received ${int(sunk.requests ?? 0)} exports, ${bytes(sunk.bytes)} of spans`);
    await gateway.stop();
    for (const h of [load.helper, backend.helper, floor.helper, sink.helper]) await h.stop();
    await stopChild(redis.child, 5000);
  }

  const measured: Measured[] = [];
  for (const mode of MODES) {
    for (const s of SCENARIOS)
      measured.push(merge(s, mode, runs.get(`${mode}:${s.target}:${s.backendMs}`) ?? []));
  }
  console.log(heading("latency, one request at a time"));
  console.log(latencyTable(measured, "seq", "closed loop, 1 connection, keep-alive"));
  console.log(heading(`latency at a fixed rate: ${RATE} requests/s`));
  console.log(latencyTable(measured, "rate", `open loop, ${RATE} requests/s, each sent on schedule`));
  console.log(heading(`throughput: as fast as it answers (${CONNECTIONS} connections)`));
  console.log(maxTable(measured, CONNECTIONS));
  console.log(heading("memgate's added latency"));
  console.log(addedTable(measured, DELAYS, RATE));
  if (heap !== undefined) {
    console.log(heading(`heap per in-flight request (${IN_FLIGHT} requests held at a slow backend)`));
    console.log(
      `live heap after GC: idle ${bytes(heap.idle.heapUsed)}, with ${IN_FLIGHT} in flight ${bytes(heap.busy.heapUsed)} ` +
        `→ ${bytes(heap.perRequest)} per request; rss ${bytes(heap.idle.rss)} → ${bytes(heap.busy.rss)}; ` +
        `${heap.ok}/${IN_FLIGHT} answered 200`,
    );
  }
  console.log(heading("pipeline cost vs input size (median CPU per runPipeline call, this process)"));
  console.log(growthTable(QUICK ? 60 : 150));
  console.log(heading("goals (2 cores shared by every process above; Redis, limits and tracing on)"));
  for (const line of goalLines(measured, DELAYS, heap?.perRequest ?? Number.NaN)) console.log(line);
  if (profDir !== undefined) {
    console.log(heading("gateway CPU profile (whole run, self time)"));
    console.log(profileReport(profDir, 30));
  }
  console.log(`\nbench wall time ${((Date.now() - started) / 1000).toFixed(1)} s`);
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
