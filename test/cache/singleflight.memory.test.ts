import { MemoryPayloadCache } from "../../src/cache/memory";
import { MemoryFlightLock } from "../../src/cache/memory-lock";
import {
  type FlightAcquisition,
  type FlightLock,
  type FlightOptions,
  flightOptionsFor,
  SingleFlight,
} from "../../src/cache/singleflight";
import type { CachedPayload } from "../../src/cache/types";

// SingleFlight's cross-replica logic without Redis: two SingleFlight instances sharing one MemoryFlightLock and one
// in-process cache stand for two replicas sharing Redis. Time is a fake clock: a waiter's poll sleeps until the test
// advances it, so every step is deterministic. (test/redis/singleflight.lock.test.ts runs the Redis lock itself.)

const OPTS: FlightOptions = { waitMs: 300, lockMs: 2000, shareAcrossReplicas: true };

function payload(tag: string): CachedPayload {
  return {
    memories: [],
    metadata: {
      queryTime: 0,
      totalResults: 0,
      includedResults: 0,
      totalTokens: 0,
      appliedFilters: [tag],
      config: { topK: 8, clipSentences: 2, maxTokens: 1500, searchType: "hybrid", minScore: 0.3 },
      policy: { name: "p", version: 1, hash: "h" },
      backend: "zep",
      cache: "miss",
      fallback: null,
    },
    systemPrompt: "",
  };
}

/** Lets every promise reaction queued so far run (the memory cache and lock never wait on I/O). */
const flush = () => new Promise<void>((resolve) => setImmediate(resolve));

function deferred<T = void>() {
  let resolve: (value: T) => void = () => undefined;
  let reject: (err: Error) => void = () => undefined;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

/** A clock whose sleeps end only when the test advances it. */
class FakeClock {
  t = 1_000_000;
  /** Every sleep asked for, in order (the waiters' poll intervals). */
  readonly slept: number[] = [];
  private sleepers: Array<{ until: number; wake: () => void }> = [];

  readonly now = (): number => this.t;

  readonly sleep = (ms: number): Promise<void> => {
    this.slept.push(ms);
    return new Promise((wake) => this.sleepers.push({ until: this.t + ms, wake }));
  };

  /** Resolves once someone is sleeping: a waiter is polling. */
  async sleeping(): Promise<void> {
    for (let i = 0; i < 100; i++) {
      if (this.sleepers.length > 0) return;
      await flush();
    }
    throw new Error("no one is waiting");
  }

  /** Moves time on by `ms`, waking each sleeper at its time and letting it act before the next wakes. */
  async advance(ms: number): Promise<void> {
    const end = this.t + ms;
    for (;;) {
      await flush();
      const next = this.sleepers.filter((s) => s.until <= end).sort((x, y) => x.until - y.until)[0];
      if (next === undefined) break;
      this.sleepers = this.sleepers.filter((s) => s !== next);
      this.t = next.until;
      next.wake();
    }
    this.t = end;
    await flush();
  }
}

/** Two replicas: one lock, one cache, one clock. */
function twoReplicas(lockOf: (lock: MemoryFlightLock) => FlightLock = (lock) => lock) {
  const clock = new FakeClock();
  const cache = new MemoryPayloadCache(100, clock.now);
  const memoryLock = new MemoryFlightLock(cache, clock.now);
  const lock = lockOf(memoryLock);
  const replica = () => new SingleFlight({ cache, lock, sleep: clock.sleep, now: clock.now });
  /** The store a retrieval passes: the result into the cache, fresh for a minute. */
  const storeIn =
    (key: string) =>
    (p: CachedPayload): Promise<boolean> =>
      cache.set(key, p, 60, 0);
  return { clock, cache, lock: memoryLock, a: replica(), b: replica(), storeIn };
}

/** A compute that counts its calls and finishes when the test says so. */
function gatedCompute(tag: string) {
  const gate = deferred<void>();
  let calls = 0;
  return {
    gate,
    get calls() {
      return calls;
    },
    run: async () => {
      calls++;
      await gate.promise;
      return payload(tag);
    },
  };
}

function counted(tag: string) {
  let calls = 0;
  return {
    get calls() {
      return calls;
    },
    run: async () => {
      calls++;
      return payload(tag);
    },
  };
}

describe("MemoryFlightLock", () => {
  test("one holder at a time; only the owner's token releases it", async () => {
    const { lock } = twoReplicas();
    const first = await lock.acquire("k", 5000);
    expect(typeof first.token).toBe("string");
    expect((await lock.acquire("k", 5000)).token).toBeNull();
    expect((await lock.acquire("other", 5000)).token).toEqual(expect.any(String));
    await lock.release("k", "someone-else");
    expect(await lock.held("k")).toBe(true);
    await lock.release("k", first.token ?? "");
    expect(await lock.held("k")).toBe(false);
    const again = await lock.acquire("k", 5000);
    expect(again.token).toEqual(expect.any(String));
    expect(again.token).not.toBe(first.token);
  });

  test("acquire reads the entry it guards in the same step, whoever gets the lock", async () => {
    const { lock, cache, clock } = twoReplicas();
    const none = await lock.acquire("k", 5000);
    expect(none.cached).toBeUndefined();
    await cache.set("k", payload("written by another replica"), 60, 60);
    const held = await lock.acquire("k", 5000);
    expect(held.token).toBeNull();
    expect(held.cached).toMatchObject({ fresh: true, payload: payload("written by another replica") });
    await clock.advance(61_000);
    // Past ttlSeconds, kept for staleSeconds: read, but not fresh (and the lock has expired meanwhile).
    const stale = await lock.acquire("k", 5000);
    expect(stale.token).toEqual(expect.any(String));
    expect(stale.cached?.fresh).toBe(false);
  });

  test("the lock expires after ttlMs on its clock; the old holder's late release leaves the new holder's lock", async () => {
    const { lock, clock } = twoReplicas();
    const dead = await lock.acquire("k", 100);
    await clock.advance(99);
    expect(await lock.held("k")).toBe(true);
    await clock.advance(1);
    expect(await lock.held("k")).toBe(false);
    const next = await lock.acquire("k", 100);
    expect(next.token).toEqual(expect.any(String));
    await lock.release("k", dead.token ?? "");
    expect(await lock.held("k")).toBe(true);
  });
});

describe("SingleFlight across two replicas (in-process lock and cache)", () => {
  test("leader, follower, remote: one computation; the other replica polls until the result is stored", async () => {
    const { a, b, lock, clock, storeIn } = twoReplicas();
    const computeA = gatedCompute("a");
    const computeB = counted("b");
    const leader = a.run("k", OPTS, computeA.run, storeIn("k"));
    const follower = a.run("k", OPTS, computeA.run, storeIn("k"));
    await flush();
    expect(await lock.held("k")).toBe(true);
    const remote = b.run("k", OPTS, computeB.run, storeIn("k"));
    await clock.sleeping();
    await clock.advance(100);
    expect(clock.slept.slice(0, 4)).toEqual([10, 20, 40, 50]);
    expect(computeB.calls).toBe(0);

    computeA.gate.resolve();
    expect(await leader).toEqual({ payload: payload("a"), role: "leader" });
    expect(await follower).toEqual({ payload: payload("a"), role: "follower" });
    await a.idle();
    expect(await lock.held("k")).toBe(false);
    await clock.advance(50);
    expect(await remote).toEqual({ payload: payload("a"), role: "remote" });
    expect(computeA.calls).toBe(1);
    expect(computeB.calls).toBe(0);
    expect(a.size + b.size).toBe(0);
  });

  test("an entry the other replica wrote between the miss and the lock is served from the lock's re-read", async () => {
    const { a, cache, clock, lock, storeIn } = twoReplicas();
    const compute = counted("a");
    await cache.set("k", payload("b"), 60, 60);
    expect(await a.run("k", OPTS, compute.run, storeIn("k"))).toEqual({
      payload: payload("b"),
      role: "remote",
    });
    expect(compute.calls).toBe(0);
    expect(await lock.held("k")).toBe(false);
    // A stale entry is not a result: computed.
    await clock.advance(61_000);
    expect((await a.run("k", OPTS, compute.run, storeIn("k"))).role).toBe("leader");
    expect(compute.calls).toBe(1);
  });

  test("the holder lets go without a value (its computation failed): a waiter takes over at once", async () => {
    const { a, b, clock, lock, storeIn } = twoReplicas();
    const computeA = gatedCompute("a");
    const computeB = gatedCompute("b");
    const failing = a.run("k", OPTS, computeA.run, storeIn("k"));
    const failingFollower = a.run("k", OPTS, computeA.run, storeIn("k"));
    await flush();
    const waiter = b.run("k", OPTS, computeB.run, storeIn("k"));
    await clock.sleeping();
    const started = clock.now();
    computeA.gate.reject(new Error("backend down"));
    await expect(failing).rejects.toThrow("backend down");
    await expect(failingFollower).rejects.toThrow("backend down");
    expect(await lock.held("k")).toBe(false);
    await clock.advance(10);
    // The waiter saw the lock gone with nothing stored, took the lock itself and computes under it.
    expect(computeB.calls).toBe(1);
    expect(await lock.held("k")).toBe(true);
    computeB.gate.resolve();
    expect(await waiter).toEqual({ payload: payload("b"), role: "leader" });
    expect(clock.now() - started).toBeLessThan(OPTS.waitMs);
    await b.idle();
    expect(await lock.held("k")).toBe(false);
    expect(computeA.calls).toBe(1);
  });

  test("a holder that never delivers: the waiter computes itself at waitMs, without the lock", async () => {
    const { b, cache, clock, lock, storeIn } = twoReplicas();
    await lock.acquire("k", 10_000); // another replica's, stuck
    const compute = counted("b");
    const started = clock.now();
    const waiter = b.run("k", OPTS, compute.run, storeIn("k"));
    await clock.sleeping();
    await clock.advance(OPTS.waitMs - 1);
    expect(compute.calls).toBe(0);
    await clock.advance(1);
    expect(await waiter).toEqual({ payload: payload("b"), role: "leader" });
    expect(clock.now() - started).toBe(OPTS.waitMs);
    await b.idle();
    expect((await cache.get("k"))?.payload).toEqual(payload("b"));
    expect(await lock.held("k")).toBe(true); // still the stuck holder's, until it expires
  });

  test("a holder that dies: its lock expires after lockMs and a waiter takes it over", async () => {
    const { b, clock, lock, storeIn } = twoReplicas();
    const opts = { waitMs: 5000, lockMs: 1000, shareAcrossReplicas: true };
    await lock.acquire("k", opts.lockMs); // its replica then died: never released
    const compute = gatedCompute("b");
    const started = clock.now();
    const waiter = b.run("k", opts, compute.run, storeIn("k"));
    await clock.sleeping();
    await clock.advance(opts.lockMs - 1);
    expect(compute.calls).toBe(0);
    await clock.advance(50);
    expect(compute.calls).toBe(1);
    expect(await lock.held("k")).toBe(true); // the waiter's own lock now
    compute.gate.resolve();
    expect(await waiter).toEqual({ payload: payload("b"), role: "leader" });
    expect(clock.now() - started).toBeLessThan(opts.waitMs);
    await b.idle();
    expect(await lock.held("k")).toBe(false);
  });

  test("the leader answers before its store; the lock is released only after it; joiners meanwhile get the result", async () => {
    const { a, b, cache, clock, lock } = twoReplicas();
    const storeGate = deferred<void>();
    const store = async (p: CachedPayload) => {
      await storeGate.promise;
      await cache.set("k", p, 60, 0);
    };
    const compute = counted("a");
    expect(await a.run("k", OPTS, compute.run, store)).toEqual({ payload: payload("a"), role: "leader" });
    // Answered, still storing: the lock is held and the cache is empty…
    expect(await lock.held("k")).toBe(true);
    expect(await cache.get("k")).toBeUndefined();
    expect(a.size).toBe(1);
    // …an identical request on this replica is served the finished result…
    expect(await a.run("k", OPTS, compute.run, store)).toEqual({ payload: payload("a"), role: "remote" });
    // …and one on the other replica waits for the store.
    const other = counted("b");
    const waiter = b.run("k", OPTS, other.run, store);
    await clock.sleeping();
    await clock.advance(30);
    storeGate.resolve();
    await a.idle();
    expect(await lock.held("k")).toBe(false);
    expect(a.size).toBe(0);
    await clock.advance(40);
    expect(await waiter).toEqual({ payload: payload("a"), role: "remote" });
    expect(compute.calls).toBe(1);
    expect(other.calls).toBe(0);
  });

  test("a store that throws, even synchronously, is only a failed write: the lock is released", async () => {
    const { a, lock } = twoReplicas();
    const outcome = await a.run(
      "k",
      OPTS,
      async () => payload("a"),
      () => {
        throw new Error("cache refused");
      },
    );
    expect(outcome.role).toBe("leader");
    await a.idle();
    expect(await lock.held("k")).toBe(false);
    expect(a.size).toBe(0);
  });

  test("ttlSeconds 0 (nothing fresh to share): no lock, each replica computes, and so does a request during a store", async () => {
    const { a, b, lock, storeIn } = twoReplicas();
    const opts = flightOptionsFor({ timeouts: { backendMs: 300 }, cache: { ttlSeconds: 0 } });
    expect(opts).toEqual({ waitMs: 300, lockMs: 1300, shareAcrossReplicas: false });
    const computeA = gatedCompute("a");
    const computeB = gatedCompute("b");
    const onA = a.run("k", opts, computeA.run, storeIn("k"));
    const onB = b.run("k", opts, computeB.run, storeIn("k"));
    await flush();
    expect(await lock.held("k")).toBe(false);
    expect(computeA.calls + computeB.calls).toBe(2);
    computeA.gate.resolve();
    computeB.gate.resolve();
    expect((await onA).role).toBe("leader");
    expect((await onB).role).toBe("leader");

    const storeGate = deferred<void>();
    const compute = counted("a");
    expect((await a.run("j", opts, compute.run, () => storeGate.promise)).role).toBe("leader");
    expect((await a.run("j", opts, compute.run, async () => undefined)).role).toBe("leader");
    expect(compute.calls).toBe(2);
    storeGate.resolve();
    await a.idle();
    expect(a.size + b.size).toBe(0);
  });

  test("a lock store that cannot be reached: compute without it, and a waiter that loses it computes at once", async () => {
    let down = false;
    const { a, b, clock, storeIn } = twoReplicas((inner) => ({
      acquire: async (key: string, ttlMs: number): Promise<FlightAcquisition> =>
        down ? { token: undefined, cached: undefined } : inner.acquire(key, ttlMs),
      held: async (key: string) => (down ? undefined : inner.held(key)),
      release: async (key: string, token: string) => (down ? undefined : inner.release(key, token)),
    }));
    const computeA = gatedCompute("a");
    const leader = a.run("k", OPTS, computeA.run, storeIn("k"));
    await flush();
    const computeB = counted("b");
    const waiter = b.run("k", OPTS, computeB.run, storeIn("k"));
    await clock.sleeping();
    down = true;
    await clock.advance(10);
    expect(await waiter).toEqual({ payload: payload("b"), role: "leader" });
    const computeC = counted("c");
    expect(await b.run("j", OPTS, computeC.run, storeIn("j"))).toEqual({
      payload: payload("c"),
      role: "leader",
    });
    computeA.gate.resolve();
    expect((await leader).role).toBe("leader");
    await a.idle();
    await b.idle();
  });
});

describe("SingleFlight with the lock its admission already tried (issue 29)", () => {
  /** Counts the lock's calls, to see which steps a pre-acquisition saves. */
  function countingLock(inner: MemoryFlightLock) {
    const calls = { acquire: 0, release: 0 };
    const lock: FlightLock = {
      acquire: (k, ms) => {
        calls.acquire++;
        return inner.acquire(k, ms);
      },
      held: (k) => inner.held(k),
      release: (k, t) => {
        calls.release++;
        return inner.release(k, t);
      },
    };
    return { lock, calls };
  }

  test("a taken lock is used without acquiring again, and released once the result is stored", async () => {
    let counts: ReturnType<typeof countingLock>["calls"] | undefined;
    const { a, lock, storeIn, cache } = twoReplicas((inner) => {
      const c = countingLock(inner);
      counts = c.calls;
      return c.lock;
    });
    const taken = await lock.acquire("k", OPTS.lockMs);
    const compute = counted("mine");
    const out = await a.run("k", OPTS, compute.run, storeIn("k"), { token: taken.token ?? null });
    await a.idle();
    expect(out.role).toBe("leader");
    expect(compute.calls).toBe(1);
    expect(counts).toEqual({ acquire: 0, release: 1 });
    expect(await lock.held("k")).toBe(false);
    expect((await cache.get("k"))?.fresh).toBe(true);
  });

  test("a lock held by another: the flight waits for that one's result at once, without trying it again", async () => {
    let counts: ReturnType<typeof countingLock>["calls"] | undefined;
    const { a, b, clock, lock, storeIn } = twoReplicas((inner) => {
      const c = countingLock(inner);
      counts = c.calls;
      return c.lock;
    });
    const leader = gatedCompute("leader");
    const led = a.run("k", OPTS, leader.run, storeIn("k"));
    await flush();
    expect(await lock.held("k")).toBe(true);
    const acquiredBefore = counts?.acquire;
    const waiter = counted("waiter");
    const waited = b.run("k", OPTS, waiter.run, storeIn("k"), { token: null });
    await clock.sleeping();
    expect(counts?.acquire).toBe(acquiredBefore);
    leader.gate.resolve();
    await led;
    await clock.advance(50);
    const out = await waited;
    expect(out.role).toBe("remote");
    expect(waiter.calls).toBe(0);
  });

  test("a taken lock the request does not fly with is released (abandon; an in-process flight joined instead)", async () => {
    const { a, lock, storeIn } = twoReplicas();
    const leader = gatedCompute("leader");
    // An open in-process flight holding no lock (as after its lock expired), then a request whose admission took it.
    const led = a.run("k", { ...OPTS, shareAcrossReplicas: false }, leader.run, storeIn("k"));
    await flush();
    const taken0 = await lock.acquire("k", OPTS.lockMs);
    const joined = a.run("k", OPTS, counted("never").run, storeIn("k"), { token: taken0.token ?? null });
    await flush();
    expect(await lock.held("k")).toBe(false);
    leader.gate.resolve();
    expect((await joined).role).toBe("follower");
    await led;
    const taken = await lock.acquire("k3", OPTS.lockMs);
    await a.abandon("k3", { token: taken.token ?? null });
    expect(await lock.held("k3")).toBe(false);
    await a.abandon("k3", { token: null });
    await a.abandon("k3", undefined);
  });
});
