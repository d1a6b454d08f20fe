/**
 * The Zep path and the cache hit against their floors (issue 16). Every party runs in its own process on
 * loopback:
 *   - a private redis-server (no persistence), stopped at the end;
 *   - a fake Zep Cloud answering `POST /api/v2/graph/search` at once (16 results × ~500 chars per scope, the
 *     size the default policy asks for) and `GET /api/v2/users/{id}` (bench/gateway/servers.ts);
 *   - a bare Express app with one route that does nothing (the floor);
 *   - an OTLP/HTTP sink that discards spans;
 *   - memgate twice, both `node bin/memgate.js serve` from dist/ with the shipped default policy on the Zep backend
 *     and the per-key and per-user limits raised out of the way: **in-process** (no Redis, no span exporter: as
 *     `serve` starts with nothing else set) and **with Redis** (cache, limits, single-flight, cooldowns) and
 *     every span exported to the sink;
 *   - the load generator (bench/gateway/load.ts; autocannon for throughput, 32 connections).
 * Scenarios: (a) the fake Zep called directly as memgate calls it for the default policy — both scopes
 * (`edges`, `episodes`) at once, timed until the second answer —, (b) a memgate cache miss on `/v1/retrieve` (a
 * new query per request), (c) a cache hit (one query), both gateways; (d) the floor. Each one at a time (1
 * connection), at a fixed rate (open loop) and as fast as it answers (closed loop). Then the heap per in-flight
 * request (Redis gateway, N misses held at a slow Zep), and a soak: the Redis gateway at a fixed rate of mixed
 * misses and hits, its RSS read every second. Prints goal lines; exits 0 whatever the figures.
 *
 *   npx tsx bench/zep.bench.ts [--quick] [--no-build] [--rate=500] [--profile] [--seconds=N]
 *                              [--only=direct,miss-redis,miss-local,hit-redis,hit-local,floor,floor-answer,heap,soak]
 *                              [--modes=seq,rate,max] [--soak-seconds=N] [--env=NAME=value,…] [--baseline=DIR]
 *                              [--rounds=N]
 *
 * (d′) `floor-answer` is the floor's app sending the bytes of a memgate cache hit (fetched after the warm-up): what
 * sending that answer costs any Express gateway, not a goal.
 *
 * `--profile` runs both gateways under `node --cpu-prof` and prints their top self-time functions and packages
 * (`npx tsx bench/lib/cpuprofile.ts <file>` reads one again). `--env` adds environment to both gateways.
 *
 * `--baseline=DIR` runs another build beside this one (DIR holds its bin/ and a built dist/, e.g. an earlier commit's
 * `git archive` built with `npx tsc -p tsconfig.build.json`, node_modules linked): its two gateways are scenarios
 * `miss-redis-base` and `miss-local-base`, interleaved with the others in every round, and the goal lines add the
 * misses' CPU per answer against the baseline's, measured side by side (a shared machine's ratio, not two runs).
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { diff, heapPerInFlight } from "./gateway/in-flight";
import type { LoadResult, LoadSpec } from "./gateway/load";
import { Gateway } from "./gateway/memgate";
import { cpuMs, Helper, startRedis, stopChild } from "./gateway/procs";
import type { Mode } from "./gateway/report";
import type { ServerReply, ServerRequest } from "./gateway/servers";
import { benchArgs } from "./lib/args";
import { profileReport } from "./lib/cpuprofile";
import { bytes, heading, hostInfo, int, type Summary, summarize, table } from "./lib/stats";

const ROOT = resolve(__dirname, "..");
const ARGS = benchArgs(process.argv.slice(2), {
  full: { seq: 3, rate: 4, max: 3 },
  quick: { seq: 1.5, rate: 2, max: 2 },
});
const { flag, rate: RATE, only: ONLY, gatewayEnv: GATEWAY_ENV, modes: MODES } = ARGS;
/** `--rounds=N`: more, shorter interleaved rounds make a side-by-side ratio steadier on a busy machine. */
const ROUNDS = Math.max(1, Number(flag("rounds") ?? ARGS.rounds) || ARGS.rounds);
const { quick: QUICK, profile: PROFILE, seconds: SECONDS, warmupSeconds: WARMUP_S } = ARGS;
const CONNECTIONS = 32;
const IN_FLIGHT = 200;
const SOAK_S = Number(flag("soak-seconds") ?? (QUICK ? 10 : 30));
const SOAK_RATE = 300;
const SOAK_WARMUP_S = QUICK ? 2 : 5;
/** RSS counts as flat when it grew by at most this much over the second half of the soak. */
const RSS_BOUND = 16 * 1024 * 1024;
const USER = "bench-user";

const BASELINE = flag("baseline");
type Target =
  | "direct"
  | "miss-redis"
  | "miss-local"
  | "miss-redis-base"
  | "miss-local-base"
  | "hit-redis"
  | "hit-local"
  | "floor"
  | "floor-answer";
const TARGETS: readonly Target[] = (
  [
    "direct",
    "miss-redis",
    "miss-local",
    "miss-redis-base",
    "miss-local-base",
    "hit-redis",
    "hit-local",
    "floor",
    "floor-answer",
  ] as const
)
  .filter((t) => BASELINE !== undefined || !t.endsWith("-base"))
  .filter(
    (t) => ONLY === undefined || ONLY.includes(t) || (t.endsWith("-base") && ONLY.includes(t.slice(0, -5))),
  );
const LABELS: Record<Target, string> = {
  direct: "(a) fake Zep, direct (2 scopes at once)",
  "miss-redis": "(b) memgate miss, Redis + tracing",
  "miss-local": "(b) memgate miss, in-process",
  "miss-redis-base": "(b) baseline miss, Redis + tracing",
  "miss-local-base": "(b) baseline miss, in-process",
  "hit-redis": "(c) memgate hit, Redis + tracing",
  "hit-local": "(c) memgate hit, in-process",
  floor: "(d) bare Express (floor)",
  "floor-answer": "(d′) bare Express, sending a hit's answer",
};

type Server = Helper<ServerRequest, ServerReply>;

interface Parties {
  zep: { helper: Server; url: string };
  floor: { helper: Server; url: string };
  redis: { pid: number | undefined };
  withRedis: Gateway;
  inProcess: Gateway;
  /** `--baseline`'s build, the same two ways. */
  base?: { withRedis: Gateway; inProcess: Gateway };
  load: Helper<LoadSpec, LoadResult>;
}

interface Run {
  result: LoadResult;
  answers: Map<string, number>;
  cpuMs: number;
  redisCpuMs: number;
}

interface Measured {
  target: Target;
  mode: Mode;
  latency: Summary;
  rps: number;
  failed: number;
  cpuUs: number;
  redisCpuUs: number;
  answers: Map<string, number>;
}

const retrieveBody = (query: string) =>
  JSON.stringify({ userId: USER, sessionId: "s-1", query, useMemory: true });

/** What memgate sends Zep for the default policy (topK 12 × overfetch 2 = limit 24, cross_encoder), per scope. */
const zepBody = (scope: "edges" | "episodes") =>
  JSON.stringify({
    user_id: USER,
    query: "what do I order? {n}",
    limit: 24,
    scope,
    reranker: "cross_encoder",
  });

function gatewayOf(p: Parties, t: Target): Gateway | undefined {
  if (t === "miss-redis" || t === "hit-redis") return p.withRedis;
  if (t === "miss-local" || t === "hit-local") return p.inProcess;
  if (t === "miss-redis-base") return p.base?.withRedis;
  if (t === "miss-local-base") return p.base?.inProcess;
  return undefined;
}

function specFor(p: Parties, t: Target, mode: Mode, warmupS = WARMUP_S, seconds = SECONDS[mode]): LoadSpec {
  const common = { mode, rate: RATE, connections: CONNECTIONS, warmupS, durationS: seconds };
  const gw = gatewayOf(p, t);
  switch (t) {
    case "direct":
      return {
        ...common,
        url: `${p.zep.url}/api/v2/graph/search`,
        body: zepBody("edges"),
        bodies: [zepBody("edges"), zepBody("episodes")],
        unique: true,
      };
    case "miss-redis":
    case "miss-local":
    case "miss-redis-base":
    case "miss-local-base":
      return {
        ...common,
        url: `${gw?.url}/v1/retrieve`,
        body: retrieveBody("what do I order? {n}"),
        unique: true,
      };
    case "hit-redis":
    case "hit-local":
      return {
        ...common,
        url: `${gw?.url}/v1/retrieve`,
        body: retrieveBody("what do I order?"),
        unique: false,
      };
    case "floor":
    case "floor-answer":
      return {
        ...common,
        url: `${p.floor.url}/${t}`,
        body: retrieveBody("what do I order?"),
        unique: false,
      };
  }
}

/** The body of a cache hit on the in-process gateway (the hit scenario's query, its entry made by the warm-up). */
async function hitAnswer(p: Parties): Promise<string> {
  const res = await fetch(`${p.inProcess.url}/v1/retrieve`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: retrieveBody("what do I order?"),
  });
  const text = await res.text();
  if (res.status !== 200 || !text.includes('"cache":"hit"'))
    throw new Error(
      `expected a cache hit from the in-process gateway, got ${res.status}: ${text.slice(0, 200)}`,
    );
  return text;
}

function pidOf(p: Parties, t: Target): number | undefined {
  if (t === "direct") return p.zep.helper.child.pid;
  if (t === "floor" || t === "floor-answer") return p.floor.helper.child.pid;
  return gatewayOf(p, t)?.child.pid;
}

async function runOne(p: Parties, t: Target, mode: Mode): Promise<Run> {
  const gw = gatewayOf(p, t);
  const pid = pidOf(p, t);
  const before = gw === undefined ? new Map<string, number>() : await gw.answers();
  const cpu0 = [cpuMs(pid), cpuMs(p.redis.pid)];
  const result = await p.load.ask(specFor(p, t, mode));
  const cpu1 = [cpuMs(pid), cpuMs(p.redis.pid)];
  const answers = gw === undefined ? new Map<string, number>() : diff(await gw.answers(), before);
  return {
    result,
    answers,
    cpuMs: (cpu1[0] ?? 0) - (cpu0[0] ?? 0),
    redisCpuMs: t.includes("-redis") ? (cpu1[1] ?? 0) - (cpu0[1] ?? 0) : 0,
  };
}

function merge(target: Target, mode: Mode, runs: readonly Run[]): Measured {
  const latencies = runs.flatMap((r) => r.result.latencies);
  const seconds = runs.reduce((s, r) => s + r.result.seconds, 0);
  const total = Math.max(
    1,
    runs.reduce((s, r) => s + r.result.total, 0),
  );
  const answers = new Map<string, number>();
  for (const r of runs) for (const [k, v] of r.answers) answers.set(k, (answers.get(k) ?? 0) + v);
  return {
    target,
    mode,
    latency: summarize(latencies),
    rps: latencies.length / Math.max(1e-9, seconds),
    failed: runs.reduce((s, r) => s + r.result.failed, 0),
    cpuUs: (runs.reduce((s, r) => s + r.cpuMs, 0) * 1000) / total,
    redisCpuUs: (runs.reduce((s, r) => s + r.redisCpuMs, 0) * 1000) / total,
    answers,
  };
}

/** Resident set size of a process now (/proc/<pid>/status VmRSS), bytes; NaN where there is no /proc. */
function rssOf(pid: number | undefined): number {
  try {
    const m = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    return m?.[1] === undefined ? Number.NaN : Number(m[1]) * 1024;
  } catch {
    return Number.NaN;
  }
}

/** The soak: the Redis gateway at a fixed rate, one miss in four, RSS read every second. */
async function soak(p: Parties) {
  const pid = p.withRedis.child.pid;
  const samples: Array<{ t: number; rss: number }> = [];
  const started = Date.now();
  const timer = setInterval(() => samples.push({ t: (Date.now() - started) / 1000, rss: rssOf(pid) }), 1000);
  const heapStart = await p.withRedis.heap();
  const before = await p.withRedis.answers();
  const result = await p.load.ask({
    mode: "rate",
    rate: SOAK_RATE,
    warmupS: SOAK_WARMUP_S,
    durationS: SOAK_S,
    url: `${p.withRedis.url}/v1/retrieve`,
    body: retrieveBody("soak query {n}"),
    unique: false,
    mix: { missEvery: 4, pool: 50 },
  });
  clearInterval(timer);
  const answers = diff(await p.withRedis.answers(), before);
  const heapEnd = await p.withRedis.heap();
  const counted = samples.filter((s) => s.t >= SOAK_WARMUP_S);
  const rssStart = counted[0]?.rss ?? Number.NaN;
  const rssMid = counted[Math.floor(counted.length / 2)]?.rss ?? Number.NaN;
  const rssEnd = counted.at(-1)?.rss ?? Number.NaN;
  const rssMax = Math.max(...counted.map((s) => s.rss));
  const series = counted.filter((_, i) => i % 5 === 0 || i === counted.length - 1);
  return { result, answers, heapStart, heapEnd, rssStart, rssMid, rssEnd, rssMax, series };
}

const f2 = (n: number) => (Number.isFinite(n) ? n.toFixed(2) : "n/a");
const pct = (n: number) => (Number.isFinite(n) ? `${(n * 100).toFixed(0)} %` : "n/a");
const describeAnswers = (a: Map<string, number>) =>
  [...a.entries()]
    .filter(([, v]) => v > 0)
    .map(([k, v]) => `${k} ${int(v)}`)
    .join(", ");

function modeTable(all: readonly Measured[], mode: Mode): string {
  const floor = all.find((m) => m.mode === mode && m.target === "floor")?.rps ?? Number.NaN;
  return table(
    [
      "scenario",
      "answers/s",
      "vs floor",
      "p50 ms",
      "p90 ms",
      "p99 ms",
      "max ms",
      "failed",
      "CPU µs",
      "redis µs",
      "gateway answers",
    ],
    all
      .filter((m) => m.mode === mode)
      .map((m) => [
        LABELS[m.target],
        int(m.rps),
        mode === "max" && m.target !== "direct" ? pct(m.rps / floor) : "",
        f2(m.latency.median),
        f2(m.latency.p90),
        f2(m.latency.p99),
        f2(m.latency.max),
        int(m.failed),
        Number.isFinite(m.cpuUs) ? int(m.cpuUs) : "n/a",
        m.target.includes("-redis") ? int(m.redisCpuUs) : "",
        describeAnswers(m.answers),
      ]),
    ["left"],
  );
}

/** CPU per answer of one round's run. */
const cpuPerAnswer = (r: Run) => (r.cpuMs * 1000) / Math.max(1, r.result.total);

/** The baseline comparison per round: this build's CPU per miss over the baseline's in the same round, then their median. */
function roundRatios(runs: ReadonlyMap<string, readonly Run[]>): string[] {
  const lines: string[] = [];
  for (const [miss, base] of [
    ["miss-redis", "miss-redis-base"],
    ["miss-local", "miss-local-base"],
  ] as const) {
    for (const mode of MODES) {
      const a = runs.get(`${mode}:${miss}`) ?? [];
      const b = runs.get(`${mode}:${base}`) ?? [];
      const ratios = a.flatMap((r, i) => {
        const other = b[i];
        return other === undefined ? [] : [cpuPerAnswer(r) / cpuPerAnswer(other)];
      });
      if (ratios.length === 0) continue;
      const sorted = [...ratios].sort((x, y) => x - y);
      const median = sorted[Math.floor((sorted.length - 1) / 2)] ?? Number.NaN;
      lines.push(
        `${LABELS[miss].slice(4)}, ${mode}: CPU per miss / baseline's, round by round: ` +
          `${ratios.map((r) => pct(r)).join(", ")} — median ${pct(median)}`,
      );
    }
  }
  return lines;
}

function goalLines(all: readonly Measured[]): string[] {
  const find = (mode: Mode, t: Target) => all.find((m) => m.mode === mode && m.target === t);
  const verdict = (ok: boolean, by: string) => (ok ? "met" : `NOT met (by ${by})`);
  const lines: string[] = [];
  for (const miss of ["miss-redis", "miss-local", "miss-redis-base", "miss-local-base"] as const) {
    for (const [mode, label] of [
      ["seq", "one at a time"],
      ["rate", `at ${RATE}/s`],
    ] as const) {
      const a = find(mode, "direct");
      const b = find(mode, miss);
      if (!a || !b) continue;
      const p50 = b.latency.median - a.latency.median;
      const p99 = b.latency.p99 - a.latency.p99;
      lines.push(
        `${LABELS[miss].slice(4)}, ${label}: added p50 ${f2(p50)} ms (≤ 1: ${verdict(p50 <= 1, `${f2(p50 - 1)} ms`)}), ` +
          `p99 ${f2(p99)} ms (≤ 5: ${verdict(p99 <= 5, `${f2(p99 - 5)} ms`)}) — miss ${f2(b.latency.median)} / ` +
          `${f2(b.latency.p99)} vs direct ${f2(a.latency.median)} / ${f2(a.latency.p99)} ms`,
      );
    }
  }
  for (const [miss, base] of [
    ["miss-redis", "miss-redis-base"],
    ["miss-local", "miss-local-base"],
  ] as const) {
    for (const mode of MODES) {
      const a = find(mode, miss);
      const b = find(mode, base);
      if (!a || !b) continue;
      lines.push(
        `${LABELS[miss].slice(4)}, ${mode}: CPU ${int(a.cpuUs)} µs per miss against the baseline's ${int(b.cpuUs)} ` +
          `(${pct(a.cpuUs / b.cpuUs)}); p50 ${f2(a.latency.median)} vs ${f2(b.latency.median)} ms, p99 ` +
          `${f2(a.latency.p99)} vs ${f2(b.latency.p99)} ms` +
          (a.target.includes("-redis") ? `; redis ${int(a.redisCpuUs)} vs ${int(b.redisCpuUs)} µs` : ""),
      );
    }
  }
  const floor = find("max", "floor");
  for (const [hit, goal] of [
    ["hit-local", 0.5],
    ["hit-redis", 0.35],
  ] as const) {
    const h = find("max", hit);
    if (!h || !floor) continue;
    const share = h.rps / floor.rps;
    lines.push(
      `${LABELS[hit].slice(4)}: ${int(h.rps)} / ${int(floor.rps)} req/s = ${pct(share)} of the floor ` +
        `(≥ ${pct(goal)}: ${verdict(share >= goal, `${((goal - share) * 100).toFixed(0)} points`)}); ` +
        `CPU ${int(h.cpuUs)} µs per hit against ${int(floor.cpuUs)} µs per floor answer`,
    );
    const same = find("max", "floor-answer");
    if (same)
      lines.push(
        `  (not a goal: against bare Express sending the same answer, ${int(same.rps)} req/s at ` +
          `${int(same.cpuUs)} µs, the hit is ${pct(h.rps / same.rps)})`,
      );
  }
  return lines;
}

async function main(): Promise<void> {
  const started = Date.now();
  console.log(`# Zep path bench${QUICK ? " — QUICK mode, rough figures" : ""}`);
  for (const line of hostInfo()) console.log(line);
  if (Object.keys(GATEWAY_ENV).length > 0)
    console.log(`gateway environment added: ${JSON.stringify(GATEWAY_ENV)}`);
  if (ARGS.build) {
    const build = spawnSync("npm", ["run", "--silent", "build"], { cwd: ROOT, stdio: "inherit" });
    if (build.status !== 0)
      throw new Error("npm run build failed: the bench runs the compiled gateway (dist/)");
  }
  console.log(
    "processes: redis-server, fake Zep, bare Express, OTLP sink, memgate with Redis + tracing exported, memgate " +
      `in-process (no Redis, no span exporter), load generator; ${ROUNDS} round(s) per scenario and mode of ` +
      `${SECONDS.seq} s (one at a time), ${SECONDS.rate} s (${RATE}/s), ${SECONDS.max} s (max, ${CONNECTIONS} ` +
      `connections) (+ ${WARMUP_S} s warm-up each), rounds interleaved`,
  );

  const redis = await startRedis();
  const servers = join(__dirname, "gateway/servers.ts");
  const zep = await Helper.start<ServerRequest, ServerReply>(servers, ["zep"]);
  const floor = await Helper.start<ServerRequest, ServerReply>(servers, ["floor"]);
  const sink = await Helper.start<ServerRequest, ServerReply>(servers, ["sink"]);
  const load = await Helper.start<LoadSpec, LoadResult>(join(__dirname, "gateway/load.ts"), []);
  const url = (r: ServerReply) => `http://127.0.0.1:${r.port ?? 0}`;
  const profDirs = PROFILE
    ? {
        redis: mkdtempSync(join(tmpdir(), "memgate-prof-redis-")),
        local: mkdtempSync(join(tmpdir(), "memgate-prof-local-")),
      }
    : undefined;
  const common = { backend: "zep" as const, backendUrl: url(zep.hello), env: GATEWAY_ENV };
  const withRedis = await Gateway.start({
    ...common,
    redisUrl: redis.url,
    sinkUrl: url(sink.hello),
    ...(profDirs === undefined ? {} : { cpuProfDir: profDirs.redis }),
  });
  const inProcess = await Gateway.start({
    ...common,
    ...(profDirs === undefined ? {} : { cpuProfDir: profDirs.local }),
  });
  const base =
    BASELINE === undefined
      ? undefined
      : {
          withRedis: await Gateway.start({
            ...common,
            root: resolve(BASELINE),
            // Entries of its own: a baseline miss never finds this build's.
            env: { ...GATEWAY_ENV, MEMGATE_REDIS_PREFIX: "gwbase:" },
            redisUrl: redis.url,
            sinkUrl: url(sink.hello),
          }),
          inProcess: await Gateway.start({ ...common, root: resolve(BASELINE) }),
        };
  const p: Parties = {
    zep: { helper: zep.helper, url: url(zep.hello) },
    floor: { helper: floor.helper, url: url(floor.hello) },
    redis: { pid: redis.child.pid },
    withRedis,
    inProcess,
    ...(base === undefined ? {} : { base }),
    load: load.helper,
  };

  const runs = new Map<string, Run[]>();
  let answerBytes = "";
  let heap: Awaited<ReturnType<typeof heapPerInFlight>> | undefined;
  let soaked: Awaited<ReturnType<typeof soak>> | undefined;
  try {
    // JIT warm-up of every path (not counted), and the hit query's cache entry in both gateways.
    for (const t of ["miss-redis", "miss-local", "hit-redis", "hit-local", "direct", "floor"] as const) {
      await p.load.ask(specFor(p, t, "max", 0, QUICK ? 1 : 2));
    }
    for (const t of TARGETS.filter((x) => x.endsWith("-base"))) {
      await p.load.ask(specFor(p, t, "max", 0, QUICK ? 1 : 2));
    }
    // (d′) sends the bytes of the in-process gateway's cache hit, as the hit scenario receives them.
    answerBytes = await hitAnswer(p);
    console.log(`(d′) sends the in-process gateway's hit answer: ${bytes(Buffer.byteLength(answerBytes))}`);
    await p.floor.helper.ask({ op: "answer", body: answerBytes });
    await p.load.ask(specFor(p, "floor-answer", "max", 0, QUICK ? 1 : 2));
    for (let round = 0; round < ROUNDS; round++) {
      for (const mode of MODES) {
        for (const t of TARGETS) {
          const key = `${mode}:${t}`;
          runs.set(key, [...(runs.get(key) ?? []), await runOne(p, t, mode)]);
        }
      }
    }
    if (ONLY === undefined || ONLY.includes("heap"))
      // Redis gateway; each miss holds two searches (one per scope) at the fake Zep.
      heap = await heapPerInFlight({
        backend: p.zep.helper,
        gateway: p.withRedis,
        inFlight: IN_FLIGHT,
        holdMs: QUICK ? 2500 : 4000,
        callsPerRequest: 2,
        body: (i) => retrieveBody(`heap probe ${process.pid} ${i}`),
      });
    if (ONLY === undefined || ONLY.includes("soak")) soaked = await soak(p);
  } finally {
    const sunk = await sink.helper.ask({ op: "stats" });
    console.log(`OTLP sink received ${int(sunk.requests ?? 0)} exports, ${bytes(sunk.bytes)} of spans`);
    await withRedis.stop();
    await inProcess.stop();
    await base?.withRedis.stop();
    await base?.inProcess.stop();
    for (const h of [load.helper, zep.helper, floor.helper, sink.helper]) await h.stop();
    await stopChild(redis.child, 5000);
  }

  const measured: Measured[] = [];
  for (const mode of MODES)
    for (const t of TARGETS) measured.push(merge(t, mode, runs.get(`${mode}:${t}`) ?? []));
  console.log(heading("one request at a time (1 connection, keep-alive; latency = send → last byte)"));
  console.log(modeTable(measured, "seq"));
  console.log(heading(`at a fixed rate: ${RATE} requests/s (open loop, each sent on schedule)`));
  console.log(modeTable(measured, "rate"));
  console.log(heading(`as fast as it answers (autocannon, ${CONNECTIONS} connections)`));
  console.log(modeTable(measured, "max"));
  console.log(
    "(CPU µs: the answering process's CPU time per answer, from /proc in 10 ms ticks; redis µs: redis-server's. " +
      "The direct row's max figures are single scope calls, in turn.)",
  );
  if (heap !== undefined) {
    console.log(heading(`heap per in-flight miss (Redis gateway, ${IN_FLIGHT} misses held at a slow Zep)`));
    console.log(
      `live heap after GC: idle ${bytes(heap.idle.heapUsed)}, with ${IN_FLIGHT} in flight (${heap.held} searches ` +
        `held at Zep) ${bytes(heap.busy.heapUsed)} → ${bytes(heap.perRequest)} per request; rss ` +
        `${bytes(heap.idle.rss)} → ${bytes(heap.busy.rss)}; ${heap.ok}/${IN_FLIGHT} answered 200`,
    );
  }
  if (soaked !== undefined) {
    const r = soaked.result;
    const s = summarize(r.latencies);
    console.log(
      heading(
        `soak: Redis gateway, ${SOAK_RATE} requests/s for ${SOAK_S} s (+ ${SOAK_WARMUP_S} s), 1 miss in 4`,
      ),
    );
    console.log(
      `${int(r.latencies.length)} answered, ${int(r.failed)} failed; p50 ${f2(s.median)} ms, p99 ${f2(s.p99)} ms; ` +
        `${describeAnswers(soaked.answers)}`,
    );
    console.log(
      `RSS after the warm-up ${bytes(soaked.rssStart)}, half-way ${bytes(soaked.rssMid)}, at the end ` +
        `${bytes(soaked.rssEnd)} (max ${bytes(soaked.rssMax)}); every 5 s: ` +
        `${soaked.series.map((x) => `${x.t.toFixed(0)} s ${bytes(x.rss)}`).join(", ")}; live heap after GC ` +
        `${bytes(soaked.heapStart.heapUsed)} before → ${bytes(soaked.heapEnd.heapUsed)} after`,
    );
  }
  console.log(heading("goals (2 shared cores; ratios from this run, side by side)"));
  for (const line of goalLines(measured)) console.log(line);
  for (const line of roundRatios(runs)) console.log(line);
  if (heap !== undefined) {
    console.log(
      `heap per in-flight request ≤ 1 MB: ${bytes(heap.perRequest)} — ${heap.perRequest <= 1024 * 1024 ? "met" : "NOT met"}`,
    );
  }
  if (soaked !== undefined) {
    // The first half holds V8 growing its heap to the load's working size (RSS that is then kept, not leaked);
    // flat means no growth over the second half.
    const growth = soaked.rssEnd - soaked.rssMid;
    const sign = (n: number) => `${n >= 0 ? "+" : "−"}${bytes(Math.abs(n))}`;
    console.log(
      `RSS flat in the soak (second-half growth ≤ ${bytes(RSS_BOUND)}): ${sign(growth)} ` +
        `(whole soak ${sign(soaked.rssEnd - soaked.rssStart)}) — ` +
        `${growth <= RSS_BOUND && soaked.result.failed === 0 ? "met" : "NOT met"}`,
    );
  }
  if (profDirs !== undefined) {
    for (const [name, dir] of Object.entries(profDirs)) {
      console.log(
        heading(
          `CPU profile of the ${name === "redis" ? "Redis" : "in-process"} gateway (whole run, self time)`,
        ),
      );
      console.log(profileReport(dir, 30));
    }
  }
  const [l1, l5, l15] = loadavg().map((l) => l.toFixed(2));
  console.log(
    `\nbench wall time ${((Date.now() - started) / 1000).toFixed(1)} s; load average at the end: ${l1} ${l5} ${l15}`,
  );
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
