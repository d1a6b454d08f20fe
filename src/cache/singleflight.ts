import type { CachedPayload, CacheLookup, PayloadCache } from "./types";

/** What `FlightLock.acquire` found: whether the lock was taken, and the entry it guards, read in the same step. */
export interface FlightAcquisition {
  /**
   * A token when this caller now holds the lock, `null` when someone else does, `undefined` when the lock store
   * cannot be reached (compute without it).
   */
  token: string | null | undefined;
  /** The cache entry under the key as it was when the lock was tried, whoever got it; undefined on a miss. */
  cached: CacheLookup | undefined;
}

/**
 * The lock as a request's admission already tried it, with its miss (src/retrieval/admission-redis.ts): `token` the
 * lock taken (the flight uses it instead of acquiring, and must release it) or `null` held by another (the flight
 * waits for that one's result at once); `generation` the user's cache generation read in the same step, when read.
 */
export interface PreAcquisition {
  token: string | null;
  generation?: number;
}

/**
 * The lock the replicas share: in Redis (src/cache/lock-redis.ts), or in process (src/cache/memory-lock.ts: without Redis,
 * and in unit tests). None of its methods throws.
 */
export interface FlightLock {
  /**
   * Takes the lock for `ttlMs` if no one holds it, reading the cache entry it guards in the same step (Redis: one
   * round trip), so an entry another replica wrote between our miss and this lock is seen.
   */
  acquire(key: string, ttlMs: number): Promise<FlightAcquisition>;
  /** Whether someone holds the lock; undefined when the store cannot be reached. */
  held(key: string): Promise<boolean | undefined>;
  /** Releases the lock only if `token` still owns it. */
  release(key: string, token: string): Promise<void>;
}

/**
 * How a request got its payload: `leader` computed it; `follower` shared an identical in-flight computation of
 * this replica; `remote` read what another replica (or a just-finished flight) put in the cache.
 */
export type FlightRole = "leader" | "follower" | "remote";

export interface FlightOutcome {
  payload: CachedPayload;
  role: FlightRole;
}

export interface FlightOptions {
  /** Longest a request waits for another replica's result before computing itself (≤ the backend timeout). */
  waitMs: number;
  /** How long the cross-replica lock lives if its holder dies (backend timeout + a margin). */
  lockMs: number;
  /** False (e.g. ttlSeconds 0: nothing is ever fresh to share): in-process dedup only, no lock. */
  shareAcrossReplicas: boolean;
}

export interface SingleFlightDeps {
  /** Where the waiters look for another replica's result (the cache the flights' `store` writes). */
  cache: PayloadCache;
  /** The cross-replica lock, guarding entries of `cache`. */
  lock: FlightLock;
  sleep?: (ms: number) => Promise<void>;
  now?: () => number;
}

const POLL_MS = [10, 20, 40, 50];

/**
 * The lock a store may release itself, in the same step as its write (Redis: one script, src/cache/redis.ts):
 * the entry's cache key and the holder's token.
 */
export interface FlightUnlock {
  key: string;
  token: string;
}

/**
 * Writes a computed payload where other replicas read it (the payload cache). Never throws. Given `unlock`, it may
 * release the lock with its write: it resolves `true` when it did (whether or not it wrote); anything else and the
 * flight releases the lock itself.
 */
export type FlightStore = (payload: CachedPayload, unlock?: FlightUnlock) => Promise<unknown>;

/**
 * A led flight: its outcome, and the work left after answering (the store, then the lock's release); none when the
 * outcome was read from the cache.
 */
interface Led {
  outcome: FlightOutcome;
  after?: Promise<void>;
  /** Whether what is being stored will be fresh (served to joiners meanwhile); false for ttlSeconds 0. */
  fresh?: boolean;
}

/** Runs the store off the answer's path; a store that throws (even synchronously) is only a failed write. */
function storeAfter(store: FlightStore, payload: CachedPayload, unlock?: FlightUnlock): Promise<unknown> {
  return Promise.resolve()
    .then(() => store(payload, unlock))
    .catch(() => undefined);
}

/** `work`, or a resolved promise after `ms` if it takes longer (an open flight never outlives its lock). */
function capped(work: Promise<void>, ms: number): Promise<void> {
  return new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, ms);
    timer.unref?.();
    void work.finally(() => {
      clearTimeout(timer);
      resolve();
    });
  });
}

/**
 * Identical concurrent requests (same cache key) cause one backend call (docs/configuration.md#several-replicas-redis): within a replica they share
 * one promise; across replicas the first takes a short lock (`FlightLock`) and the others poll the cache for its
 * result, for at most `waitMs`, then compute themselves if it did not come (a dead or slow leader costs time, never
 * an answer). The leader answers as soon as it has computed; `store` then writes the result and only after that is the
 * lock released, off the answer's path (two Redis round trips fewer in a miss's latency). Until then the flight
 * stays open in this replica: identical requests arriving meanwhile share its result instead of missing the cache
 * that is being written. A failed computation is shared by the in-process followers (each answers its own
 * fallback); on other replicas the lock is released without a value and a waiter takes over.
 */
export class SingleFlight {
  private readonly inflight = new Map<string, Promise<FlightOutcome>>();
  private readonly pending = new Set<Promise<void>>();
  private readonly sleep: (ms: number) => Promise<void>;
  private readonly now: () => number;

  constructor(private readonly deps: SingleFlightDeps) {
    this.sleep = deps.sleep ?? ((ms) => new Promise((resolve) => setTimeout(resolve, ms)));
    this.now = deps.now ?? Date.now;
  }

  /** Number of distinct flights open in this replica: computing, or answered and still storing (tests, metrics). */
  get size(): number {
    return this.inflight.size;
  }

  /**
   * Open flights whose key starts with `prefix` (one user's, src/cache/key.ts `userCacheKeys`) are no longer joined:
   * a request arriving after that user's memories changed starts its own. The flights themselves run on.
   */
  forget(prefix: string): void {
    for (const key of [...this.inflight.keys()]) if (key.startsWith(prefix)) this.inflight.delete(key);
  }

  /** Resolves once every store and lock release started so far has finished (graceful shutdown, tests). */
  async idle(): Promise<void> {
    while (this.pending.size > 0) await Promise.all([...this.pending]);
  }

  /**
   * A lock the request took but will not use (its flight never started): released. Never throws.
   */
  abandon(key: string, pre: PreAcquisition | undefined): Promise<void> {
    if (pre?.token == null) return Promise.resolve();
    return this.deps.lock.release(key, pre.token).catch(() => undefined);
  }

  /**
   * `compute` makes the payload; `store` writes it to the cache, after the answer and before the lock's release.
   * `pre`: the lock as the request's admission tried it (taken or held), used instead of the first acquire.
   */
  async run(
    key: string,
    opts: FlightOptions,
    compute: () => Promise<CachedPayload>,
    store: FlightStore,
    pre?: PreAcquisition,
  ): Promise<FlightOutcome> {
    const existing = this.inflight.get(key);
    if (existing !== undefined) {
      void this.abandon(key, pre);
      const shared = await existing;
      return { payload: shared.payload, role: shared.role === "leader" ? "follower" : shared.role };
    }
    const led = this.lead(key, opts, compute, store, pre);
    const flight = led.then((l) => l.outcome);
    let entry = flight;
    this.inflight.set(key, entry);
    const done = led
      .then(
        (l) => {
          if (l.after === undefined) return;
          if (l.fresh !== true) {
            // Nothing fresh to share (ttlSeconds 0): the flight closes with its answer.
            if (this.inflight.get(key) === entry) this.inflight.delete(key);
            return capped(l.after, opts.lockMs);
          }
          // Answered, being stored: requests joining now are served the finished result, as from the cache.
          if (this.inflight.get(key) === entry) {
            entry = Promise.resolve({ payload: l.outcome.payload, role: "remote" });
            this.inflight.set(key, entry);
          }
          return capped(l.after, opts.lockMs);
        },
        () => undefined,
      )
      .catch(() => undefined)
      .finally(() => {
        if (this.inflight.get(key) === entry) this.inflight.delete(key);
        this.pending.delete(done);
      });
    this.pending.add(done);
    return flight;
  }

  private async lead(
    key: string,
    opts: FlightOptions,
    compute: () => Promise<CachedPayload>,
    store: FlightStore,
    pre: PreAcquisition | undefined,
  ): Promise<Led> {
    const computed = async (): Promise<Led> => {
      const payload = await compute();
      return {
        outcome: { payload, role: "leader" },
        after: storeAfter(store, payload).then(() => undefined),
        fresh: opts.shareAcrossReplicas,
      };
    };
    const { lock } = this.deps;
    if (!opts.shareAcrossReplicas) {
      void this.abandon(key, pre);
      return computed();
    }
    const deadline = this.now() + opts.waitMs;
    let first = pre;
    for (;;) {
      // Another replica may have filled the entry between our miss and this lock, so the cache is read again, in
      // the same step as the lock. It is used only if we got the lock. (A lock the admission tried was tried in the
      // same step as the miss itself: nothing to read again.)
      const { token, cached: again } =
        first === undefined
          ? await lock.acquire(key, opts.lockMs)
          : { token: first.token, cached: undefined };
      first = undefined;
      if (token === undefined) return computed();
      if (token !== null) {
        let handedOver = false;
        try {
          if (again?.fresh) return { outcome: { payload: again.payload, role: "remote" } };
          const payload = await compute();
          // Released once the result is stored (by the store's own write when it can: one round trip): a waiter
          // on another replica that sees the lock gone finds it.
          const after = storeAfter(store, payload, { key, token }).then((released) =>
            released === true ? undefined : lock.release(key, token),
          );
          handedOver = true;
          return { outcome: { payload, role: "leader" }, after, fresh: true };
        } finally {
          if (!handedOver) await lock.release(key, token);
        }
      }
      const waited = await this.waitForOther(key, deadline);
      if (waited.kind === "value") return { outcome: { payload: waited.payload, role: "remote" } };
      // Timed out, or the holder let go without a value (its call failed), or the lock store went away: compute.
      if (waited.kind === "timeout" || waited.kind === "unknown" || this.now() >= deadline) return computed();
    }
  }

  private async waitForOther(
    key: string,
    deadline: number,
  ): Promise<{ kind: "value"; payload: CachedPayload } | { kind: "released" | "timeout" | "unknown" }> {
    const { cache, lock } = this.deps;
    for (let i = 0; ; i++) {
      const left = deadline - this.now();
      if (left <= 0) return { kind: "timeout" };
      await this.sleep(Math.min(POLL_MS[Math.min(i, POLL_MS.length - 1)] ?? 50, left));
      const hit = await cache.get(key);
      if (hit?.fresh) return { kind: "value", payload: hit.payload };
      const held = await lock.held(key);
      if (held === undefined) return { kind: "unknown" };
      if (!held) {
        // The holder may have written just before letting go.
        const last = await cache.get(key);
        return last?.fresh ? { kind: "value", payload: last.payload } : { kind: "released" };
      }
    }
  }
}

/**
 * Flight options from a policy: waiters give another replica at most the backend timeout; the lock outlives a
 * stuck holder by a second; a policy whose entries are never fresh (ttlSeconds 0) has nothing to share.
 */
export function flightOptionsFor(policy: {
  timeouts: { backendMs: number };
  cache: { ttlSeconds: number };
}): FlightOptions {
  return {
    waitMs: policy.timeouts.backendMs,
    lockMs: policy.timeouts.backendMs + 1000,
    shareAcrossReplicas: policy.cache.ttlSeconds > 0,
  };
}
