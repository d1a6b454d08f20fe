/**
 * The gateway bench's load generator, in its own process (never in a process that serves): it receives a
 * `LoadSpec` over IPC, runs it, and answers a `LoadResult`. Two modes:
 *
 *   rate  open loop at a fixed rate: one request every 1/rate s, each sent on time whether or not earlier ones
 *         have been answered (a keep-alive pool opens more connections when all are busy), latency from the
 *         moment it was sent to the last byte of its answer, in µs resolution. autocannon's own `--overallRate`
 *         is not used for this: it sends each connection's quota for the second back to back at the top of the
 *         second (bursts, not a rate) and corrects for coordinated omission with a 1 ms expected interval.
 *   seq   one request at a time on one keep-alive connection (the unloaded latency, as the peers' overhead
 *         figures were measured).
 *   max   closed loop for throughput: autocannon (programmatic API) with `connections` connections, each sending
 *         its next request as soon as the previous answer arrived; latencies taken from autocannon's per-answer
 *         `response` event (float ms), not from its integer-ms histogram.
 *
 * In every mode the first `warmupS` seconds are run but not counted. `{n}` in the body becomes a unique id per
 * request when `unique` is set (a cache miss per request for POST /v1/retrieve); with `mix` instead, one request
 * in `missEvery` gets a unique id and the others one of `pool` ids (a soak's mix of misses and hits). With
 * `bodies` (seq and rate modes), one request is all of these bodies sent at once to `url`, timed until the last
 * answer (a client calling Zep for two scopes); max mode sends them in turn.
 */
import { Agent, request } from "node:http";
import autocannon from "autocannon";
import { summarize } from "../lib/stats";

export interface LoadSpec {
  url: string;
  body: string;
  /** Sent together as one request instead of `body` (see the top of this file). */
  bodies?: string[];
  unique: boolean;
  mix?: { missEvery: number; pool: number };
  mode: "rate" | "max" | "seq";
  /** rate mode: requests per second. */
  rate?: number;
  /** max mode: concurrent connections. */
  connections?: number;
  warmupS: number;
  durationS: number;
}

export interface LoadResult {
  /** Latency of every counted answer (after the warm-up), ms. */
  latencies: number[];
  /** Transport errors and timeouts, and answers that were not 2xx. */
  failed: number;
  /** Length of the counted part, s. */
  seconds: number;
  /** Every answer, the warm-up's included (to divide the servers' CPU time by). */
  total: number;
  /** rate mode: p99 of how late requests were sent (whether the generator kept up), ms. */
  sendLagP99?: number;
}

const HEADERS = { "content-type": "application/json" };
let unique = 0;

function bodyFor(spec: LoadSpec, body = spec.body): string {
  if (spec.mix !== undefined) {
    const n = unique++;
    const id = n % spec.mix.missEvery === 0 ? `${process.pid}-${n}` : `pool-${n % spec.mix.pool}`;
    return body.replace("{n}", id);
  }
  return spec.unique ? body.replace("{n}", `${process.pid}-${unique++}`) : body;
}

function result(
  latencies: number[],
  failed: number,
  seconds: number,
  total: number,
  lag?: number[],
): LoadResult {
  const out: LoadResult = { latencies, failed, seconds, total };
  if (lag !== undefined) out.sendLagP99 = summarize(lag).p99;
  return out;
}

/** One request (`bodies`: all of them at once); resolves with its latency in ms, or NaN when one failed. */
function send(spec: LoadSpec, url: URL, agent: Agent): Promise<number> {
  if (spec.bodies === undefined) return sendOne(url, agent, bodyFor(spec));
  const sentAt = process.hrtime.bigint();
  return Promise.all(spec.bodies.map((b) => sendOne(url, agent, bodyFor(spec, b)))).then((all) =>
    all.some(Number.isNaN) ? Number.NaN : Number(process.hrtime.bigint() - sentAt) / 1e6,
  );
}

/** One POST on `agent`; resolves with its latency in ms (send → last byte), or NaN when it failed. */
function sendOne(url: URL, agent: Agent, body: string): Promise<number> {
  return new Promise((resolve) => {
    const sentAt = process.hrtime.bigint();
    let settled = false;
    const settle = (ok: boolean) => {
      if (settled) return;
      settled = true;
      resolve(ok ? Number(process.hrtime.bigint() - sentAt) / 1e6 : Number.NaN);
    };
    const req = request(
      { agent, host: url.hostname, port: url.port, path: url.pathname, method: "POST", headers: HEADERS },
      (res) => {
        res.resume();
        res.on("end", () => settle((res.statusCode ?? 0) < 300));
        res.on("error", () => settle(false));
      },
    );
    req.on("error", () => settle(false));
    req.setTimeout(10_000, () => req.destroy());
    req.end(body);
  });
}

function runRate(spec: LoadSpec): Promise<LoadResult> {
  const rate = spec.rate ?? 500;
  const url = new URL(spec.url);
  const agent = new Agent({ keepAlive: true, maxSockets: 1024 });
  const total = Math.round(rate * (spec.warmupS + spec.durationS));
  const skip = Math.round(rate * spec.warmupS);
  const intervalNs = 1e9 / rate;
  const latencies: number[] = [];
  const lag: number[] = [];
  let failed = 0;
  let done = 0;
  let sent = 0;
  const start = process.hrtime.bigint();
  return new Promise((resolve) => {
    const fire = (i: number) => {
      if (i >= skip) lag.push((Number(process.hrtime.bigint() - start) - i * intervalNs) / 1e6);
      void send(spec, url, agent).then((ms) => {
        if (i >= skip) {
          if (Number.isNaN(ms)) failed++;
          else latencies.push(ms);
        }
        if (++done === total) {
          agent.destroy();
          resolve(result(latencies, failed, spec.durationS, total, lag));
        }
      });
    };
    const tick = () => {
      const now = Number(process.hrtime.bigint() - start);
      while (sent < total && sent * intervalNs <= now) fire(sent++);
      if (sent < total) setTimeout(tick, Math.max(0, Math.floor((sent * intervalNs - now) / 1e6)));
    };
    tick();
  });
}

/** One request at a time on one keep-alive connection: the latency of an unloaded server. */
async function runSequential(spec: LoadSpec): Promise<LoadResult> {
  const url = new URL(spec.url);
  const agent = new Agent({ keepAlive: true, maxSockets: spec.bodies?.length ?? 1 });
  const latencies: number[] = [];
  let failed = 0;
  let total = 0;
  const start = Date.now();
  const warmupEnd = start + spec.warmupS * 1000;
  const end = warmupEnd + spec.durationS * 1000;
  for (let now = start; now < end; now = Date.now()) {
    const ms = await send(spec, url, agent);
    total++;
    if (now < warmupEnd) continue;
    if (Number.isNaN(ms)) failed++;
    else latencies.push(ms);
  }
  agent.destroy();
  return result(latencies, failed, spec.durationS, total);
}

function runMax(spec: LoadSpec): Promise<LoadResult> {
  const latencies: number[] = [];
  let failed = 0;
  let total = 0;
  const start = Date.now();
  const warmupMs = spec.warmupS * 1000;
  let turn = 0;
  return new Promise((resolve, reject) => {
    const tracker = autocannon(
      {
        url: spec.url,
        connections: spec.connections ?? 32,
        duration: spec.warmupS + spec.durationS,
        timeout: 10,
        requests: [
          {
            method: "POST",
            headers: HEADERS,
            setupRequest: (req) => {
              const bodies = spec.bodies;
              const body = bodies === undefined ? spec.body : (bodies[turn++ % bodies.length] ?? spec.body);
              return { ...req, body: bodyFor(spec, body) };
            },
          },
        ],
      },
      (err) => {
        if (err) reject(err);
        else resolve(result(latencies, failed, spec.durationS, total));
      },
    );
    tracker.on("response", (_client, status, _bytes, ms) => {
      total++;
      if (Date.now() - start < warmupMs) return;
      if (status < 300) latencies.push(ms);
      else failed++;
    });
    tracker.on("reqError", () => {
      if (Date.now() - start >= warmupMs) failed++;
    });
  });
}

process.on("message", (spec: LoadSpec) => {
  const run = spec.mode === "rate" ? runRate(spec) : spec.mode === "seq" ? runSequential(spec) : runMax(spec);
  run.then(
    (r) => process.send?.(r),
    (err: unknown) => {
      console.error(err);
      process.exit(1);
    },
  );
});
process.on("SIGTERM", () => process.exit(0));
process.send?.({ ready: true });
