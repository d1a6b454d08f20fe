import type { FakeOpenMemoryServer } from "../../test/backends/fakes/openmemory-server";
import type { SoakRedis } from "./redis";

export type FaultKind = "backend_5xx" | "latency_spike" | "redis_down";

export interface FaultWindow {
  kind: FaultKind;
  /** Seconds from the start of the load. */
  at: number;
  seconds: number;
}

/** How long a backend answer takes during a latency spike: beyond the policy's 1500 ms timeout. */
export const SPIKE_MS = 1800;

/** One cycle of faults, each followed by a quiet spell (s). */
/** The quiet spells outlast the breaker's 5 s open state, so each fault meets a closed circuit. */
const CYCLE: Array<{ kind: FaultKind | "quiet"; seconds: number }> = [
  { kind: "backend_5xx", seconds: 3 },
  { kind: "quiet", seconds: 6 },
  { kind: "latency_spike", seconds: 3 },
  { kind: "quiet", seconds: 6 },
  { kind: "redis_down", seconds: 4 },
  { kind: "quiet", seconds: 4 },
];

/**
 * A warm-up without faults, then fault cycles, then a quiet tail (recovery) of at least 10 % of the run: a
 * fault window is scheduled only if it ends before the tail.
 */
export function planFaults(durationS: number): { warmupS: number; tailS: number; windows: FaultWindow[] } {
  const warmupS = Math.min(8, Math.max(3, durationS * 0.15));
  const tailS = Math.max(4, durationS * 0.1);
  const windows: FaultWindow[] = [];
  let t = warmupS;
  for (let i = 0; t < durationS - tailS; i = (i + 1) % CYCLE.length) {
    const step = CYCLE[i];
    if (step === undefined) break;
    if (t + step.seconds > durationS - tailS) break;
    if (step.kind !== "quiet") windows.push({ kind: step.kind, at: t, seconds: step.seconds });
    t += step.seconds;
  }
  return { warmupS, tailS, windows };
}

/** Turns a fault on and, `seconds` later, off again. */
export async function inject(
  w: FaultWindow,
  deps: { backend: FakeOpenMemoryServer; redis: SoakRedis },
): Promise<void> {
  const off = () => new Promise((r) => setTimeout(r, w.seconds * 1000));
  switch (w.kind) {
    case "backend_5xx":
      deps.backend.fail("server_error");
      await off();
      deps.backend.fail("server_error", 0);
      return;
    case "latency_spike":
      deps.backend.fail("slow");
      await off();
      deps.backend.fail("slow", 0);
      return;
    case "redis_down":
      await deps.redis.kill();
      await off();
      await deps.redis.start();
      return;
  }
}
