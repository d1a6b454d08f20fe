/**
 * Wraps every backend adapter so each call is a span (`memgate.backend.search`, `memgate.backend.user_exists`)
 * and a `backend.latency_ms` observation, whatever the adapter. The outbound HTTP call the adapter makes runs
 * inside that span, so undici's client span is its child and `traceparent` names it.
 */
import { performance } from "node:perf_hooks";
import { type Span, SpanStatusCode } from "@opentelemetry/api";
import type { BackendFactories } from "../backends/registry";
import { type Backend, BackendError } from "../backends/types";
import { GENAI_RETRIEVAL, genAiSource } from "./genai";
import {
  type BackendOperation,
  recordBackendCall,
  recordRateLimitRejection,
  recordUpstreamOversized,
} from "./metrics";
import { tracer } from "./tracing";

function observe<T>(
  backend: Backend,
  operation: BackendOperation,
  call: () => Promise<T>,
  annotate?: (span: Span, value: T) => void,
  /** A search's fetch size: the span is a GenAI retrieval span too (./genai.ts). */
  limit?: number,
): Promise<T> {
  const attributes =
    limit === undefined
      ? { "memgate.backend": backend.name }
      : { "memgate.backend": backend.name, ...GENAI_RETRIEVAL, ...genAiSource(backend.name, limit) };
  return tracer().startActiveSpan(`memgate.backend.${operation}`, { attributes }, async (span) => {
    const started = performance.now();
    try {
      const value = await call();
      recordBackendCall(backend.name, operation, "ok", performance.now() - started);
      if (annotate && span.isRecording()) annotate(span, value);
      return value;
    } catch (err) {
      const kind = err instanceof BackendError ? err.kind : "error";
      recordBackendCall(backend.name, operation, kind, performance.now() - started);
      if (kind === "rate_limited") recordRateLimitRejection("backend");
      if (err instanceof BackendError && err.oversized) recordUpstreamOversized(backend.name);
      span.setAttribute("memgate.backend.error.kind", kind);
      if (err instanceof BackendError && err.status !== undefined)
        span.setAttribute("memgate.backend.status", err.status);
      span.setAttribute("error.type", kind);
      span.setStatus({ code: SpanStatusCode.ERROR, message: kind });
      throw err;
    } finally {
      span.end();
    }
  });
}

/** The same backend, observed. `ping` (a reachability check; /readyz no longer calls it) is passed through untraced. */
export function instrumentBackend(backend: Backend): Backend {
  const observed: Backend = {
    name: backend.name,
    search: (req) =>
      observe(
        backend,
        "search",
        () => backend.search(req),
        (span, candidates) => {
          span.setAttributes({
            "memgate.backend.limit": req.limit,
            "memgate.results.count": candidates.length,
          });
        },
        req.limit,
      ),
    userExists: (userId, opts) =>
      observe(
        backend,
        "user_exists",
        () => backend.userExists(userId, opts),
        (span, exists) => span.setAttribute("memgate.user.exists", exists),
      ),
    ping: (opts) => backend.ping(opts),
  };
  const native = backend.searchNative?.bind(backend);
  if (native) {
    observed.searchNative = (req) =>
      observe(
        backend,
        "search",
        () => native(req),
        (span, answer) => {
          span.setAttributes({
            "memgate.backend.limit": req.limit,
            "memgate.backend.native": req.native.kind,
            "memgate.results.count": answer.candidates.length,
          });
        },
        req.limit,
      );
  }
  const getMemories = backend.getMemories?.bind(backend);
  if (getMemories) {
    observed.getMemories = (req) =>
      observe(
        backend,
        "get_memories",
        () => getMemories(req),
        (span, found) => {
          span.setAttributes({
            "memgate.backend.ids": req.ids.length,
            "memgate.results.count": found.length,
          });
        },
      );
  }
  const neighbours = backend.neighbours?.bind(backend);
  if (neighbours) {
    observed.neighbours = (req) =>
      observe(
        backend,
        "neighbours",
        () => neighbours(req),
        (span, found) => {
          const count = found === undefined ? 0 : 1 + found.before.length + found.after.length;
          span.setAttribute("memgate.results.count", count);
        },
      );
  }
  const close = backend.close?.bind(backend);
  if (close) observed.close = close;
  return observed;
}

/** The factories with every backend they build observed (wired once in src/server/services.ts). */
export function instrumentFactories(factories: BackendFactories): BackendFactories {
  return {
    zep: async (cfg, owner) => instrumentBackend(await factories.zep(cfg, owner)),
    openmemory: async (cfg, owner) => instrumentBackend(await factories.openmemory(cfg, owner)),
    local: async (cfg, owner) => instrumentBackend(await factories.local(cfg, owner)),
  };
}
