import { BackendError } from "../../src/backends/types";
import type { FakeBackend } from "../helpers/fake-backend";
import { rejection, rig, searchReq, sleep } from "./helpers";

const unavailable = (status?: number) =>
  new BackendError({ kind: "unavailable", backend: "zep", message: "zep: HTTP 503", status });

/** The inner backend fails the first `n` searches with `error` (after `delayMs`), then answers. */
function failFirst(inner: FakeBackend, n: number, error: BackendError, delayMs = 0): void {
  const original = inner.search.bind(inner);
  let left = n;
  inner.search = async (req) => {
    if (left > 0) {
      left--;
      inner.searchCalls++;
      if (delayMs > 0) await sleep(delayMs);
      throw error;
    }
    return original(req);
  };
}

describe("ResilientBackend — bounded retry for reads, within the timeout budget", () => {
  test("a transient 5xx is retried once, with a short jittered backoff, and the read succeeds", async () => {
    const { inner, backend } = rig();
    failFirst(inner, 1, unavailable(503));
    const started = Date.now();
    const out = await backend.search(searchReq());
    expect(out.map((c) => c.id)).toEqual(["a"]);
    expect(inner.searchCalls).toBe(2);
    expect(Date.now() - started).toBeLessThan(500); // backoff ≤ 200 ms
  });

  test("a network error (no status) is retried too; userExists is a read and is retried", async () => {
    const { inner, backend } = rig();
    failFirst(inner, 1, unavailable());
    await backend.search(searchReq());
    expect(inner.searchCalls).toBe(2);

    let calls = 0;
    inner.userExists = async () => {
      calls++;
      if (calls === 1) throw unavailable(502);
      return true;
    };
    expect(await backend.userExists("u-1", { signal: AbortSignal.timeout(1000) })).toBe(true);
    expect(calls).toBe(2);
  });

  test("at most maxRetries extra attempts: a backend that keeps failing is called twice, then unavailable", async () => {
    const { inner, backend } = rig();
    inner.fail("unavailable", { status: 500 });
    const err = await rejection(backend.search(searchReq()));
    expect(err).toBeInstanceOf(BackendError);
    expect((err as BackendError).kind).toBe("unavailable");
    expect(inner.searchCalls).toBe(2);
  });

  test.each([
    ["not_found", 404],
    ["invalid_query", 400],
    ["rate_limited", 429],
  ] as const)("never retries %s", async (kind, status) => {
    const { inner, backend } = rig();
    inner.fail(kind, { status });
    const err = await rejection(backend.search(searchReq()));
    expect((err as BackendError).kind).toBe(kind);
    expect(inner.searchCalls).toBe(1);
  });

  test("never retries an unavailable with a 4xx status (401/403: misconfiguration, not a blip)", async () => {
    const { inner, backend } = rig();
    inner.fail("unavailable", { status: 401 });
    await rejection(backend.search(searchReq()));
    expect(inner.searchCalls).toBe(1);
  });

  test("no retry when the budget left cannot hold another attempt (slow failure, 300 ms budget)", async () => {
    const { inner, backend } = rig();
    failFirst(inner, 5, unavailable(503), 150);
    const started = Date.now();
    await rejection(backend.search(searchReq(300)));
    expect(inner.searchCalls).toBe(1); // 300 − 150 left < 150 (last attempt) + 200 (max backoff)
    expect(Date.now() - started).toBeLessThan(300);
  });

  test("no retry after the deadline fired; the call ends at the deadline", async () => {
    const { inner, backend } = rig();
    inner.script = { kind: "delay", ms: 5000 };
    const started = Date.now();
    const err = await rejection(backend.search(searchReq(100)));
    expect(err.message).toBe("zep did not answer in time");
    expect(inner.searchCalls).toBe(1);
    expect(Date.now() - started).toBeLessThan(1000);
  });

  test("ping (readiness) is never retried", async () => {
    const { inner, backend } = rig();
    let pings = 0;
    inner.ping = async () => {
      pings++;
      throw unavailable(503);
    };
    await rejection(backend.ping({ signal: AbortSignal.timeout(1000) }));
    expect(pings).toBe(1);
  });

  test("retries can be turned off (MEMGATE_RETRY_MAX=0)", async () => {
    const { inner, backend } = rig({ retry: { maxRetries: 0 } });
    failFirst(inner, 1, unavailable(503));
    await rejection(backend.search(searchReq()));
    expect(inner.searchCalls).toBe(1);
  });

  test("an adapter that ignores its signal is abandoned at the deadline", async () => {
    const { inner, backend } = rig();
    inner.script = { kind: "hang" };
    const started = Date.now();
    const err = await rejection(backend.search(searchReq(80)));
    expect((err as BackendError).kind).toBe("unavailable");
    expect(Date.now() - started).toBeLessThan(1000);
  });
});
