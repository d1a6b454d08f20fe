import { FakeOpenMemoryServer } from "../../test/backends/fakes/openmemory-server";
import { type FaultWindow, inject, planFaults, SPIKE_MS } from "./faults";
import { freePort, type HeapSample, SoakGateway } from "./gateway";
import { FixedRateLoad, type LoadStats } from "./load";
import { SoakRedis } from "./redis";

export interface SoakOptions {
  durationS: number;
  rate: number;
  /** Allowed heap growth (after a forced GC) between the end of the warm-up and the end of the run. */
  heapBoundBytes: number;
  /** Node/V8 flags the gateway process starts with (e.g. `--max-semi-space-size=32`), before its script. */
  nodeFlags?: readonly string[];
  log?: (line: string) => void;
}

export interface SoakResult {
  options: SoakOptions;
  windows: FaultWindow[];
  stats: LoadStats;
  heap: { afterWarmup: HeapSample; end: HeapSample };
  gatewayExit: number | null;
  elapsedS: number;
}

const USERS = 20;
const WORDS = [
  "coffee",
  "tea",
  "oat",
  "milk",
  "lisbon",
  "office",
  "tuesday",
  "meeting",
  "project",
  "deadline",
  "running",
  "marathon",
  "guitar",
  "jazz",
  "paella",
  "sushi",
  "flight",
  "hotel",
  "daughter",
  "birthday",
  "allergy",
  "peanuts",
  "python",
  "rust",
  "garden",
  "tomatoes",
  "novel",
  "chess",
  "cycling",
  "yoga",
];
const QUERIES = Array.from(
  { length: 20 },
  (_, i) => `${WORDS[i % WORDS.length]} ${WORDS[(i * 7 + 3) % WORDS.length]}`,
);

function memoriesFor(user: number) {
  return Array.from({ length: 12 }, (_, j) => ({
    id: `u${user}-m${j}`,
    content: `The user mentioned ${WORDS[(user + j) % WORDS.length]} and ${WORDS[(user * 3 + j * 5) % WORDS.length]}. It came up again later.`,
    type: (j % 3 === 0 ? "fact" : "message") as "fact" | "message",
    timestamp: new Date(Date.UTC(2026, 0, 1 + j)).toISOString(),
    sessionId: `s-${j}`,
  }));
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * The soak: a private redis-server, a fake OpenMemory (in this process), the gateway in a child process, an
 * open-loop load at a fixed rate, and faults injected on schedule (bench/soak/faults.ts). Loopback only.
 */
export async function runSoak(options: SoakOptions): Promise<SoakResult> {
  const log = options.log ?? (() => undefined);
  const started = Date.now();
  const redis = new SoakRedis(await freePort());
  await redis.start();
  const backend = await FakeOpenMemoryServer.start({ slowMs: SPIKE_MS });
  for (let u = 0; u < USERS; u++) await backend.seed(`u-${u}`, memoriesFor(u));
  // The fake records every request; keep that from growing in a long run.
  const trim = setInterval(() => {
    backend.requests.length = 0;
  }, 1000);
  let gateway: SoakGateway | undefined;
  try {
    gateway = await SoakGateway.start({
      openMemoryUrl: backend.baseUrl,
      redisUrl: redis.url,
      nodeFlags: options.nodeFlags ?? [],
    });
    log(`gateway pid ${gateway.pid} at ${gateway.url}; backend ${backend.baseUrl}; redis ${redis.url}`);
    const plan = planFaults(options.durationS);
    const load = new FixedRateLoad(gateway.url, options.rate, (i) => ({
      userId: `u-${i % USERS}`,
      sessionId: "s-1",
      query: QUERIES[(i * 7) % QUERIES.length],
      useMemory: true,
    }));
    load.start();
    const t0 = Date.now();
    const faults = plan.windows.map(async (w) => {
      await sleep(w.at * 1000);
      log(`${w.at.toFixed(1).padStart(5)} s  ${w.kind} for ${w.seconds} s`);
      await inject(w, { backend, redis });
    });
    await sleep(plan.warmupS * 1000 - 200);
    const afterWarmup = await gateway.heap();
    await sleep(Math.max(0, options.durationS * 1000 - (Date.now() - t0)));
    await load.stop();
    await Promise.all(faults);
    await sleep(500);
    const end = await gateway.heap();
    const gatewayExit = await gateway.stop();
    gateway = undefined;
    return {
      options,
      windows: plan.windows,
      stats: load.stats,
      heap: { afterWarmup, end },
      gatewayExit,
      elapsedS: (Date.now() - started) / 1000,
    };
  } finally {
    clearInterval(trim);
    if (gateway !== undefined) await gateway.stop();
    await backend.close();
    await redis.kill();
  }
}
