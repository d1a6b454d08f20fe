import { BackendError } from "../../src/backends/types";
import { parseEnv } from "../../src/config/env";
import { DEFAULT_RESILIENCE, resilienceFromEnv } from "../../src/resilience";
import { rejection, rig, searchReq } from "./helpers";

describe("ResilientBackend — bulkhead", () => {
  test("beyond limit + queue concurrent calls, the next is refused at once (and does not open the circuit)", async () => {
    const { inner, backend, logs } = rig({ bulkhead: { limit: 2, queue: 1 } });
    inner.script = { kind: "delay", ms: 150 };
    const admitted = [0, 1, 2].map(() => backend.search(searchReq()));
    const started = Date.now();
    for (let i = 0; i < 10; i++) {
      const err = await rejection(backend.search(searchReq()));
      expect(err).toBeInstanceOf(BackendError);
      expect((err as BackendError).kind).toBe("unavailable");
      expect(err.message).toBe("zep bulkhead full");
    }
    expect(Date.now() - started).toBeLessThan(100);
    // The two running and the queued one complete.
    for (const result of await Promise.all(admitted)) expect(result.map((c) => c.id)).toEqual(["a"]);
    expect(inner.searchCalls).toBe(3);
    expect(backend.circuit()).toBe("closed");
    // Logged once for the burst, with the count.
    const lines = logs.filter((l) => l.includes("bulkhead full"));
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0] ?? "{}")).toMatchObject({ tenant: "acme", limit: 2, queue: 1 });
  });

  test("a hung adapter gives its slot back at the deadline", async () => {
    const { inner, backend } = rig({ bulkhead: { limit: 1, queue: 0 }, retry: { maxRetries: 0 } });
    inner.script = { kind: "hang" };
    await rejection(backend.search(searchReq(50)));
    inner.script = { kind: "ok" };
    expect((await backend.search(searchReq())).map((c) => c.id)).toEqual(["a"]);
  });

  test("separate instances (tenants) have separate bulkheads and breakers", async () => {
    const acme = rig({ bulkhead: { limit: 1, queue: 0 }, retry: { maxRetries: 0 } });
    const globex = rig({ bulkhead: { limit: 1, queue: 0 }, retry: { maxRetries: 0 } });
    acme.inner.script = { kind: "delay", ms: 100 };
    const busy = acme.backend.search(searchReq());
    await rejection(acme.backend.search(searchReq()));
    expect((await globex.backend.search(searchReq())).length).toBe(1);
    await busy;
    acme.inner.fail("unavailable");
    for (let i = 0; i < 5; i++) await rejection(acme.backend.search(searchReq()));
    expect(acme.backend.circuit()).toBe("open");
    expect(globex.backend.circuit()).toBe("closed");
  });
});

describe("resilience configuration", () => {
  test("defaults, overridable by MEMGATE_BREAKER_* / MEMGATE_BULKHEAD_* / MEMGATE_RETRY_MAX", () => {
    expect(resilienceFromEnv(parseEnv({}))).toEqual(DEFAULT_RESILIENCE);
    const custom = resilienceFromEnv(
      parseEnv({
        MEMGATE_RETRY_MAX: "0",
        MEMGATE_BREAKER_CONSECUTIVE: "3",
        MEMGATE_BREAKER_RATIO: "0.25",
        MEMGATE_BREAKER_WINDOW: "40",
        MEMGATE_BREAKER_HALF_OPEN_MS: "2000",
        MEMGATE_BULKHEAD_LIMIT: "8",
        MEMGATE_BULKHEAD_QUEUE: "0",
      }),
    );
    expect(custom).toEqual({
      retry: { ...DEFAULT_RESILIENCE.retry, maxRetries: 0 },
      breaker: { consecutive: 3, ratio: 0.25, window: 40, minimumCalls: 20, halfOpenAfterMs: 2000 },
      bulkhead: { limit: 8, queue: 0 },
    });
  });

  test("a bad value is refused at boot with the variable's name", () => {
    expect(() => parseEnv({ MEMGATE_BREAKER_RATIO: "1.5" })).toThrow(
      /^MEMGATE_BREAKER_RATIO: .*between 0 and 1/,
    );
    expect(() => parseEnv({ MEMGATE_BULKHEAD_LIMIT: "0" })).toThrow(/^MEMGATE_BULKHEAD_LIMIT: /);
    expect(() => parseEnv({ MEMGATE_RETRY_MAX: "9" })).toThrow(/^MEMGATE_RETRY_MAX: /);
  });
});
