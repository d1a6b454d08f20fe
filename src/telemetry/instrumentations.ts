/**
 * Library instrumentations of memgate's outgoing calls: ioredis (cache and rate limits). The HTTP server span of each
 * incoming request is memgate's own (./http-server.ts), and so is the CLIENT span of each upstream call
 * (./http-client.ts, made in src/backends/upstream.ts `callUpstream`, through which every Zep and OpenMemory call
 * goes — the Zep SDK's too, through its `fetcher` — carrying `traceparent`/`baggage` out). The OpenTelemetry undici
 * instrumentation is not installed (issue 29: its diagnostics-channel hooks cost 11–19 % of the Zep adapter's CPU):
 * a global `fetch` or `undici` call made outside `callUpstream` is not traced and carries no `traceparent`.
 *
 * Privacy (docs/api.md#privacy): Redis statements are the command name only (values are cached payloads, i.e.
 * memory contents); no header is captured.
 */
import { IORedisInstrumentation } from "@opentelemetry/instrumentation-ioredis";
import type { NodeSDKConfiguration } from "@opentelemetry/sdk-node";
import { runtimeInstrumentation } from "./runtime";

export type Instrumentations = NodeSDKConfiguration["instrumentations"];

export function createInstrumentations(): Instrumentations {
  return [
    // Event-loop delay, heap, GC and active handles (./runtime.ts).
    runtimeInstrumentation(),
    // No http instrumentation (./http-server.ts makes the server span), no undici instrumentation (./http-client.ts
    // makes the client spans) and no Express instrumentation (it wrapped every middleware layer of every request to
    // name the route).
    new IORedisInstrumentation({ dbStatementSerializer: (command) => command }),
  ];
}
