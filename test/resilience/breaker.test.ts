import { BackendError } from "../../src/backends/types";
import { rejection, rig, searchReq, sleep } from "./helpers";

const noRetry = { retry: { maxRetries: 0 } };

describe("ResilientBackend — circuit breaker", () => {
  test("opens after 5 consecutive failures; while open it answers unavailable at once, without a call", async () => {
    const { inner, backend, logs } = rig(noRetry);
    inner.fail("unavailable", { status: 503 });
    for (let i = 0; i < 5; i++) await rejection(backend.search(searchReq()));
    expect(inner.searchCalls).toBe(5);
    expect(backend.circuit()).toBe("open");

    inner.script = { kind: "delay", ms: 1000 }; // would be slow, but is never called
    const started = Date.now();
    for (let i = 0; i < 20; i++) {
      const err = await rejection(backend.search(searchReq()));
      expect(err).toBeInstanceOf(BackendError);
      expect((err as BackendError).kind).toBe("unavailable");
      expect(err.message).toBe("zep circuit open");
    }
    expect(Date.now() - started).toBeLessThan(200);
    expect(inner.searchCalls).toBe(5);
    // The state change is logged once, not once per refused call.
    expect(logs.filter((l) => l.includes("backend circuit opened"))).toHaveLength(1);
    expect(JSON.parse(logs.find((l) => l.includes("circuit opened")) ?? "{}")).toMatchObject({
      backend: "zep",
      tenant: "acme",
      circuit: "open",
      kind: "unavailable",
      status: 503,
    });
  });

  test("opens on a failure ratio even when failures never come 5 in a row", async () => {
    const { inner, backend } = rig(noRetry);
    let n = 0;
    inner.search = async () => {
      n++;
      if (n % 3 !== 0) throw new BackendError({ kind: "unavailable", backend: "zep", message: "503" });
      return [];
    };
    // fail, fail, ok, fail, fail, ok, …: 2/3 of calls fail, never more than 2 in a row.
    for (let i = 0; i < 12 && backend.circuit() === "closed"; i++) {
      await backend.search(searchReq()).catch(() => undefined);
    }
    expect(backend.circuit()).toBe("open");
    expect(n).toBeGreaterThanOrEqual(10); // minimumCalls (window 20 / 2)
  });

  test("not_found, invalid_query and rate_limited prove the backend answered: they never open it", async () => {
    const { inner, backend } = rig(noRetry);
    for (const kind of ["not_found", "invalid_query", "rate_limited"] as const) {
      inner.fail(kind);
      for (let i = 0; i < 10; i++) await rejection(backend.search(searchReq()));
    }
    expect(backend.circuit()).toBe("closed");
  });

  test("timeouts count as failures; calls abandoned by the client do not", async () => {
    const { inner, backend } = rig(noRetry);
    inner.script = { kind: "delay", ms: 2000 };
    for (let i = 0; i < 8; i++) {
      const client = new AbortController();
      const pending = backend.search(searchReq(1500, client.signal));
      setTimeout(() => client.abort(), 5);
      await rejection(pending);
    }
    expect(backend.circuit()).toBe("closed");
    for (let i = 0; i < 5; i++) await rejection(backend.search(searchReq(50)));
    expect(backend.circuit()).toBe("open");
  });

  test("an adapter bug (not a BackendError) counts as a failure and passes through unchanged", async () => {
    const { inner, backend } = rig(noRetry);
    inner.script = { kind: "throw", error: new TypeError("bug") };
    for (let i = 0; i < 5; i++)
      expect(await rejection(backend.search(searchReq()))).toBeInstanceOf(TypeError);
    expect(backend.circuit()).toBe("open");
  });

  test("half-open: after the wait one call probes; others are refused meanwhile; success closes it", async () => {
    const { inner, backend, logs } = rig({ ...noRetry, breaker: { halfOpenAfterMs: 100 } });
    inner.fail("unavailable");
    for (let i = 0; i < 5; i++) await rejection(backend.search(searchReq()));
    expect(backend.circuit()).toBe("open");
    await sleep(120);

    inner.script = { kind: "delay", ms: 80 };
    const probe = backend.search(searchReq());
    expect(backend.circuit()).toBe("half_open");
    const meanwhile = await rejection(backend.search(searchReq()));
    expect(meanwhile.message).toBe("zep circuit open");
    expect((await probe).map((c) => c.id)).toEqual(["a"]);
    expect(backend.circuit()).toBe("closed");
    expect(inner.searchCalls).toBe(6);
    const lines = logs.join("");
    expect(lines).toContain("backend circuit half-open: probing");
    expect(lines).toContain("backend circuit closed");
  });

  test("half-open: a failed probe opens it again for another wait", async () => {
    const { inner, backend } = rig({ ...noRetry, breaker: { halfOpenAfterMs: 100 } });
    inner.fail("unavailable");
    for (let i = 0; i < 5; i++) await rejection(backend.search(searchReq()));
    await sleep(120);
    await rejection(backend.search(searchReq()));
    expect(inner.searchCalls).toBe(6);
    expect(backend.circuit()).toBe("open");
    expect((await rejection(backend.search(searchReq()))).message).toBe("zep circuit open");
    expect(inner.searchCalls).toBe(6);
  });

  test("ping reports the open circuit, and after the wait is itself the probe that closes it", async () => {
    const { inner, backend } = rig({ ...noRetry, breaker: { halfOpenAfterMs: 100 } });
    let pings = 0;
    inner.ping = async () => {
      pings++;
    };
    await backend.ping({ signal: AbortSignal.timeout(500) });
    inner.fail("unavailable");
    for (let i = 0; i < 5; i++) await rejection(backend.search(searchReq()));
    const err = await rejection(backend.ping({ signal: AbortSignal.timeout(500) }));
    expect(err.message).toBe("zep circuit open");
    expect(pings).toBe(1);
    // After the wait, the ping is the half-open probe (like any call): a success closes the circuit.
    await sleep(120);
    await backend.ping({ signal: AbortSignal.timeout(500) });
    expect(pings).toBe(2);
    expect(backend.circuit()).toBe("closed");
  });
});
