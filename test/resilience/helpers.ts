import { Writable } from "node:stream";
import type { SearchRequest } from "../../src/backends/types";
import { createLogger, type Logger } from "../../src/logging/logger";
import { DEFAULT_RESILIENCE, type ResilienceOptions, ResilientBackend } from "../../src/resilience";
import { FakeBackend } from "../helpers/fake-backend";
import { makeCandidate, makePolicy } from "../helpers/items";

export interface Rig {
  inner: FakeBackend;
  backend: ResilientBackend;
  logs: string[];
  logger: Logger;
}

type Patch = {
  retry?: Partial<ResilienceOptions["retry"]>;
  breaker?: Partial<ResilienceOptions["breaker"]>;
  bulkhead?: Partial<ResilienceOptions["bulkhead"]>;
};

export function options(patch: Patch = {}): ResilienceOptions {
  const d = DEFAULT_RESILIENCE;
  return {
    retry: { ...d.retry, ...patch.retry },
    breaker: { ...d.breaker, ...patch.breaker },
    bulkhead: { ...d.bulkhead, ...patch.bulkhead },
  };
}

/** A fake Zep that knows `u-1`, behind a ResilientBackend with `patch` applied to the defaults. */
export function rig(patch: Patch = {}): Rig {
  const logs: string[] = [];
  const logger = createLogger(
    "debug",
    new Writable({
      write(chunk: Buffer, _enc, cb) {
        logs.push(chunk.toString("utf8"));
        cb();
      },
    }),
  );
  const inner = new FakeBackend("zep").setUser("u-1", [makeCandidate({ id: "a", score: 0.9 })]);
  const backend = new ResilientBackend(inner, options(patch), { tenantId: "acme", logger });
  return { inner, backend, logs, logger };
}

export function searchReq(backendMs = 1500, signal?: AbortSignal): SearchRequest {
  return {
    userId: "u-1",
    query: "coffee",
    limit: 10,
    searchType: "hybrid",
    policy: makePolicy({ timeouts: { backendMs } }),
    signal: signal ?? AbortSignal.timeout(backendMs),
  };
}

/** The rejection of `p` (fails the test when it resolves). */
export async function rejection(p: Promise<unknown>): Promise<Error> {
  try {
    await p;
  } catch (err) {
    if (err instanceof Error) return err;
    throw new Error(`rejected with a non-Error: ${String(err)}`);
  }
  throw new Error("expected a rejection");
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
