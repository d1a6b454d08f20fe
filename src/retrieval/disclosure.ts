/**
 * Progressive disclosure in the retrieval core (seed 004; docs/api.md#progressive-disclosure), for every door
 * (/v1 and MCP):
 *
 * - layer 1, the index: a retrieval (cache, single-flight, limits, fallbacks: ./service.ts) whose kept memories
 *   are answered as index lines (`indexView`);
 * - layer 2, the timeline, and layer 3, the details: `disclose` — policy resolution (the tenant's allowed
 *   policies), the user's rate limit and the backend's cooldown (the same admission as a retrieval), the
 *   backend's `neighbours` / `getMemories` under the policy's backend timeout (with the resilience decorator's
 *   breaker, bulkhead and retry), redaction and the injection screen, the budget (details), fallbacks as
 *   declared by the policy. Not cached: both are keyed by ids, not by a question, and cheap reads by id.
 *
 * An id that is not this user's is absent from details and NOT_FOUND for a timeline, exactly as an unknown id.
 */
import { performance } from "node:perf_hooks";
import type { BackendProvider } from "../backends/registry";
import { type Backend, BackendError, type Neighbours } from "../backends/types";
import type { PayloadCache } from "../cache/types";
import type { BackendCooldown } from "../limits/cooldown";
import type { Logger } from "../logging/logger";
import { certificateFor, formatIndex, indexLines, shapeMemories } from "../pipeline/disclosure";
import { formatSystemPrompt } from "../pipeline/stages/format";
import type { Candidate } from "../pipeline/types";
import type { CompiledPolicy } from "../policy/compile";
import type { BackendName, FallbackCode } from "../policy/schema";
import { userScope } from "../redis/keys";
import { raceSignal } from "../resilience/deadline";
import { LinkedSignal } from "../signals";
import { recordRateLimitRejection } from "../telemetry/metrics";
import type { Admission } from "./admission";
import { answerWithFallback } from "./fallback";
import type { DetailsRequest, RetrievalOutcome, TimelineRequest } from "./outcome";
import { configOf, type IndexPayload, type RetrievalPayload } from "./payload";
import { type PolicyDeps, resolvePolicy } from "./policy";

/** The most ids one details call takes (also the route schemas' bound). */
export const MAX_DETAIL_IDS = 20;
/** The most turns a timeline shows on each side of its memory; the default is `DEFAULT_TIMELINE_WINDOW`. */
export const MAX_TIMELINE_WINDOW = 10;
export const DEFAULT_TIMELINE_WINDOW = 3;

export interface DisclosureDeps extends PolicyDeps {
  backends: BackendProvider;
  cache: PayloadCache;
  cooldown: BackendCooldown;
  admission: Admission;
  logger: Logger;
  /** The declared fallback of a classified backend failure (./service.ts `codeForKind`). */
  codeFor(err: BackendError, backend: BackendName): FallbackCode;
  unavailable(backend: BackendName): FallbackCode;
}

/** Layer 1: a retrieval's outcome with its kept memories as index lines (the payload itself is left as it is). */
export function indexView(
  payload: RetrievalPayload,
  query: string,
  compiled: CompiledPolicy,
  turnTime?: number,
): IndexPayload {
  const { tokenizer } = compiled.ctx;
  const index = indexLines(payload.memories, query, tokenizer, payload.metadata.backend);
  let indexTokens = 0;
  for (const line of index) indexTokens += tokenizer.count(line.gist);
  const metadata: IndexPayload["metadata"] = { ...payload.metadata, indexTokens };
  // The certificate even where the policy does not compute it (an index answers "is this enough?").
  if (metadata.sufficiency === undefined && query.trim() !== "") {
    const { threshold } = compiled.policy.sufficiency;
    metadata.sufficiency = {
      ...certificateFor(payload.memories, query, threshold, turnTime),
      expanded: false,
    };
  }
  return {
    index,
    metadata,
    systemPrompt: formatIndex(index, compiled.policy.format.timeZone, compiled.policy.format.envelope),
  };
}

type Fetched = { kind: "found"; candidates: Candidate[]; anchor?: string } | { kind: "not_found" };

/** Layers 2 and 3 (see the top of this file). */
export async function disclose(
  deps: DisclosureDeps,
  req: DetailsRequest | TimelineRequest,
): Promise<RetrievalOutcome> {
  const started = performance.now();
  const { principal } = req;
  const { tenant } = principal;
  const compiled = resolvePolicy(deps, principal, {
    name: req.policy,
    field: req.policyField ?? "policy",
    overrides: undefined,
    topK: undefined,
  });
  if ("kind" in compiled) return compiled;
  if (req.backend !== undefined && !deps.backends.has(tenant, req.backend)) {
    return {
      kind: "refused",
      code: "FORBIDDEN",
      detail: `backend: this tenant has no "${req.backend}" backend`,
    };
  }
  const name: BackendName = req.backend ?? compiled.policy.backend ?? tenant.defaultBackend;
  const fallback = async (code: FallbackCode, detail?: string): Promise<RetrievalOutcome> => {
    const payload = await answerWithFallback(code, detail, {
      compiled,
      userId: req.userId,
      backend: name,
      cache: deps.cache,
      queryTimeMs: () => performance.now() - started,
      explain: false,
    });
    return { kind: "fallback", code, action: payload.metadata.fallback?.action ?? "skip", payload };
  };
  const cooldownKey = `${tenant.id}:${name}`;
  const checks = deps.admission.check({
    rateKey: userScope(tenant.id, req.userId),
    rule: compiled.policy.rateLimit.perUser,
    cooldownKey,
    cacheKey: undefined,
  });
  const decision = await checks.limit;
  if (!decision.allowed) {
    recordRateLimitRejection("user");
    return fallback("RATE_LIMITED", `retry in ${Math.ceil(decision.retryAfterMs / 1000)} s`);
  }
  const cooling = await checks.cooldownMs;
  if (cooling > 0) {
    recordRateLimitRejection("backend");
    return fallback("RATE_LIMITED", `${name} asked to wait ${Math.ceil(cooling / 1000)} s`);
  }
  const instance = deps.backends.get(tenant, name);
  if (instance === undefined)
    return fallback(deps.unavailable(name), "backend not configured for this tenant");
  let backend: Backend;
  try {
    backend = await instance;
  } catch {
    return fallback(deps.unavailable(name), "backend could not be initialised");
  }
  const deadline = new LinkedSignal(req.signal, compiled.policy.timeouts.backendMs);
  const { signal } = deadline;
  let fetched: Fetched;
  try {
    if ("ids" in req) {
      if (backend.getMemories === undefined)
        return fallback(deps.unavailable(name), `${name} cannot look memories up by id`);
      const ids = [...new Set(req.ids)];
      const found = await raceSignal(backend.getMemories({ userId: req.userId, ids, signal }), signal, name);
      fetched = { kind: "found", candidates: found };
    } else {
      if (backend.neighbours === undefined)
        return fallback(deps.unavailable(name), `${name} has no timeline`);
      const around: Neighbours | undefined = await raceSignal(
        backend.neighbours({ userId: req.userId, id: req.id, before: req.before, after: req.after, signal }),
        signal,
        name,
      );
      fetched =
        around === undefined
          ? { kind: "not_found" }
          : { kind: "found", candidates: [...around.before, around.anchor, ...around.after], anchor: req.id };
    }
  } catch (err) {
    if (err instanceof BackendError) {
      if (err.kind === "rate_limited" && err.retryAfterMs)
        await deps.cooldown.start(cooldownKey, err.retryAfterMs);
      deps.logger.warn({ backend: name, kind: err.kind, status: err.status }, "backend call failed");
      // An id the backend does not know for this user is not found, as one of another user's.
      if (err.kind === "not_found" && !("ids" in req)) fetched = { kind: "not_found" };
      else return fallback(deps.codeFor(err, name), err.kind === "unavailable" ? err.message : undefined);
    } else {
      deps.logger.error({ err, backend: name }, "backend adapter threw an unexpected error");
      return fallback(deps.unavailable(name));
    }
  } finally {
    deadline.dispose();
  }
  if (fetched.kind === "not_found") {
    return { kind: "refused", code: "NOT_FOUND", detail: "id: no such memory for this user" };
  }
  try {
    const shaped = shapeMemories(fetched.candidates, compiled, req.userId, { budget: "ids" in req });
    const payload: RetrievalPayload = {
      memories: shaped.memories,
      metadata: {
        queryTime: Math.round((performance.now() - started) * 100) / 100,
        totalResults: fetched.candidates.length,
        includedResults: shaped.memories.length,
        totalTokens: shaped.totalTokens,
        appliedFilters: shaped.appliedFilters,
        config: configOf(compiled),
        policy: { name: compiled.policy.name, version: compiled.policy.version, hash: compiled.hash },
        backend: name,
        cache: "bypass",
        fallback: null,
      },
      systemPrompt: "",
    };
    if ("ids" in req) {
      const { format } = compiled.policy;
      payload.systemPrompt = formatSystemPrompt(payload.memories, {
        timeZone: format.timeZone,
        envelope: format.envelope,
        includedResults: payload.memories.length,
      });
      return { kind: "payload", payload };
    }
    const view = indexView(payload, "", compiled);
    const at = view.index.findIndex((line) => line.id === req.id);
    view.index.forEach((line, i) => {
      if (at >= 0) line.relation = i < at ? "before" : i === at ? "self" : "after";
    });
    return { kind: "payload", payload, index: view };
  } catch (err) {
    deps.logger.error({ err, policy: compiled.policy.name }, "disclosure shaping failed");
    return fallback("POLICY_FAILED");
  }
}
