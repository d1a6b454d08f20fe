/**
 * Library instrumentations of memgate's outgoing calls — the HTTP server span of each incoming request is
 * memgate's own (./http-server.ts) —: ioredis (cache and rate limits), undici (the `undici` package's `request` the
 * OpenMemory calls and Zep's searches use, and the global `fetch` of the Zep SDK's `user.get` and ping — both
 * publish on the same diagnostics channels; their calls carry `traceparent`/`baggage` out).
 *
 * Privacy (docs/api.md#privacy): URLs are recorded as templates — Zep's `GET /users/{userId}` would otherwise put a plain
 * user id in `url.full` — with query values removed; Redis statements are the command name only (values are
 * cached payloads, i.e. memory contents); no header is captured.
 */
import { IORedisInstrumentation } from "@opentelemetry/instrumentation-ioredis";
import { UndiciInstrumentation } from "@opentelemetry/instrumentation-undici";
import type { NodeSDKConfiguration } from "@opentelemetry/sdk-node";
import { safePath, safeQuery, safeUrl, splitUrl } from "./redact";
import { runtimeInstrumentation } from "./runtime";

export type Instrumentations = NodeSDKConfiguration["instrumentations"];

export function createInstrumentations(): Instrumentations {
  return [
    // Event-loop delay, heap, GC and active handles (./runtime.ts).
    runtimeInstrumentation(),
    // No http instrumentation (./http-server.ts makes the server span; the backends are called through undici) and
    // no Express instrumentation (it wrapped every middleware layer of every request to name the route).
    new IORedisInstrumentation({ dbStatementSerializer: (command) => command }),
    new UndiciInstrumentation({
      startSpanHook: (request) => {
        const { path, search } = splitUrl(request.path);
        return {
          "url.full": safeUrl(`${request.origin}${request.path}`),
          "url.path": safePath(path),
          "url.query": safeQuery(search),
        };
      },
    }),
  ];
}
