import type { PayloadCache } from "../cache/types";
import { runPipeline } from "../pipeline";
import type { CompiledPolicy } from "../policy/compile";
import type { FallbackCode } from "../policy/schema";
import { traceCacheLookup } from "../telemetry/tracing";
import { buildPayload, configOf, type FallbackInfo, type RetrievalPayload } from "./payload";

export const FALLBACK_MESSAGES: Record<FallbackCode, string> = {
  MEMORY_DISABLED: "Memory is disabled for this request (useMemory is not true)",
  SESSION_INVALID: "sessionId is missing or invalid",
  INVALID_QUERY: "Query text invalid or too long",
  COLLECTION_NOT_FOUND: "User memory collection does not exist",
  RATE_LIMITED: "Memory retrieval rate limit exceeded",
  ZEP_UNAVAILABLE: "Memory service temporarily unavailable",
  OPENMEMORY_UNAVAILABLE: "Memory service temporarily unavailable",
  LOCAL_UNAVAILABLE: "Memory service temporarily unavailable",
  POLICY_FAILED: "The retrieval policy failed to shape the results",
};

export interface FallbackContext {
  compiled: CompiledPolicy;
  userId: string;
  backend: string;
  cache: PayloadCache;
  /** The request's cache key, when the request got far enough to have one. */
  cacheKey?: string;
  queryTimeMs: () => number;
  explain: boolean;
}

/**
 * Answers a request that cannot (or may not) search with the policy's declared action (docs/api.md#eligibility-and-fallbacks):
 * skip → no memories; empty → a successful-looking payload with zero memories; cache → the last good payload
 * for the same key, fresh or stale, else skip. `metadata.fallback` always says what happened and why.
 */
export async function answerWithFallback(
  code: FallbackCode,
  detail: string | undefined,
  ctx: FallbackContext,
): Promise<RetrievalPayload> {
  const declared = ctx.compiled.policy.fallbacks[code];
  const message = detail ? `${FALLBACK_MESSAGES[code]}: ${detail}` : FALLBACK_MESSAGES[code];

  if (declared === "cache" && ctx.cacheKey !== undefined) {
    const { cacheKey } = ctx;
    const hit = await traceCacheLookup(() => ctx.cache.get(cacheKey), "fallback");
    if (hit) {
      const payload: RetrievalPayload = {
        ...hit.payload,
        metadata: {
          ...hit.payload.metadata,
          queryTime: round(ctx.queryTimeMs()),
          cache: hit.fresh ? "hit" : "stale",
          fallback: { code, action: "cache", message },
        },
      };
      if (ctx.explain) payload.trace = [];
      return payload;
    }
  }

  if (declared === "empty") {
    const result = runPipeline(
      { userId: ctx.userId, query: "", candidates: [], backend: ctx.backend },
      ctx.compiled,
    );
    const payload = buildPayload(result, ctx.compiled, {
      backend: ctx.backend,
      cache: "bypass",
      queryTimeMs: ctx.queryTimeMs(),
      explain: ctx.explain,
    });
    payload.metadata.fallback = { code, action: "empty", message };
    return payload;
  }

  const fallback: FallbackInfo = {
    code,
    action: "skip",
    message: declared === "cache" ? `${message} (no cached payload to serve)` : message,
  };
  const payload: RetrievalPayload = {
    memories: [],
    ...(ctx.compiled.policy.format.citations === "on" ? { citations: {} } : {}),
    metadata: {
      queryTime: round(ctx.queryTimeMs()),
      totalResults: 0,
      includedResults: 0,
      totalTokens: 0,
      appliedFilters: [],
      config: configOf(ctx.compiled),
      policy: {
        name: ctx.compiled.policy.name,
        version: ctx.compiled.policy.version,
        hash: ctx.compiled.hash,
      },
      backend: ctx.backend,
      cache: "bypass",
      fallback,
    },
    systemPrompt: "",
  };
  if (ctx.explain) payload.trace = [];
  return payload;
}

function round(ms: number): number {
  return Math.round(ms * 100) / 100;
}
