/**
 * Per-backend resilience as a decorator (cockatiel): one `ResilientBackend` per tenant and backend, so one
 * tenant's failing or saturated backend never trips another tenant's. Every failure still leaves as a
 * `BackendError`, so the retrieval service maps it to its declared fallback (`unavailable` → `*_UNAVAILABLE`).
 *
 * Per call, outermost first:
 * 1. **bulkhead** — at most `limit` concurrent calls (+ `queue` waiting within their deadline); beyond that the
 *    call is refused at once: `unavailable`, "<backend> bulkhead full". Not counted by the breaker.
 * 2. **circuit breaker** — opens on `consecutive` failures in a row or a failure ratio over the last `window`
 *    calls (src/resilience/breaker.ts). While open (and while its one half-open probe is in flight) every call
 *    is refused at once: `unavailable`, "<backend> circuit open". After `halfOpenAfterMs` the next call is the
 *    probe (/readyz does not call backends: it reads `circuit()`, and reports an open circuit as degraded, so a
 *    replica stays in rotation and its traffic brings the probe).
 *    A failure is an `unavailable` error or anything that is not a BackendError (an adapter bug). `not_found`,
 *    `invalid_query` and `rate_limited` prove the backend answered: they count as successes. A call abandoned
 *    because the client went away (not a timeout) is not held against the backend.
 *    Existence checks are counted by their failures only (a lookup that works proves nothing about search).
 * 3. **retry** (reads only: `search`, `searchNative`, `userExists`; never `ping`) — `maxRetries` more attempts with exponential
 *    backoff and decorrelated jitter, only for `unavailable` errors without a 4xx status, only while the
 *    caller's signal has not fired, and only when the remaining budget (the policy's `timeouts.backendMs` for
 *    search, `defaultBudgetMs` for userExists, counted from the start of this call) still holds the last
 *    attempt's duration plus the longest backoff. The budget is an estimate; the signal remains the deadline.
 * 4. **timeout** — every attempt races the caller's AbortSignal (the policy's `timeouts.backendMs`): an adapter
 *    that ignores its signal cannot hold a bulkhead slot past the deadline.
 */
import { performance } from "node:perf_hooks";
import {
  BrokenCircuitError,
  type BulkheadPolicy,
  BulkheadRejectedError,
  bulkhead,
  type CircuitBreakerPolicy,
  CircuitState,
  circuitBreaker,
  ExponentialBackoff,
  handleAll,
  handleWhen,
  IsolatedCircuitError,
  retry,
  TaskCancelledError,
} from "cockatiel";
import {
  type Backend,
  BackendError,
  type CallOptions,
  type NativeAnswer,
  type NativeSearchRequest,
  type SearchRequest,
} from "../backends/types";
import type { Logger } from "../logging/logger";
import type { Candidate } from "../pipeline/types";
import type { BackendName } from "../policy/schema";
import { EitherBreaker } from "./breaker";
import { type Outcome, raceSignal, settle, timedOut } from "./deadline";
import type { ResilienceOptions } from "./options";

export type CircuitStatus = "closed" | "open" | "half_open";

export interface ResilienceContext {
  /** The tenant whose instance this is (undefined only for an instance built outside the provider, e.g. tests). */
  tenantId?: string;
  logger: Logger;
}

const BULKHEAD_LOG_EVERY_MS = 10_000;

export class ResilientBackend implements Backend {
  readonly name: BackendName;
  private readonly breaker: CircuitBreakerPolicy;
  private readonly bulkhead: BulkheadPolicy;
  private readonly rejections = { count: 0, loggedAt: Number.NEGATIVE_INFINITY };
  /** Progressive disclosure's reads (present when the inner backend has them): the same bulkhead, breaker, retry. */
  readonly getMemories?: Backend["getMemories"];
  readonly neighbours?: Backend["neighbours"];

  constructor(
    private readonly inner: Backend,
    private readonly opts: ResilienceOptions,
    private readonly ctx: ResilienceContext,
  ) {
    this.name = inner.name;
    this.breaker = circuitBreaker(handleAll, {
      halfOpenAfter: opts.breaker.halfOpenAfterMs,
      breaker: new EitherBreaker(opts.breaker),
    });
    this.bulkhead = bulkhead(opts.bulkhead.limit, opts.bulkhead.queue);
    this.breaker.onStateChange((state) => this.logState(state));
    const budgetMs = opts.retry.defaultBudgetMs;
    const { getMemories, neighbours } = inner;
    if (getMemories !== undefined) {
      this.getMemories = (req) =>
        this.call(req.signal, budgetMs, (signal) => getMemories.call(inner, { ...req, signal }));
    }
    if (neighbours !== undefined) {
      this.neighbours = (req) =>
        this.call(req.signal, budgetMs, (signal) => neighbours.call(inner, { ...req, signal }));
    }
  }

  /**
   * The circuit's state, for /readyz, the `backend.circuit_state` gauge and tests. Reading it calls nothing: an
   * open circuit reads "open" until a call arrives after `halfOpenAfterMs` and becomes the half-open probe.
   */
  circuit(): CircuitStatus {
    switch (this.breaker.state) {
      case CircuitState.Closed:
        return "closed";
      case CircuitState.HalfOpen:
        return "half_open";
      default:
        return "open";
    }
  }

  search(req: SearchRequest): Promise<Candidate[]> {
    return this.call(req.signal, req.policy.timeouts.backendMs, (signal) =>
      this.inner.search({ ...req, signal }),
    );
  }

  /** A door's search: the same bulkhead, breaker, retry and deadline as `search` (one circuit per instance). */
  searchNative(req: NativeSearchRequest): Promise<NativeAnswer> {
    const inner = this.inner;
    if (inner.searchNative === undefined) return Promise.reject(this.noNative(req));
    return this.call(req.signal, req.policy.timeouts.backendMs, (signal) =>
      inner.searchNative ? inner.searchNative({ ...req, signal }) : Promise.reject(this.noNative(req)),
    );
  }

  private noNative(req: NativeSearchRequest): BackendError {
    return new BackendError({
      kind: "invalid_query",
      backend: this.name,
      message: `${this.name} cannot answer a ${req.native.kind} search`,
    });
  }

  /**
   * The existence check. Its failures count against the backend like a search's, but its successes are not
   * counted while the circuit is closed: a cheap lookup that works says nothing about search, and counting it let
   * a lookup for each new user reset the breaker between failing searches, which then never opened (issue 26
   * finding 9). While the circuit is open it goes through the breaker like any call (refused, or the probe).
   */
  async userExists(userId: string, opts: CallOptions): Promise<boolean> {
    const budgetMs = this.opts.retry.defaultBudgetMs;
    const lookup = (signal: AbortSignal) => this.inner.userExists(userId, { signal });
    if (this.breaker.state !== CircuitState.Closed) return this.call(opts.signal, budgetMs, lookup);
    const { signal } = opts;
    if (signal.aborted) throw timedOut(this.name, signal.reason);
    let outcome: Outcome<boolean>;
    try {
      outcome = await this.bulkhead.execute(
        () =>
          settle(signal, () => this.withRetry(signal, budgetMs, lookup)).catch((err: unknown) =>
            this.countFailure(err),
          ),
        signal,
      );
    } catch (err) {
      throw this.translate(err);
    }
    if (outcome.ok) return outcome.value;
    throw outcome.error;
  }

  /** Records a failure that happened outside the breaker (a lookup's), then throws it as it was. */
  private async countFailure(err: unknown): Promise<never> {
    await this.breaker.execute(() => Promise.reject(err)).catch(() => undefined);
    throw err;
  }

  /**
   * A reachability check (not used by /readyz, which reads `circuit()`): while closed, a plain ping (not counted
   * by the breaker: a cheap /health says little about search). While open, the breaker decides: refused until
   * `halfOpenAfterMs`, then this ping is the probe.
   */
  async ping(opts: CallOptions): Promise<void> {
    const { signal } = opts;
    const state = this.breaker.state;
    if (state === CircuitState.Closed) return raceSignal(this.inner.ping(opts), signal, this.name);
    if (state !== CircuitState.Open) throw this.circuitOpen();
    let outcome: Outcome<void>;
    try {
      outcome = await this.breaker.execute(() =>
        settle(signal, () => raceSignal(this.inner.ping(opts), signal, this.name)),
      );
    } catch (err) {
      throw this.translate(err);
    }
    if (!outcome.ok) throw outcome.error;
  }

  async close(): Promise<void> {
    await this.inner.close?.();
  }

  private async call<T>(
    signal: AbortSignal,
    budgetMs: number,
    attempt: (signal: AbortSignal) => Promise<T>,
  ): Promise<T> {
    if (signal.aborted) throw timedOut(this.name, signal.reason);
    // cockatiel queues calls behind a half-open probe; we refuse them at once instead (the circuit is still open).
    if (this.breaker.state === CircuitState.HalfOpen) throw this.circuitOpen();
    let outcome: Outcome<T>;
    try {
      outcome = await this.bulkhead.execute(
        () => this.breaker.execute(() => settle(signal, () => this.withRetry(signal, budgetMs, attempt))),
        signal,
      );
    } catch (err) {
      throw this.translate(err);
    }
    if (outcome.ok) return outcome.value;
    throw outcome.error;
  }

  private withRetry<T>(
    signal: AbortSignal,
    budgetMs: number,
    attempt: (signal: AbortSignal) => Promise<T>,
  ): Promise<T> {
    const once = () => raceSignal(attempt(signal), signal, this.name);
    const { maxRetries, initialDelayMs, maxDelayMs } = this.opts.retry;
    if (maxRetries <= 0) return once();
    const started = performance.now();
    let lastMs = 0;
    const worthRetrying = (err: Error): boolean => {
      if (!(err instanceof BackendError) || !err.retryable || err.kind !== "unavailable") return false;
      if (err.status !== undefined && err.status < 500) return false; // 401/403/404-route: misconfiguration
      if (signal.aborted) return false;
      const remaining = budgetMs - (performance.now() - started);
      return remaining >= lastMs + maxDelayMs;
    };
    const policy = retry(handleWhen(worthRetrying), {
      maxAttempts: maxRetries,
      backoff: new ExponentialBackoff({ initialDelay: initialDelayMs, maxDelay: maxDelayMs }),
    });
    return policy.execute(async () => {
      const t0 = performance.now();
      try {
        return await once();
      } finally {
        lastMs = performance.now() - t0;
      }
    }, signal);
  }

  /**
   * cockatiel's own errors → BackendError(unavailable); BackendErrors and adapter bugs pass unchanged.
   * (`instanceof`, not cockatiel's `is…Error` guards: in 3.2.1 two of them test the bulkhead's marker.)
   */
  private translate(err: unknown): unknown {
    if (err instanceof BackendError) return err;
    if (err instanceof BrokenCircuitError || err instanceof IsolatedCircuitError) return this.circuitOpen();
    if (err instanceof BulkheadRejectedError) {
      this.noteRejection();
      return new BackendError({
        kind: "unavailable",
        backend: this.name,
        message: `${this.name} bulkhead full`,
        cause: err,
      });
    }
    if (err instanceof TaskCancelledError) return timedOut(this.name, err);
    return err;
  }

  private circuitOpen(): BackendError {
    return new BackendError({
      kind: "unavailable",
      backend: this.name,
      message: `${this.name} circuit open`,
    });
  }

  private logState(state: CircuitState): void {
    const where = { backend: this.name, tenant: this.ctx.tenantId ?? "shared" };
    if (state === CircuitState.Open) {
      const last = this.breaker.lastFailure;
      const err = last !== undefined && "error" in last ? last.error : undefined;
      const kind = err instanceof BackendError ? err.kind : "error";
      const status = err instanceof BackendError ? err.status : undefined;
      this.ctx.logger.warn(
        { ...where, circuit: "open", kind, status, retryInMs: this.opts.breaker.halfOpenAfterMs },
        "backend circuit opened",
      );
    } else if (state === CircuitState.HalfOpen) {
      this.ctx.logger.info({ ...where, circuit: "half_open" }, "backend circuit half-open: probing");
    } else if (state === CircuitState.Closed) {
      this.ctx.logger.info({ ...where, circuit: "closed" }, "backend circuit closed");
    }
  }

  /** Bulkhead rejections are logged at most once per 10 s, with how many there were. */
  private noteRejection(): void {
    this.rejections.count++;
    const now = performance.now();
    if (now - this.rejections.loggedAt < BULKHEAD_LOG_EVERY_MS) return;
    this.ctx.logger.warn(
      {
        backend: this.name,
        tenant: this.ctx.tenantId ?? "shared",
        rejected: this.rejections.count,
        limit: this.opts.bulkhead.limit,
        queue: this.opts.bulkhead.queue,
      },
      "backend bulkhead full: calls refused",
    );
    this.rejections.count = 0;
    this.rejections.loggedAt = now;
  }
}
