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
import { RecentCache } from "../pipeline/text/recent";
import { safePath, safeQuery, safeUrl, splitUrl } from "./redact";
import { runtimeInstrumentation } from "./runtime";

export type Instrumentations = NodeSDKConfiguration["instrumentations"];

interface UrlAttributes {
  "url.full": string;
  "url.path": string;
  "url.query": string;
}

/**
 * The URL attributes of recent request targets (origin + path → attributes), so that a miss's calls — the same
 * search URL every time — do not parse and template their URL again each (a pure function of the target; the
 * instrumentation copies the attributes, never writes to them). Bounded (RecentCache).
 */
const urlAttributes = new RecentCache<Readonly<UrlAttributes>>(1024, 1024 * 256);

/** The span's URL attributes of an outgoing request, templated (see the top of this file). */
export function requestUrlAttributes(origin: string, target: string): Readonly<UrlAttributes> {
  const full = `${origin}${target}`;
  let attributes = urlAttributes.get(full);
  if (attributes === undefined) {
    const { path, search } = splitUrl(target);
    attributes = Object.freeze({
      "url.full": safeUrl(full),
      "url.path": safePath(path),
      "url.query": safeQuery(search),
    });
    urlAttributes.set(full, attributes);
  }
  return attributes;
}

export function createInstrumentations(): Instrumentations {
  return [
    // Event-loop delay, heap, GC and active handles (./runtime.ts).
    runtimeInstrumentation(),
    // No http instrumentation (./http-server.ts makes the server span; the backends are called through undici) and
    // no Express instrumentation (it wrapped every middleware layer of every request to name the route).
    new IORedisInstrumentation({ dbStatementSerializer: (command) => command }),
    new UndiciInstrumentation({
      startSpanHook: (request) => requestUrlAttributes(request.origin, request.path),
    }),
  ];
}
