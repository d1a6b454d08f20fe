/** Helpers of ResilientBackend: the caller's deadline, and which outcomes count against a backend. */

import { BackendError } from "../backends/types";
import type { BackendName } from "../policy/schema";

/** What left the breaker: a value, or an error that does not count against the backend. */
export type Outcome<T> = { ok: true; value: T } | { ok: false; error: unknown };

/** `AbortSignal.timeout()` aborts with a DOMException named TimeoutError (duck-typed: it may be another realm's). */
function isTimeout(reason: unknown): boolean {
  return typeof reason === "object" && reason !== null && "name" in reason && reason.name === "TimeoutError";
}

/** Errors that count against the backend are thrown (the breaker sees them); the others leave as a value. */
export async function settle<T>(signal: AbortSignal, fn: () => Promise<T>): Promise<Outcome<T>> {
  try {
    return { ok: true, value: await fn() };
  } catch (err) {
    const clientGone = signal.aborted && !isTimeout(signal.reason);
    const answered = err instanceof BackendError && err.kind !== "unavailable";
    if (clientGone || answered) return { ok: false, error: err };
    throw err;
  }
}

export function timedOut(backend: BackendName, cause: unknown): BackendError {
  return new BackendError({
    kind: "unavailable",
    backend,
    message: `${backend} did not answer in time`,
    cause,
  });
}

/** The call, or BackendError(unavailable) as soon as the signal fires (a stuck adapter is left behind). */
export function raceSignal<T>(call: Promise<T>, signal: AbortSignal, backend: BackendName): Promise<T> {
  if (signal.aborted) {
    call.catch(() => undefined);
    return Promise.reject(timedOut(backend, signal.reason));
  }
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(timedOut(backend, signal.reason));
    signal.addEventListener("abort", onAbort, { once: true });
    call.then(
      (v) => {
        signal.removeEventListener("abort", onAbort);
        resolve(v);
      },
      (e: unknown) => {
        signal.removeEventListener("abort", onAbort);
        reject(e);
      },
    );
  });
}
