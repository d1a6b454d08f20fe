/**
 * A memgate cache hit against the physical floors under it (issue 29, "New floors"): the same bytes as memgate's own
 * hit answer (captured from a real hit after the warm-up), served by
 *   - a bare node:http server from memory (the floor under the in-process hit), and
 *   - a bare node:http server after one Redis GET of those bytes (the floor under the Redis hit);
 * against memgate (`node bin/memgate.js serve`, dist/, every span exported over OTLP to a sink) serving the hit
 *   - in-process (no Redis),
 *   - with Redis (cache, limits) and the per-key limit batched (MEMGATE_KEY_LIMIT_SYNC_MS default, 250 ms),
 *   - with Redis and the per-key limit exact (MEMGATE_KEY_LIMIT_SYNC_MS=0: one more Redis call per request).
 * Every party is its own process (bench/gateway/floors.ts, bench/gateway/memgate.ts, a private redis-server, a fake
 * OpenMemory, an OTLP sink); the load is autocannon in its own process (bench/gateway/load.ts, max mode: 32
 * connections, closed loop). Runs are interleaved (floor, memgate, floor, memgate… in each round) so drift on a
 * shared machine lands on both sides of every ratio. Prints req/s per run and overall, each hit as a % of its
 * floor (goal ≥ 33 %), what batching the key limit buys on the Redis hit, and Redis's CPU per 1,000 requests.
 *
 *   npx tsx bench/floors.bench.ts [--quick] [--no-build] [--seconds=N] [--rounds=N] [--env=NAME=value,…]
 *                                 [--only=floor-memory,hit-local,floor-redis,hit-redis,hit-redis-exact] [--profile]
 *
 * `--profile` runs the batched Redis gateway under `node --cpu-prof` and prints its top self-time functions and
 * packages (the profile covers its whole life: warm-up and every round of its own target).
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import type { FloorReply, FloorRequest } from "./gateway/floors";
import type { LoadResult, LoadSpec } from "./gateway/load";
import { Gateway } from "./gateway/memgate";
import { cpuMs, Helper, startRedis, stopChild } from "./gateway/procs";
import type { ServerReply, ServerRequest } from "./gateway/servers";
import { benchArgs } from "./lib/args";
import { profileReport } from "./lib/cpuprofile";
import { heading, hostInfo, int, summarize, table } from "./lib/stats";

const ROOT = resolve(__dirname, "..");
const ARGS = benchArgs(process.argv.slice(2), {
  full: { seq: 5, rate: 5, max: 5 },
  quick: { seq: 2, rate: 2, max: 2 },
});
const SECONDS = ARGS.seconds.max;
const ROUNDS = Number(ARGS.flag("rounds") ?? (ARGS.quick ? 2 : 3));
const CONNECTIONS = 32;
const BODY = JSON.stringify({
  userId: "bench-user",
  sessionId: "s-1",
  query: "what do I order?",
  useMemory: true,
});

type Target = "floor-memory" | "hit-local" | "floor-redis" | "hit-redis" | "hit-redis-exact";
const LABEL: Record<Target, string> = {
  "floor-memory": "node:http, answer from memory",
  "hit-local": "memgate hit, in-process",
  "floor-redis": "node:http, one Redis GET, answer",
  "hit-redis": "memgate hit, Redis, key limit batched (250 ms)",
  "hit-redis-exact": "memgate hit, Redis, key limit exact (SYNC_MS=0)",
};

interface Run {
  rps: number;
  latencies: number[];
  seconds: number;
  failed: number;
  requests: number;
  redisCpuMs: number;
  serverCpuMs: number;
}

async function main(): Promise<void> {
  const started = Date.now();
  console.log(`# floors bench${ARGS.quick ? " — QUICK mode, rough figures" : ""}`);
  for (const line of hostInfo()) console.log(line);
  if (ARGS.build) {
    const build = spawnSync("npm", ["run", "--silent", "build"], { cwd: ROOT, stdio: "inherit" });
    if (build.status !== 0)
      throw new Error("npm run build failed: the bench runs the compiled gateway (dist/)");
  }
  console.log(
    `${ROUNDS} round(s) of ${SECONDS} s (+ ${ARGS.warmupSeconds} s warm-up) per target, ${CONNECTIONS} connections, ` +
      "autocannon in its own process, targets interleaved in each round",
  );

  const redis = await startRedis();
  const servers = join(__dirname, "gateway/servers.ts");
  const floors = join(__dirname, "gateway/floors.ts");
  const backend = await Helper.start<ServerRequest, ServerReply>(servers, ["backend"]);
  const sink = await Helper.start<ServerRequest, ServerReply>(servers, ["sink"]);
  const memory = await Helper.start<FloorRequest, FloorReply>(floors, ["memory"]);
  const redisFloor = await Helper.start<FloorRequest, FloorReply>(floors, ["redis"]);
  const load = await Helper.start<LoadSpec, LoadResult>(join(__dirname, "gateway/load.ts"), []);
  const url = (port: number | undefined) => `http://127.0.0.1:${port ?? 0}`;
  const common = {
    backendUrl: url(backend.hello.port),
    sinkUrl: url(sink.hello.port),
    env: ARGS.gatewayEnv,
  };
  const local = await Gateway.start(common);
  const profDir = ARGS.profile ? mkdtempSync(join(tmpdir(), "memgate-floors-prof-")) : undefined;
  const batched = await Gateway.start({
    ...common,
    redisUrl: redis.url,
    ...(profDir === undefined ? {} : { cpuProfDir: profDir }),
  });
  const exact = await Gateway.start({
    ...common,
    redisUrl: redis.url,
    env: { ...ARGS.gatewayEnv, MEMGATE_KEY_LIMIT_SYNC_MS: "0" },
  });
  const gateways: Record<Target, { url: string; path: string; pid: number | undefined }> = {
    "floor-memory": { url: url(memory.hello.port), path: "/", pid: memory.helper.child.pid },
    "hit-local": { url: local.url, path: "/v1/retrieve", pid: local.child.pid },
    "floor-redis": { url: url(redisFloor.hello.port), path: "/", pid: redisFloor.helper.child.pid },
    "hit-redis": { url: batched.url, path: "/v1/retrieve", pid: batched.child.pid },
    "hit-redis-exact": { url: exact.url, path: "/v1/retrieve", pid: exact.child.pid },
  };
  const spec = (t: Target, warmupS: number, durationS: number): LoadSpec => ({
    url: `${gateways[t].url}${gateways[t].path}`,
    body: BODY,
    unique: false,
    mode: "max",
    connections: CONNECTIONS,
    warmupS,
    durationS,
  });

  const runs = new Map<Target, Run[]>();
  try {
    // Fill the caches (a miss, then a hit) and capture memgate's own hit answer.
    const answers = new Map<string, Buffer>();
    for (const t of ["hit-local", "hit-redis", "hit-redis-exact"] as const) {
      for (let i = 0; i < 2; i++) {
        const res = await fetch(`${gateways[t].url}/v1/retrieve`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: BODY,
        });
        const bytes = Buffer.from(await res.arrayBuffer());
        const cache = (JSON.parse(bytes.toString()) as { metadata?: { cache?: string } }).metadata?.cache;
        if (i === 1 && (res.status !== 200 || cache !== "hit"))
          throw new Error(`${t}: the second request was not a cache hit (${res.status}, cache ${cache})`);
        answers.set(t, bytes);
      }
    }
    const hit = answers.get("hit-redis") ?? Buffer.alloc(0);
    console.log(
      `memgate's hit answer: ${hit.length} bytes (in-process ${answers.get("hit-local")?.length} bytes); ` +
        "both floors answer these bytes",
    );
    await memory.helper.ask({ op: "answer", body: hit.toString() });
    await redisFloor.helper.ask({ op: "answer", body: hit.toString(), redisUrl: redis.url });
    // JIT warm-up of every target (not counted).
    const order: Target[] = ["floor-memory", "hit-local", "floor-redis", "hit-redis", "hit-redis-exact"];
    for (const t of order) await load.helper.ask(spec(t, 0, ARGS.quick ? 1 : 2));
    for (let round = 0; round < ROUNDS; round++) {
      // The two Redis hits swap places every round (neither always runs right after its floor).
      const roundOrder: Target[] =
        round % 2 === 0
          ? order
          : ["floor-memory", "hit-local", "floor-redis", "hit-redis-exact", "hit-redis"];
      for (const t of roundOrder.filter((x) => ARGS.only === undefined || ARGS.only.includes(x))) {
        const cpu0 = [cpuMs(redis.child.pid), cpuMs(gateways[t].pid)];
        const r = await load.helper.ask(spec(t, ARGS.warmupSeconds, SECONDS));
        const redisCpuMs = cpuMs(redis.child.pid) - (cpu0[0] ?? 0);
        const serverCpuMs = cpuMs(gateways[t].pid) - (cpu0[1] ?? 0);
        runs.set(t, [
          ...(runs.get(t) ?? []),
          {
            rps: r.latencies.length / r.seconds,
            latencies: r.latencies,
            seconds: r.seconds,
            failed: r.failed,
            requests: r.total,
            redisCpuMs,
            serverCpuMs,
          },
        ]);
      }
    }
  } finally {
    for (const g of [local, batched, exact]) await g.stop();
    for (const h of [load.helper, backend.helper, sink.helper, memory.helper, redisFloor.helper])
      await h.stop();
    await stopChild(redis.child, 5000);
  }

  const overall = (t: Target) => {
    const rs = runs.get(t) ?? [];
    const n = rs.reduce((s, r) => s + r.latencies.length, 0);
    const seconds = rs.reduce((s, r) => s + r.seconds, 0);
    const lat = summarize(rs.flatMap((r) => r.latencies));
    const requests = rs.reduce((s, r) => s + r.requests, 0);
    const redisCpu = rs.reduce((s, r) => s + r.redisCpuMs, 0);
    const serverCpu = rs.reduce((s, r) => s + r.serverCpuMs, 0);
    return {
      rps: n / Math.max(1e-9, seconds),
      p50: lat.median,
      p99: lat.p99,
      failed: rs.reduce((s, r) => s + r.failed, 0),
      perRound: rs.map((r) => int(r.rps)).join(" / "),
      redisCpuPer1k: (1000 * redisCpu) / Math.max(1, requests),
      /** The serving process's CPU per answer (warm-up included in both): steadier than req/s on a busy machine. */
      cpuUs: (1000 * serverCpu) / Math.max(1, requests),
    };
  };
  console.log(heading(`throughput (${CONNECTIONS} connections, closed loop)`));
  const targets = (Object.keys(LABEL) as Target[]).filter((t) => runs.has(t));
  console.log(
    table(
      ["target", "req/s", "per round", "p50 ms", "p99 ms", "failed", "CPU µs / req", "Redis CPU ms / 1k req"],
      targets.map((t) => {
        const o = overall(t);
        return [
          LABEL[t],
          int(o.rps),
          o.perRound,
          o.p50.toFixed(2),
          o.p99.toFixed(2),
          String(o.failed),
          int(o.cpuUs),
          t === "hit-local" || t === "floor-memory" ? "—" : o.redisCpuPer1k.toFixed(1),
        ];
      }),
      ["left"],
    ),
  );
  const pct = (a: Target, b: Target) => (100 * overall(a).rps) / overall(b).rps;
  console.log(heading("goals (issue 29): a hit ≥ 33 % of its floor, spans exported"));
  const line = (a: Target, b: Target) => {
    if (!runs.has(a) || !runs.has(b)) return;
    const p = pct(a, b);
    const cpu = (100 * overall(b).cpuUs) / overall(a).cpuUs;
    console.log(
      `${p >= 33 ? "MET   " : "MISSED"} ${LABEL[a]}: ${int(overall(a).rps)} / ${int(overall(b).rps)} req/s ` +
        `= ${p.toFixed(1)} % of "${LABEL[b]}" (by CPU per answer: ${int(overall(b).cpuUs)} / ${int(overall(a).cpuUs)} µs = ${cpu.toFixed(1)} %)`,
    );
  };
  line("hit-local", "floor-memory");
  line("hit-redis", "floor-redis");
  line("hit-redis-exact", "floor-redis");
  const gain = pct("hit-redis", "hit-redis-exact") - 100;
  if (runs.has("hit-redis") && runs.has("hit-redis-exact"))
    console.log(
      `key limit batched vs exact on the Redis hit: ${int(overall("hit-redis").rps)} vs ` +
        `${int(overall("hit-redis-exact").rps)} req/s (${gain >= 0 ? "+" : ""}${gain.toFixed(1)} %); gateway CPU ` +
        `${int(overall("hit-redis").cpuUs)} vs ${int(overall("hit-redis-exact").cpuUs)} µs per request; Redis CPU ` +
        `${overall("hit-redis").redisCpuPer1k.toFixed(1)} vs ${overall("hit-redis-exact").redisCpuPer1k.toFixed(1)} ms per 1,000 requests`,
    );
  if (profDir !== undefined) {
    console.log(heading(`CPU profile of "${LABEL["hit-redis"]}" (self time)`));
    console.log(profileReport(profDir, 25));
  }
  console.log(`\nbench wall time ${((Date.now() - started) / 1000).toFixed(1)} s`);
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
