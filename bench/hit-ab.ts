/**
 * A memgate cache hit, this build against another one, in the same run (issue 29): the CPU a hit costs the serving
 * process, which a shared machine disturbs far less than req/s. Four gateways, each `node bin/memgate.js serve` as
 * bench/floors.bench.ts runs it (bench/gateway/memgate.ts: every span exported over OTLP to a sink, access log at
 * info): this build and the other one, each in-process (no Redis) and with Redis (cache, limits; the per-key limit
 * batched, the default), the Redis ones on a private redis-server under prefixes of their own. After a warm-up,
 * `--rounds` rounds of autocannon (bench/gateway/load.ts, 32 connections, closed loop) on the same hit, the four
 * targets interleaved and their order reversed every other round. Per target and round: the serving process's CPU
 * (/proc, user + system) per answer. Prints each round's ratio this / other, their median, and the whole run's.
 * Before the rounds, the two builds' hit answers are compared: status, header names and values (but the request
 * id, the rate limit's counters, the date and the length), and the body but `queryTime`: a difference is printed
 * (the A/B is then of two different answers).
 *
 *   npx tsx bench/hit-ab.ts --baseline=DIR [--rounds=10] [--seconds=1.5] [--only=local,redis] [--profile]
 *                           [--env=NAME=value,…] [--this-env=NAME=value,…]
 *
 * DIR holds the other build's bin/ and a built dist/ (e.g. `git archive <commit> | tar -x -C DIR` then
 * `npx tsc -p tsconfig.build.json`, node_modules linked; or a copy of dist/ made before a change, with bin/,
 * policies/ and package.json beside it). Run `npx tsc -p tsconfig.build.json` here first: no build is made.
 * `--env` adds environment to all four gateways, `--this-env` to this build's only (e.g. the same build as the
 * baseline with `--this-env=NODE_OPTIONS=--max-semi-space-size=32`: a runtime flag A/B).
 * `--profile` runs every gateway under `node --cpu-prof` and prints each one's top self-time functions and packages
 * (the profiles cover their whole life: the warm-up and every round of their own target).
 */
import { mkdtempSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import type { LoadResult, LoadSpec } from "./gateway/load";
import { Gateway } from "./gateway/memgate";
import { cpuMs, Helper, startRedis, stopChild } from "./gateway/procs";
import type { ServerReply, ServerRequest } from "./gateway/servers";
import { benchArgs } from "./lib/args";
import { profileReport } from "./lib/cpuprofile";
import { heading, hostInfo, int, table } from "./lib/stats";

const ARGS = benchArgs(process.argv.slice(2), {
  full: { seq: 1.5, rate: 1.5, max: 1.5 },
  quick: { seq: 1, rate: 1, max: 1 },
});
const BASELINE = ARGS.flag("baseline");
const ROUNDS = Math.max(1, Number(ARGS.flag("rounds") ?? 10) || 10);
const SECONDS = ARGS.seconds.max;
const WARMUP_S = 0.5;
const CONNECTIONS = 32;
const KINDS = (ARGS.only ?? ["local", "redis"]).filter((k): k is Kind => k === "local" || k === "redis");
/** `--this-env=NAME=value,…`: environment for this build's gateways only. */
const THIS_ENV = Object.fromEntries(
  (ARGS.flag("this-env") === undefined
    ? []
    : (process.argv
        .find((a) => a.startsWith("--this-env="))
        ?.slice("--this-env=".length)
        .split(",") ?? [])
  )
    .filter((kv) => kv.includes("="))
    .map((kv) => [kv.slice(0, kv.indexOf("=")), kv.slice(kv.indexOf("=") + 1)]),
) as Record<string, string>;
const BODY = JSON.stringify({
  userId: "bench-user",
  sessionId: "s-1",
  query: "what do I order?",
  useMemory: true,
});

type Kind = "local" | "redis";
type Build = "this" | "base";
type Target = `${Build}-${Kind}`;
interface Round {
  cpuUs: number;
  rps: number;
}

const ATTEMPTS = 40;

/** One hit's answer, for comparing the builds: headers that vary per request left out, `queryTime` zeroed. */
async function hitAnswer(url: string): Promise<{ status: number; headers: string[]; body: string }> {
  let last: Response | undefined;
  let text = "";
  let json: { metadata?: { cache?: string; queryTime?: number } } = {};
  // The miss stores its entry after it answers: on a busy machine the next request can come first; and a Redis
  // command over its timeout (a cold gateway's first ones) suspends Redis use for 2 s (cache bypassed). Up to ~10 s.
  for (let i = 0; i < ATTEMPTS && (i < 2 || json.metadata?.cache !== "hit"); i++) {
    if (i >= 2) await new Promise((r) => setTimeout(r, 250));
    last = await fetch(`${url}/v1/retrieve`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: BODY,
    });
    text = await last.text();
    json = JSON.parse(text) as typeof json;
  }
  if (last?.status !== 200 || json.metadata?.cache !== "hit")
    throw new Error(
      `${url}: no cache hit after ${ATTEMPTS} requests (${last?.status}, ${text.slice(0, 200)})`,
    );
  json.metadata.queryTime = 0;
  const headers = [...last.headers.entries()]
    // Per request: the id, the limit's counters, the date, and the length (the query time's digits).
    .filter(([k]) => !["x-request-id", "ratelimit", "date", "content-length"].includes(k))
    .map(([k, v]) => `${k}: ${v}`);
  return { status: last.status, headers, body: JSON.stringify(json) };
}

function median(values: number[]): number {
  const s = [...values].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? (s[mid] ?? Number.NaN) : ((s[mid - 1] ?? 0) + (s[mid] ?? 0)) / 2;
}

async function main(): Promise<void> {
  if (BASELINE === undefined)
    throw new Error("--baseline=DIR is required (the other build's bin/ and dist/)");
  const started = Date.now();
  console.log("# hit A/B: this build against --baseline, CPU per cache hit of the serving process");
  for (const line of hostInfo()) console.log(line);
  console.log(
    `baseline ${resolve(BASELINE)}; ${ROUNDS} round(s) of ${SECONDS} s (+ ${WARMUP_S} s warm-up) per target, ` +
      `${CONNECTIONS} connections, targets interleaved, order reversed every other round`,
  );
  const redis = await startRedis();
  const servers = join(__dirname, "gateway/servers.ts");
  const backend = await Helper.start<ServerRequest, ServerReply>(servers, ["backend"]);
  const sink = await Helper.start<ServerRequest, ServerReply>(servers, ["sink"]);
  const load = await Helper.start<LoadSpec, LoadResult>(join(__dirname, "gateway/load.ts"), []);
  const url = (port: number | undefined) => `http://127.0.0.1:${port ?? 0}`;
  const profDirs = new Map<Target, string>();
  const gateways = new Map<Target, Gateway>();
  const rounds = new Map<Target, Round[]>();
  const targets: Target[] = KINDS.flatMap((k) => [`this-${k}`, `base-${k}`] as Target[]);
  try {
    for (const t of targets) {
      const [build, kind] = t.split("-") as [Build, Kind];
      const profDir = ARGS.profile ? mkdtempSync(join(tmpdir(), `memgate-hitab-${t}-`)) : undefined;
      if (profDir !== undefined) profDirs.set(t, profDir);
      gateways.set(
        t,
        await Gateway.start({
          backendUrl: url(backend.hello.port),
          sinkUrl: url(sink.hello.port),
          ...(build === "base" ? { root: resolve(BASELINE) } : {}),
          ...(kind === "redis" ? { redisUrl: redis.url } : {}),
          ...(profDir === undefined ? {} : { cpuProfDir: profDir }),
          // Entries of its own: neither build reads the other's.
          env: {
            ...ARGS.gatewayEnv,
            ...(build === "base" ? { MEMGATE_REDIS_PREFIX: "hitab-base:" } : THIS_ENV),
          },
        }),
      );
    }
    const gw = (t: Target) => gateways.get(t) as Gateway;
    for (const kind of KINDS) {
      const a = await hitAnswer(gw(`this-${kind}`).url);
      const b = await hitAnswer(gw(`base-${kind}`).url);
      const onlyA = a.headers.filter((h) => !b.headers.includes(h));
      const onlyB = b.headers.filter((h) => !a.headers.includes(h));
      const same = a.status === b.status && onlyA.length === 0 && onlyB.length === 0 && a.body === b.body;
      console.log(
        same
          ? `${kind} hit: same status, headers (${a.headers.length} compared) and body as the baseline's`
          : `${kind} hit DIFFERS from the baseline's: status ${a.status}/${b.status}; headers only here ` +
              `${JSON.stringify(onlyA)}, only there ${JSON.stringify(onlyB)}; body ${a.body === b.body ? "same" : "differs"}`,
      );
    }
    const spec = (t: Target, warmupS: number, durationS: number): LoadSpec => ({
      url: `${gw(t).url}/v1/retrieve`,
      body: BODY,
      unique: false,
      mode: "max",
      connections: CONNECTIONS,
      warmupS,
      durationS,
    });
    for (const t of targets) await load.helper.ask(spec(t, 0, 2)); // JIT warm-up, not counted
    for (let round = 0; round < ROUNDS; round++) {
      const order = round % 2 === 0 ? targets : [...targets].reverse();
      for (const t of order) {
        const pid = gw(t).child.pid;
        const cpu0 = cpuMs(pid);
        const r = await load.helper.ask(spec(t, WARMUP_S, SECONDS));
        const cpu = cpuMs(pid) - cpu0;
        if (r.failed > 0) console.log(`  ${t} round ${round}: ${r.failed} failed`);
        rounds.set(t, [
          ...(rounds.get(t) ?? []),
          { cpuUs: (1000 * cpu) / Math.max(1, r.total), rps: r.latencies.length / r.seconds },
        ]);
      }
    }
  } finally {
    for (const g of gateways.values()) await g.stop();
    for (const h of [load.helper, backend.helper, sink.helper]) await h.stop();
    await stopChild(redis.child, 5000);
  }

  console.log(
    heading(`CPU µs per hit, round by round (load average at the end ${loadavg()[0]?.toFixed(1)})`),
  );
  const rowsOf = (t: Target) => rounds.get(t) ?? [];
  console.log(
    table(
      ["target", ...Array.from({ length: ROUNDS }, (_, i) => `r${i}`)],
      targets.map((t) => [t, ...rowsOf(t).map((r) => int(r.cpuUs))]),
      ["left"],
    ),
  );
  console.log(heading("this build / baseline"));
  const rows = KINDS.map((kind) => {
    const a = rowsOf(`this-${kind}`);
    const b = rowsOf(`base-${kind}`);
    const ratios = a.map((r, i) => r.cpuUs / (b[i]?.cpuUs ?? Number.NaN));
    const mean = (rs: Round[], f: (r: Round) => number) => rs.reduce((s, r) => s + f(r), 0) / rs.length;
    const cpuA = mean(a, (r) => r.cpuUs);
    const cpuB = mean(b, (r) => r.cpuUs);
    return [
      kind === "local" ? "in-process hit" : "Redis hit",
      `${(100 * median(ratios)).toFixed(1)} %`,
      `${int(cpuA)} / ${int(cpuB)} µs = ${((100 * cpuA) / cpuB).toFixed(1)} %`,
      `${(100 * Math.min(...ratios)).toFixed(0)}–${(100 * Math.max(...ratios)).toFixed(0)} %`,
      `${int(mean(a, (r) => r.rps))} / ${int(mean(b, (r) => r.rps))}`,
    ];
  });
  console.log(
    table(
      ["hit", "CPU per hit, median of rounds", "mean of rounds", "range of rounds", "req/s (noise)"],
      rows,
      ["left"],
    ),
  );
  for (const [t, dir] of profDirs) {
    console.log(heading(`CPU profile of ${t} (self time)`));
    console.log(profileReport(dir, 30));
  }
  console.log(`\nbench wall time ${((Date.now() - started) / 1000).toFixed(1)} s`);
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
