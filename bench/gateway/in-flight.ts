import { Agent, request } from "node:http";
import type { Gateway, HeapSample } from "./memgate";
import type { Helper } from "./procs";
import type { ServerReply, ServerRequest } from "./servers";

/** One POST, resolved with the status (0 when it failed). */
export function post(url: string, body: string, agent: Agent): Promise<number> {
  return new Promise((resolve) => {
    const req = request(
      url,
      { method: "POST", agent, headers: { "content-type": "application/json" } },
      (res) => {
        res.resume();
        res.on("end", () => resolve(res.statusCode ?? 0));
      },
    );
    req.on("error", () => resolve(0));
    req.end(body);
  });
}

/** `after − before`, key by key (CPU counters read before and after a run). */
export function diff(after: Map<string, number>, before: Map<string, number>): Map<string, number> {
  return new Map([...after].map(([k, v]) => [k, v - (before.get(k) ?? 0)]));
}

/**
 * Live heap per in-flight request: `inFlight` misses sent to `gateway` and held at the slow `backend` (each
 * holding `callsPerRequest` backend calls) for `holdMs`, the gateway's heap after GC while they wait, minus its
 * idle heap. `held`: the backend calls seen waiting when the heap was read.
 */
export async function heapPerInFlight(opts: {
  backend: Helper<ServerRequest, ServerReply>;
  gateway: Gateway;
  inFlight: number;
  holdMs: number;
  callsPerRequest: number;
  body: (i: number) => string;
}): Promise<{ idle: HeapSample; busy: HeapSample; ok: number; held: number; perRequest: number }> {
  const { backend, gateway, inFlight, holdMs } = opts;
  await backend.ask({ op: "delay", ms: holdMs });
  const idle = await gateway.heap();
  const agent = new Agent({ keepAlive: false, maxSockets: inFlight * 2 });
  const answers = Array.from({ length: inFlight }, (_, i) =>
    post(`${gateway.url}/v1/retrieve`, opts.body(i), agent),
  );
  const want = opts.callsPerRequest * inFlight;
  const deadline = Date.now() + holdMs - 500;
  while (((await backend.ask({ op: "stats" })).pending ?? 0) < want && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 20));
  }
  const held = (await backend.ask({ op: "stats" })).pending ?? 0;
  const busy = await gateway.heap();
  const ok = (await Promise.all(answers)).filter((s) => s === 200).length;
  agent.destroy();
  await backend.ask({ op: "delay", ms: 0 });
  return { idle, busy, ok, held, perRequest: (busy.heapUsed - idle.heapUsed) / inFlight };
}
