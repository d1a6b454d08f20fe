/**
 * What every log line written while handling a request carries, whoever writes it (route, retrieval service,
 * adapter, registry): the request id, and the active span's `trace_id`/`span_id` so a log line leads to its
 * trace. The one pino logger gets these through its `mixin` (src/logging/logger.ts); nothing is passed around.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import { context, isSpanContextValid, trace } from "@opentelemetry/api";

const requests = new AsyncLocalStorage<{ requestId: string }>();

/** Runs `fn` (and everything it starts) as part of request `requestId`. */
export function runWithRequestId<T>(requestId: string, fn: () => T): T {
  return requests.run({ requestId }, fn);
}

/** pino `mixin`: requestId, trace_id, span_id, trace_flags of the current request and span, when there are any. */
export function logCorrelation(): Record<string, string> {
  const fields: Record<string, string> = {};
  const requestId = requests.getStore()?.requestId;
  if (requestId !== undefined) fields.requestId = requestId;
  const span = trace.getSpan(context.active());
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
