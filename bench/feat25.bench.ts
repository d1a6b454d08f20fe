/**
 * What issue 25's reinforcement and reply turns cost (README/docs figures of this round):
 *
 * 1. the rank stage at 40 candidates × 500 characters, without and with the reinforcement signal (pure CPU);
 * 2. the reinforcement store on the local Redis (REDIS_URL, default redis://127.0.0.1:6379): one read (HMGET of
 *    40 ids) and one increment (the script, 8 ids), round trips in sequence;
 * 3. a Zep search (scope episodes, against an in-process fake Zep on loopback) without and with
 *    `retrieval.replies` (one `thread.get` more when a question episode comes back).
 *
 *   npx tsx bench/index.ts feat25             (or: npx tsx bench/feat25.bench.ts [--quick])
 */
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { createZepBackend } from "../src/backends/zep";
import { silentLogger } from "../src/logging/logger";
import { toWorkItem } from "../src/pipeline";
import { analyzeQuery } from "../src/pipeline/query/analyze";
import { rankStage } from "../src/pipeline/stages/rank";
import { policySchema } from "../src/policy/schema";
import { RedisConnection } from "../src/redis/connection";
import { RedisReinforcementStore } from "../src/reinforcement/redis";
import { makeCandidates } from "./lib/corpus";
import { sampleAsync, warmUp } from "./lib/stats";

const quick = process.argv.includes("--quick");
const pct = (xs: Float64Array, p: number) => {
  const s = Float64Array.from(xs).sort();
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? Number.NaN;
};
/** The samples are nanoseconds (./lib/stats.ts). */
const us = (ns: number) => `${(ns / 1000).toFixed(1)} µs`;
const line = (what: string, xs: Float64Array) =>
  console.log(
    `${what.padEnd(58)} p50 ${us(pct(xs, 50)).padStart(10)}  p99 ${us(pct(xs, 99)).padStart(10)}  n=${xs.length}`,
  );

function rankCost(): void {
  const policy = policySchema.parse({ name: "b", version: 1, ranking: { enabled: true } });
  const candidates = makeCandidates({ count: 40, chars: 500 });
  const analysis = analyzeQuery(
    "What did Maya order at the bakery last week?",
    Date.parse("2026-01-01T00:00:00Z"),
  );
  const counts = new Map(candidates.map((c, i) => [c.id, i % 5]));
  const reinforcement = { counts, available: true, weight: 0.15, saturation: 8 };
  const items = () => candidates.map(toWorkItem);
  const n = quick ? 300 : 2000;
  warmUp(300, () => rankStage(items(), analysis, policy.ranking.weights));
  warmUp(300, () => rankStage(items(), analysis, policy.ranking.weights, reinforcement));
  // Interleaved, so that load on the machine falls on both alike; the WorkItems are built outside the timing.
  const off = new Float64Array(n);
  const on = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    const a = items();
    const b = items();
    let t = process.hrtime.bigint();
    rankStage(a, analysis, policy.ranking.weights);
    off[i] = Number(process.hrtime.bigint() - t);
    t = process.hrtime.bigint();
    rankStage(b, analysis, policy.ranking.weights, reinforcement);
    on[i] = Number(process.hrtime.bigint() - t);
  }
  line("rank stage, 40 × 500 chars, without reinforcement", off);
  line("rank stage, 40 × 500 chars, with reinforcement", on);
}

async function redisCost(): Promise<void> {
  const conn = new RedisConnection({
    url: process.env.REDIS_URL ?? "redis://127.0.0.1:6379",
    prefix: `memgate-bench:feat25:${process.pid}:`,
    logger: silentLogger(),
  });
  for (let i = 0; i < 200 && !conn.ready(); i++) await new Promise((r) => setTimeout(r, 10));
  if (!conn.ready()) {
    console.log("reinforcement store: no Redis reachable, skipped");
    await conn.close();
    return;
  }
  const store = new RedisReinforcementStore(conn);
  const ids = Array.from({ length: 40 }, (_, i) => `memory-${i}`);
  await store.add("bench", "u", ids, 60);
  const n = quick ? 300 : 2000;
  line(
    "reinforcement read (HMGET 40 ids), Redis on loopback",
    await sampleAsync(n, () => store.read("bench", "u", ids)),
  );
  line(
    "reinforcement increment (script, 8 ids), Redis on loopback",
    await sampleAsync(n, () => store.add("bench", "u", ids.slice(0, 8), 60)),
  );
  // The bench's hash (its own prefix) expires 60 s after the last increment.
  await conn.close();
}

async function zepRepliesCost(): Promise<void> {
  const episodes = Array.from({ length: 10 }, (_, i) => ({
    uuid: `e${i}`,
    content: i % 2 === 0 ? `Tom: Did you name the puppy ${i}?` : `Maya: Pickle ${i}, he chewed my sneaker.`,
    created_at: `2024-03-02T18:${String(i).padStart(2, "0")}:00Z`,
    role_type: "user",
    thread_id: "t-1",
    score: 0.9 - i * 0.05,
  }));
  const messages = episodes.map((e) => ({
    uuid: e.uuid,
    content: e.content,
    created_at: e.created_at,
    role: "user",
  }));
  const server = createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      res.writeHead(200, { "Content-Type": "application/json" });
      res.end(
        JSON.stringify(
          req.url?.includes("/threads/")
            ? { messages }
            : { episodes: episodes.filter((_, i) => i % 2 === 0) },
        ),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/v2`;
  const backend = createZepBackend({ apiKey: "k", baseUrl: base });
  const search = (replies: boolean) =>
    backend.search({
      userId: "u",
      query: "puppy",
      limit: 10,
      searchType: "hybrid",
      policy: policySchema.parse({
        name: "b",
        version: 1,
        retrieval: { replies },
        zep: { scopes: ["episodes"], reranker: "cross_encoder" },
      }),
      signal: AbortSignal.timeout(1500),
    });
  const n = quick ? 200 : 1000;
  const [without, withReplies] = [(await search(false)).length, (await search(true)).length];
  console.log(`Zep search: ${without} candidates without replies, ${withReplies} with`);
  await sampleAsync(100, () => search(false));
  await sampleAsync(100, () => search(true));
  line("Zep search (episodes), loopback fake, replies off", await sampleAsync(n, () => search(false)));
  line(
    "Zep search (episodes), loopback fake, replies on (+thread.get)",
    await sampleAsync(n, () => search(true)),
  );
  await backend.close?.();
  server.close();
}

async function main(): Promise<void> {
  rankCost();
  await redisCost();
  await zepRepliesCost();
}

void main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
