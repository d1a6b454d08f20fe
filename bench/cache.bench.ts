/**
 * Cache hit vs cache miss through the whole gateway (issue "Redis: cache, single-flight and rate limits"):
 * memgate runs in a child process (current sources through tsx) in front of a fake OpenMemory server that
 * answers every call in 50 ms; autocannon, in this process, drives `POST /v1/retrieve` with the same query
 * (hits: served from the cache) or a unique query per request (misses: one backend call each), with Redis
 * (REDIS_URL, default redis://127.0.0.1:6379), with a Redis Cluster of 3 masters + 3 replicas that the bench starts
 * itself from redis-server on free ports (test/redis/servers.ts), and with the in-process cache. Prints throughput
 * and p50/p99, and the Cluster's throughput as a share of the single node's, measured in the same run.
 *
 *   npx tsx bench/cache.bench.ts [--quick]        or: npx tsx bench/index.ts cache
 *
 * A report, not a test: exits 0 whatever the figures (1 only if it could not run, e.g. Redis is down).
 */
import { type ChildProcess, spawn } from "node:child_process";
import { cpSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import autocannon from "autocannon";
import Redis from "ioredis";
import { FakeOpenMemoryServer } from "../test/backends/fakes/openmemory-server";
import { RedisClusterServers } from "../test/redis/servers";
import { heading, hostInfo, int, table } from "./lib/stats";

const ROOT = resolve(__dirname, "..");
const QUICK = process.argv.includes("--quick");
const DURATION_S = QUICK ? 3 : 8;
const CONNECTIONS = 32;
const BACKEND_MS = 50;
const REDIS_URL = process.env.REDIS_URL ?? "redis://127.0.0.1:6379";
const PREFIX = `memgate-bench:${process.pid}:`;
const USER = "bench-user";

const MEMORIES = [
  "Ana orders an oat milk flat white every morning at the corner coffee place.",
  "Ana switched to decaf coffee after 4 p.m. on her doctor's advice.",
  "Ana's usual coffee order on weekends is a cortado with a croissant.",
  "Ana works from the Lisbon office on Tuesdays and Thursdays.",
  "Ana is allergic to peanuts; she always asks about sauces.",
  "Ana prefers window seats and quiet coffee shops for calls.",
];

async function freePort(): Promise<number> {
  return new Promise((res, rej) => {
    const srv = createServer();
    srv.once("error", rej);
    srv.listen(0, "127.0.0.1", () => {
      const a = srv.address();
      const port = typeof a === "object" && a !== null ? a.port : 0;
      srv.close(() => res(port));
    });
  });
}

async function until(what: string, check: () => Promise<boolean>, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check().catch(() => false)) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`timed out waiting for ${what}`);
}

interface Gateway {
  child: ChildProcess;
  url: string;
}

async function startGateway(env: Record<string, string>, withRedis: boolean): Promise<Gateway> {
  const port = await freePort();
  const child = spawn(
    process.execPath,
    [
      "--import",
      "tsx",
      "-e",
      "require('./src/cli/main').main(['serve']).then((c) => { process.exitCode = c; })",
    ],
    {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? "", ...env, PORT: String(port) },
      stdio: ["ignore", "ignore", "inherit"],
    },
  );
  const url = `http://127.0.0.1:${port}`;
  await until("the gateway", async () => (await fetch(`${url}/healthz`)).ok);
  if (withRedis) {
    await until("Redis in /readyz", async () => {
      const json = (await (await fetch(`${url}/readyz`)).json()) as {
        checks: Array<{ name: string; ok: boolean }>;
      };
      return json.checks.some((c) => c.name === "redis" && c.ok);
    });
  }
  return { child, url };
}

async function stopGateway(g: Gateway): Promise<void> {
  if (g.child.exitCode !== null) return;
  const exited = new Promise<void>((r) => g.child.once("exit", () => r()));
  g.child.kill("SIGTERM");
  await exited;
}

const requestBody = (query: string) =>
  JSON.stringify({ userId: USER, sessionId: "s-1", query, useMemory: true, policy: "bench" });

async function retrieveOnce(url: string, query: string): Promise<string> {
  const res = await fetch(`${url}/v1/retrieve`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: requestBody(query),
  });
  const json = (await res.json()) as { metadata: { cache: string } };
  return json.metadata.cache;
}

interface Row {
  cache: string;
  scenario: string;
  result: autocannon.Result;
  backendCalls: number;
}

async function load(url: string, unique: boolean, durationS = DURATION_S): Promise<autocannon.Result> {
  let n = 0;
  return autocannon({
    url: `${url}/v1/retrieve`,
    connections: CONNECTIONS,
    duration: durationS,
    timeout: 10,
    requests: [
      {
        method: "POST",
        headers: { "content-type": "application/json" },
        setupRequest: (req) => ({
          ...req,
          body: requestBody(
            unique ? `coffee order number ${process.pid}-${n++}` : "what coffee do I usually order?",
          ),
        }),
      },
    ],
  });
}

async function main(): Promise<number> {
  const probe = new Redis(REDIS_URL, {
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  });
  probe.on("error", () => undefined);
  try {
    await probe.connect();
  } catch {
    console.error(
      `Redis is not reachable at ${REDIS_URL}: start one (redis-server --save '' --appendonly no) or set REDIS_URL`,
    );
    return 1;
  }

  const fake = await FakeOpenMemoryServer.start({ slowMs: BACKEND_MS });
  await fake.seed(
    USER,
    MEMORIES.map((content, i) => ({
      id: `m${i}`,
      content,
      type: "fact" as const,
      sessionId: "s-1",
      timestamp: `2026-01-0${i + 1}T09:00:00Z`,
    })),
  );
  fake.fail("slow");
  const dir = mkdtempSync(join(tmpdir(), "memgate-bench-"));
  cpSync(join(ROOT, "policies"), join(dir, "policies"), { recursive: true });
  writeFileSync(
    join(dir, "policies", "bench.yaml"),
    "name: bench\nversion: 1\nbackend: openmemory\nretrieval: { minScore: 0 }\n" +
      "rateLimit: { perUser: { points: 1000000, durationSeconds: 60 } }\ntimeouts: { backendMs: 5000 }\n",
  );
  const env = {
    HOST: "127.0.0.1",
    LOG_LEVEL: "warn",
    MEMGATE_POLICY_DIR: join(dir, "policies"),
    MEMGATE_BACKEND: "openmemory",
    OPENMEMORY_URL: fake.baseUrl,
    MEMGATE_KEY_RATE_LIMIT: "9999999/60",
    MEMGATE_REDIS_PREFIX: PREFIX,
  };

  console.log(hostInfo().join("\n"));
  console.log(
    `load: autocannon, ${CONNECTIONS} connections, ${DURATION_S} s per scenario; backend: fake OpenMemory answering in ${BACKEND_MS} ms; gateway: one child process`,
  );
  const rows: Row[] = [];
  let cluster: RedisClusterServers | undefined;
  try {
    cluster = await RedisClusterServers.start();
    const envOf = {
      redis: { ...env, REDIS_URL },
      "redis cluster": { ...env, REDIS_CLUSTER_NODES: cluster.seeds },
      "in-process": env,
    };
    for (const cache of ["redis", "redis cluster", "in-process"] as const) {
      const gw = await startGateway(envOf[cache], cache !== "in-process");
      try {
        const first = await retrieveOnce(gw.url, "what coffee do I usually order?");
        const second = await retrieveOnce(gw.url, "what coffee do I usually order?");
        if (first !== "miss" || second !== "hit") throw new Error(`cache not working: ${first}, ${second}`);
        // Warm-up, not recorded: each gateway's JIT and connections warm before its figures (fair to the first).
        await load(gw.url, false, 1);
        for (const unique of [false, true]) {
          const before = fake.requests.length;
          const result = await load(gw.url, unique);
          rows.push({
            cache,
            scenario: unique ? "miss (unique queries)" : "hit (same query)",
            result,
            backendCalls: fake.requests.length - before,
          });
        }
      } finally {
        await stopGateway(gw);
      }
    }
  } finally {
    await cluster?.stop();
    await fake.close();
    const keys = await probe.keys(`${PREFIX}*`);
    if (keys.length > 0) await probe.del(...keys);
    probe.disconnect();
    rmSync(dir, { recursive: true, force: true });
  }

  console.log(heading("POST /v1/retrieve, cache hit vs miss"));
  console.log(
    table(
      ["cache", "scenario", "req/s", "p50 ms", "p99 ms", "max ms", "requests", "non-2xx", "backend calls"],
      rows.map(({ cache, scenario, result, backendCalls }) => [
        cache,
        scenario,
        int(result.requests.average),
        String(result.latency.p50),
        String(result.latency.p99),
        String(result.latency.max),
        int(result.requests.total),
        int(result.non2xx + result.errors + result.timeouts),
        int(backendCalls),
      ]),
      ["left", "left"],
    ),
  );
  const rate = (cache: string, scenario: string) =>
    rows.find((r) => r.cache === cache && r.scenario.startsWith(scenario))?.result.requests.average ??
    Number.NaN;
  const share = (scenario: string) =>
    `${((100 * rate("redis cluster", scenario)) / rate("redis", scenario)).toFixed(0)} %`;
  console.log(
    `Redis Cluster (3 masters + 3 replicas, same host) vs one Redis node, same run: hits ${share("hit")}, misses ${share("miss")} of the single node's req/s`,
  );
  return 0;
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    console.error(err);
    process.exitCode = 1;
  },
);
