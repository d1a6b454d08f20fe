/**
 * The retrieval's spans, through the OpenTelemetry API (a no-op until an SDK registers a TracerProvider, so code
 * and tests without telemetry pay almost nothing):
 *
 *   memgate.retrieve                     policy, backend, cache, fallback, counts, tokens, hashed user, gen_ai.*
 *   │  events memgate.eligibility        useMemory, sessionId, query, the user's rate limit, backend cool-down
 *   │         memgate.cache.lookup       memgate.cache.result = hit | stale | miss
 *   ├─ memgate.backend.user_exists       (backend.ts) the existence check, when not cached
 *   ├─ memgate.backend.search            (backend.ts) with the outbound HTTP call as its child
 *   └─ memgate.pipeline                  the policy's stages, one span event per stage: in/out, changes by reason, µs
 *
 * The eligibility and cache-lookup steps and the stages are in-process bookkeeping, not operations of their own:
 * they are span events with the same facts (and a duration) unless MEMGATE_TRACE_STAGES=spans makes each one a
 * child span again (`configureStageTracing`), for deep debugging. A cache hit is then the HTTP span, memgate.retrieve
 * and the Redis command that read the entry.
 *
 * Attributes never hold a query, a memory's content, a key or a plain user id (docs/api.md#privacy).
 */
import { performance } from "node:perf_hooks";
import { type Attributes, context, type Span, SpanStatusCode, type Tracer, trace } from "@opentelemetry/api";
import type { CacheLookup } from "../cache/types";
import type { PipelineObserver, PipelineResult } from "../pipeline";
import type { StageTrace } from "../pipeline/types";
import { FALLBACK_CODES } from "../policy/schema";
import type { RetrievalOutcome } from "../retrieval/outcome";
import type { RetrievalPayload } from "../retrieval/payload";
import type { StageTracing } from "./config";
import { GENAI_RETRIEVAL, genAiSource } from "./genai";
import { recordDedup, recordInjection, recordRedactions, recordRetrieval } from "./metrics";
import { hashUser } from "./redact";

export const TRACER_NAME = "memgate";

/**
 * MEMGATE_TRACE_STAGES: `events` (the default) records the retrieval's internal steps and the policy stages as span
 * events on `memgate.retrieve` and `memgate.pipeline`; `spans` makes each one a child span (its own start and end).
 */
let stageTracing: StageTracing = "events";

/** Sets MEMGATE_TRACE_STAGES' mode (at boot, src/server/services.ts). */
export function configureStageTracing(mode: StageTracing): void {
  stageTracing = mode;
}

/** Taken per use: the API's proxy tracer binds to the first provider it sees, and tests swap providers. */
export function tracer(): Tracer {
  return trace.getTracer(TRACER_NAME);
}

export interface RetrievalSubject {
  tenantId: string;
  userId: string;
  /** The query's length (never its text). */
  queryChars: number;
  /** Which door asked: `retrieve` (/v1/retrieve, the CLI), a drop-in door's call (`zep.graph.search`, …), `mcp`. */
  door: string;
}

/** The fallback code an internal `Fallback` error carries (it has a `code` that is a FallbackCode). */
function fallbackCodeOf(err: unknown): string | undefined {
  if (!(err instanceof Error) || !("code" in err)) return undefined;
  const code = err.code;
  return typeof code === "string" && (FALLBACK_CODES as readonly string[]).includes(code) ? code : undefined;
}

/**
 * An error that carries its own answer: a numeric `status` and a string `code`, as src/http/errors.ts's
 * HttpProblem does (told by shape, so telemetry does not depend on the HTTP layer).
 */
function problemOf(err: unknown): { status: number; code: string } | undefined {
  if (!(err instanceof Error) || !("status" in err) || !("code" in err)) return undefined;
  const { status, code } = err;
  return typeof status === "number" && typeof code === "string" ? { status, code } : undefined;
}

/** Marks a span with an error that escaped: the caller's own fault (a problem below 500) is not a span error. */
function markError(span: Span, err: unknown): void {
  const problem = problemOf(err);
  if (problem !== undefined && problem.status < 500) {
    span.setAttribute("memgate.error.code", problem.code);
    return;
  }
  const type = problem?.code ?? (err instanceof Error ? err.name : "unknown");
  span.setAttribute("error.type", type);
  span.setStatus({ code: SpanStatusCode.ERROR, message: type });
}

function payloadAttributes(payload: RetrievalPayload): Attributes {
  const m = payload.metadata;
  const attributes: Attributes = {
    "memgate.policy.name": m.policy.name,
    "memgate.policy.version": m.policy.version,
    "memgate.policy.hash": m.policy.hash,
    "memgate.backend": m.backend,
    "memgate.cache": m.cache,
    "memgate.results.total": m.totalResults,
    "memgate.results.count": m.includedResults,
    "memgate.tokens": m.totalTokens,
    "memgate.filters": m.appliedFilters,
    ...genAiSource(m.backend, m.config.topK),
  };
  if (m.fallback !== null) {
    attributes["memgate.fallback.code"] = m.fallback.code;
    attributes["memgate.fallback.action"] = m.fallback.action;
  }
  return attributes;
}

/**
 * Runs one retrieval inside the `memgate.retrieve` span and records the retrieval metrics from what the caller
 * receives. Errors pass through unchanged.
 */
export function traceRetrieval(
  subject: RetrievalSubject,
  run: () => Promise<RetrievalOutcome>,
  /** `memgate.retrieve`, or a disclosure layer's own span (`memgate.details`, `memgate.timeline`). */
  spanName = "memgate.retrieve",
): Promise<RetrievalOutcome> {
  const started = performance.now();
  return tracer().startActiveSpan(spanName, { attributes: GENAI_RETRIEVAL }, async (span) => {
    if (span.isRecording()) {
      span.setAttributes({
        "memgate.tenant": subject.tenantId,
        "memgate.user.hash": hashUser(subject.tenantId, subject.userId),
        "memgate.query.chars": subject.queryChars,
        "memgate.door": subject.door,
      });
    }
    try {
      const outcome = await run();
      if (outcome.kind === "payload" || outcome.kind === "fallback") {
        recordRetrieval(
          outcome.payload.metadata,
          performance.now() - started,
          subject.door,
          subject.tenantId,
        );
        if (span.isRecording()) span.setAttributes(payloadAttributes(outcome.payload));
      } else if (outcome.kind === "refused") {
        span.setAttribute("memgate.error.code", outcome.code);
      } else {
        span.setAttribute("memgate.upstream.status", outcome.response.status);
      }
      return outcome;
    } catch (err) {
      markError(span, err);
      throw err;
    } finally {
      span.end();
    }
  });
}

/**
 * Runs `fn` in a child span named `name`. A fallback decided inside shows as `memgate.fallback.code` (a declared
 * outcome, not a span error); anything else that escapes marks the span as failed.
 */
export function inSpan<T>(name: string, fn: (span: Span) => Promise<T>): Promise<T> {
  return tracer().startActiveSpan(name, async (span) => {
    try {
      return await fn(span);
    } catch (err) {
      const code = fallbackCodeOf(err);
      if (code !== undefined) span.setAttribute("memgate.fallback.code", code);
      else markError(span, err);
      throw err;
    } finally {
      span.end();
    }
  });
}

/** Microseconds between two `performance.now()` readings, whole. */
const micros = (from: number, to: number): number => Math.round((to - from) * 1000);

/**
 * Runs one internal step of a retrieval (`memgate.eligibility`, `memgate.cache.lookup`): by default a span event
 * of that name on the active span when `fn` is done, carrying the attributes `fn` put in its argument, a fallback
 * decided or an error type, and `memgate.duration_us`; with MEMGATE_TRACE_STAGES=spans a child span, as `inSpan`.
 */
export function inStep<T>(name: string, fn: (attributes: Attributes) => Promise<T>): Promise<T> {
  if (stageTracing === "spans") {
    return inSpan(name, async (span) => {
      const attributes: Attributes = {};
      try {
        return await fn(attributes);
      } finally {
        if (span.isRecording()) span.setAttributes(attributes);
      }
    });
  }
  const span = trace.getSpan(context.active());
  if (span === undefined || !span.isRecording()) return fn({});
  const attributes: Attributes = {};
  const started = performance.now();
  const done = () => {
    attributes["memgate.duration_us"] = micros(started, performance.now());
    span.addEvent(name, attributes, started);
  };
  return fn(attributes).then(
    (value) => {
      done();
      return value;
    },
    (err: unknown) => {
      const code = fallbackCodeOf(err);
      if (code !== undefined) attributes["memgate.fallback.code"] = code;
      else attributes["error.type"] = problemOf(err)?.code ?? (err instanceof Error ? err.name : "unknown");
      done();
      throw err;
    },
  );
}

/** A payload-cache read as the `memgate.cache.lookup` step; `purpose` says whether a fallback asked for it. */
export function traceCacheLookup(
  lookup: () => Promise<CacheLookup | undefined>,
  purpose: "serve" | "fallback" = "serve",
): Promise<CacheLookup | undefined> {
  return inStep("memgate.cache.lookup", async (attributes) => {
    const found = await lookup();
    attributes["memgate.cache.purpose"] = purpose;
    attributes["memgate.cache.result"] = found === undefined ? "miss" : found.fresh ? "hit" : "stale";
    return found;
  });
}

/**
 * Stage details that are numbers or booleans (thresholds, counts) or these known enum strings: never text from a
 * query or a memory (the rank stage's time scope phrase is not one of them).
 */
const STRING_DETAILS = new Set([
  "strategy",
  "tokenizer",
  "mode",
  "packing",
  "intent",
  "answerType",
  "reinforcement",
]);
/** `duplicates` → `memgate.stage.duplicates`, built once per key. */
const detailKeys = new Map<string, string>();
const detailKey = (key: string): string => {
  let name = detailKeys.get(key);
  if (name === undefined) {
    name = `memgate.stage.${key}`;
    if (detailKeys.size < 64) detailKeys.set(key, name);
  }
  return name;
};

/** `duplicate_of:f1` → `memgate.stage.reason.duplicate_of`: the reason's kind, never an id or detector text. */
const reasonKeys = new Map<string, string>();
const reasonKey = (reason: string): string => {
  const colon = reason.indexOf(":");
  const kind = colon === -1 ? reason : reason.slice(0, colon);
  let name = reasonKeys.get(kind);
  if (name === undefined) {
    name = `memgate.stage.reason.${kind}`;
    if (reasonKeys.size < 64) reasonKeys.set(kind, name);
  }
  return name;
};

function stageAttributes(t: StageTrace): Attributes {
  const attributes: Attributes = {
    "memgate.stage.in": t.in,
    "memgate.stage.out": t.out,
    "memgate.stage.changes": t.changes.length,
  };
  // The candidates the stage dropped or changed, by the kind of reason (below_min_score, duplicate_of, clipped, …).
  for (const change of t.changes) {
    const key = reasonKey(change.reason);
    attributes[key] = ((attributes[key] as number | undefined) ?? 0) + 1;
  }
  const detail = t.detail;
  if (detail !== undefined) {
    for (const key in detail) {
      const value = detail[key];
      if (typeof value !== "string" || STRING_DETAILS.has(key)) attributes[detailKey(key)] = value;
    }
  }
  return attributes;
}

/** The stage metrics of one run: `retrieval.dedup_ratio`, `redaction.redactions`, `injection.flags`. */
function recordStageMetrics(t: StageTrace, policy: string, backend: string): void {
  recordRedactions(t.changes); // the redaction stage, and a rewriting stage's text redacted again
  if (t.stage === "injection") recordInjection(t.changes);
  if (t.stage === "deduplication") {
    const duplicates = t.changes.filter((c) => c.reason.startsWith("duplicate_of:")).length;
    recordDedup(policy, backend, t.in, duplicates);
  }
}

export interface PipelineSubject {
  policy: string;
  backend: string;
  /** The expansion round's second run (policy `sufficiency.expand`). */
  expanded: boolean;
  /** That run's search (policy `sufficiency.expandWith`): the question again (`more`) or its missing words. */
  expandedWith?: "more" | "missing";
}

/** One pipeline run's tracing: its observer, then `end` with the result or `fail` with what it threw (once). */
export interface PipelineTrace {
  observer: PipelineObserver;
  end(result: PipelineResult): void;
  fail(err: unknown): void;
}

/**
 * Starts one (synchronous) pipeline run's `memgate.pipeline` span, child of the active span, and records the stage
 * metrics. Each stage is a span event named after the stage, at the stage's start, with its `memgate.stage.*`
 * attributes: in and out counts, `changes` and their count by reason (`memgate.stage.reason.<kind>`), its numeric
 * facts, and `memgate.duration_us`; with MEMGATE_TRACE_STAGES=spans a child span `memgate.stage.<stage>` instead
 * (its own start and end, the same attributes). The injection stage carries `memgate.stage.flagged`,
 * `.neutralized` and `.dropped` (memories per action, from its trace detail), never what matched.
 */
export function startPipelineTrace(subject: PipelineSubject): PipelineTrace {
  const { policy, backend } = subject;
  const parent = context.active();
  if (trace.getSpan(parent)?.isRecording() !== true) {
    return {
      observer: { now: () => 0, stage: (t) => recordStageMetrics(t, policy, backend) },
      end: () => undefined,
      fail: () => undefined,
    };
  }
  const span = tracer().startSpan("memgate.pipeline", undefined, parent);
  let open = true; // `end` or `fail`, whichever comes first, ends the span
  let stages = 0; // stages that ran (the result's trace also has trace-only entries: fetch, top_k)
  const spans = stageTracing === "spans";
  const inside = spans ? trace.setSpan(parent, span) : parent;
  return {
    observer: {
      now: () => performance.now(),
      stage(t, startedAt, endedAt) {
        stages += 1;
        recordStageMetrics(t, policy, backend);
        const attributes = stageAttributes(t);
        if (spans) {
          tracer()
            .startSpan(`memgate.stage.${t.stage}`, { startTime: startedAt, attributes }, inside)
            .end(endedAt);
          return;
        }
        attributes["memgate.duration_us"] = micros(startedAt, endedAt);
        span.addEvent(t.stage, attributes, startedAt);
      },
    },
    end(result) {
      if (!open) return;
      open = false;
      span.setAttributes({
        "memgate.policy.name": policy,
        "memgate.pipeline.in": result.totalResults,
        "memgate.pipeline.out": result.memories.length,
        "memgate.pipeline.stages": stages,
        "memgate.pipeline.expanded": subject.expanded,
        "memgate.tokens": result.totalTokens,
      });
      if (subject.expandedWith !== undefined)
        span.setAttribute("memgate.pipeline.expanded_with", subject.expandedWith);
      span.end();
    },
    fail(err) {
      if (!open) return;
      open = false;
      markError(span, err);
      span.end();
    },
  };
}
