/**
 * What every log line written while handling a request carries, whoever writes it (route, retrieval service,
 * adapter, registry): the request id, and the active span's `trace_id`/`span_id` so a log line leads to its
 * trace. The one pino logger gets these through its `mixin` (src/logging/logger.ts); nothing is passed around.
 *
 * One AsyncLocalStorage per process carries a request (issue 29): the request id is a value of the OpenTelemetry
 * context, which the context manager below (@opentelemetry/context-async-hooks') keeps in its AsyncLocalStorage.
 * `memgate serve` gives that manager to the SDK (./sdk.ts); where no SDK registered one (OTEL_SDK_DISABLED=true,
 * tests, tools) `ensureRequestContext` registers it, so the request id still reaches every log line. Before, the
 * request id had a storage of its own beside the SDK's: two stores propagated through every asynchronous step.
 */
import { context, createContextKey, isSpanContextValid, ROOT_CONTEXT, trace } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";

/** The process's one context manager (./sdk.ts hands it to the SDK). */
export const contextManager = new AsyncLocalStorageContextManager();

const REQUEST_ID = createContextKey("memgate.request_id");
const PROBE = createContextKey("memgate.context_probe");

/** Whether a context manager is registered (the API's default one keeps nothing: `active()` is always the root). */
function contextKept(): boolean {
  return context.with(ROOT_CONTEXT.setValue(PROBE, true), () => context.active().getValue(PROBE) === true);
}

/**
 * Registers memgate's manager when no SDK registered one (called when an app is built, after the SDK started in
 * `memgate serve`): the request id then still reaches every log line.
 */
export function ensureRequestContext(): void {
  if (!contextKept()) context.setGlobalContextManager(contextManager.enable());
}

/** Runs `fn` (and everything it starts) as part of request `requestId`: a value of the active context. */
export function runWithRequestId<T>(requestId: string, fn: () => T): T {
  return context.with(context.active().setValue(REQUEST_ID, requestId), fn);
}

/** pino `mixin`: requestId, trace_id, span_id, trace_flags of the current request and span, when there are any. */
export function logCorrelation(): Record<string, string> {
  const fields: Record<string, string> = {};
  const active = context.active();
  const requestId = active.getValue(REQUEST_ID);
  if (typeof requestId === "string") fields.requestId = requestId;
  const span = trace.getSpan(active);
  if (span !== undefined) {
    const sc = span.spanContext();
    if (isSpanContextValid(sc)) {
      fields.trace_id = sc.traceId;
      fields.span_id = sc.spanId;
      fields.trace_flags = `0${(sc.traceFlags & 0xff).toString(16)}`.slice(-2);
    }
  }
  return fields;
}
