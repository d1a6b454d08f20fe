/**
 * The retrieval's spans, through the OpenTelemetry API (a no-op until an SDK registers a TracerProvider, so code
 * and tests without telemetry pay almost nothing):
 *
 *   memgate.retrieve                     policy, backend, cache, fallback, counts, tokens, hashed user, gen_ai.*
 *   ├─ memgate.eligibility               useMemory, sessionId, query, the user's rate limit, backend cool-down
 *   ├─ memgate.cache.lookup              memgate.cache.result = hit | stale | miss
 *   ├─ memgate.backend.user_exists       (backend.ts) the existence check, when not cached
 *   ├─ memgate.backend.search            (backend.ts) with the outbound HTTP call as its child
 *   └─ memgate.stage.<stage>             one per policy stage: in/out/changes counts
 *
 * Attributes never hold a query, a memory's content, a key or a plain user id (docs/api.md#privacy).
 */
import { performance } from "node:perf_hooks";
import { type Attributes, context, type Span, SpanStatusCode, type Tracer, trace } from "@opentelemetry/api";
import type { CacheLookup } from "../cache/types";
import type { PipelineObserver } from "../pipeline";
import type { StageTrace } from "../pipeline/types";
import { FALLBACK_CODES } from "../policy/schema";
import type { RetrievalOutcome } from "../retrieval/outcome";
import type { RetrievalPayload } from "../retrieval/payload";
import { GENAI_RETRIEVAL, genAiSource } from "./genai";
import { recordDedup, recordInjection, recordRedactions, recordRetrieval } from "./metrics";
import { hashUser } from "./redact";

export const TRACER_NAME = "memgate";

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

/** A payload-cache read in a `memgate.cache.lookup` span; `purpose` says whether a fallback asked for it. */
export function traceCacheLookup(
  lookup: () => Promise<CacheLookup | undefined>,
  purpose: "serve" | "fallback" = "serve",
): Promise<CacheLookup | undefined> {
  return inSpan("memgate.cache.lookup", async (span) => {
    const found = await lookup();
    if (span.isRecording()) {
      span.setAttributes({
        "memgate.cache.purpose": purpose,
        "memgate.cache.result": found === undefined ? "miss" : found.fresh ? "hit" : "stale",
      });
    }
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

function stageAttributes(t: StageTrace): Attributes {
  const attributes: Attributes = {
    "memgate.stage.in": t.in,
    "memgate.stage.out": t.out,
    "memgate.stage.changes": t.changes.length,
  };
  const detail = t.detail;
  if (detail !== undefined) {
    for (const key in detail) {
      const value = detail[key];
      if (typeof value !== "string" || STRING_DETAILS.has(key)) attributes[detailKey(key)] = value;
    }
  }
  return attributes;
}

/**
 * Times the policy stages of one pipeline run: one `memgate.stage.<stage>` span each (children of the span
 * active now, with the stage's own start and end), and the `retrieval.dedup_ratio`, `redaction.redactions` and
 * `injection.flags` metrics. The injection stage's span carries `memgate.stage.flagged`, `.neutralized` and
 * `.dropped` (memories per action, from its trace detail), never what matched.
 */
export function pipelineObserver(policy: string, backend: string): PipelineObserver {
  const parent = context.active();
  const traced = trace.getSpan(parent)?.isRecording() === true;
  return {
    now: () => performance.now(),
    stage(t, startedAt, endedAt) {
      recordRedactions(t.changes); // the redaction stage, and a rewriting stage's text redacted again
      if (t.stage === "injection") recordInjection(t.changes);
      if (t.stage === "deduplication") {
        const duplicates = t.changes.filter((c) => c.reason.startsWith("duplicate_of:")).length;
        recordDedup(policy, backend, t.in, duplicates);
      }
      if (!traced) return;
      const span = tracer().startSpan(
        `memgate.stage.${t.stage}`,
        { startTime: startedAt, attributes: stageAttributes(t) },
        parent,
      );
      span.end(endedAt);
    },
  };
}
