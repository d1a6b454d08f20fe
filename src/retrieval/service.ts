import { performance } from "node:perf_hooks";
import type { BackendProvider } from "../backends/registry";
import { type Backend, BackendError, type BackendErrorKind } from "../backends/types";
import { payloadCacheKey } from "../cache/key";
import { flightOptionsFor, type SingleFlight } from "../cache/singleflight";
import type { CacheLookup, PayloadCache } from "../cache/types";
import { HttpProblem } from "../http/errors";
import type { Logger } from "../logging/logger";
import { buildPayload, type RetrievalPayload, runPipeline } from "../pipeline";
import type { Candidate } from "../pipeline/types";
import { type CompiledPolicy, compilePolicy, type OverrideCache } from "../policy/compile";
import { formatPath, PolicyError } from "../policy/load";
import type { PolicyRegistry } from "../policy/registry-types";
import { type BackendName, type FallbackCode, policySchema } from "../policy/schema";
import type { RateLimiter } from "../ratelimit/types";
import { raceSignal } from "../resilience/deadline";
import { recordRateLimitRejection } from "../telemetry/metrics";
import { inSpan, pipelineObserver, traceCacheLookup, traceRetrieval } from "../telemetry/tracing";
import type { Principal } from "../tenants/types";
import { type Admission, SeparateAdmission } from "./admission";
import type { BackendCooldown } from "./cooldown";
import type { ExistenceCache } from "./existence";
import { answerWithFallback, type FallbackContext } from "./fallback";
import { ID_PATTERN, type RetrieveBody } from "./request";

export interface RetrievalDeps {
  policies: PolicyRegistry;
  backends: BackendProvider;
  cache: PayloadCache;
  limiter: RateLimiter;
  existence: ExistenceCache;
  cooldown: BackendCooldown;
  // --- redis/single-flight ---
  flights: SingleFlight;
  /** The limit, cooldown and cache checks (default: the three calls above; with Redis one script). */
  admission?: Admission;
  overrides: OverrideCache;
  logger: Logger;
}

const UNAVAILABLE: Record<BackendName, FallbackCode> = {
  zep: "ZEP_UNAVAILABLE",
  openmemory: "OPENMEMORY_UNAVAILABLE",
  local: "LOCAL_UNAVAILABLE",
};

function codeForKind(kind: BackendErrorKind, backend: BackendName): FallbackCode {
  switch (kind) {
    case "not_found":
      return "COLLECTION_NOT_FOUND";
    case "rate_limited":
      return "RATE_LIMITED";
    case "invalid_query":
      return "INVALID_QUERY";
    case "unavailable":
      return UNAVAILABLE[backend];
  }
}

/** Used only if a tenant's default policy vanished from the registry: serve seed 000's defaults, never a 5xx. */
const BUILTIN = compilePolicy(policySchema.parse({ name: "builtin-default", version: 1 }));

class Fallback extends Error {
  constructor(
    readonly code: FallbackCode,
    readonly detail?: string,
  ) {
    super(code);
  }
}

/**
 * One retrieval: policy → eligibility → rate limit → cache → existence → backend → pipeline (CONTRACT §2–4).
 * Throws HttpProblem only for the caller's own faults; everything else becomes a declared fallback.
 */
export class RetrievalService {
  private readonly admission: Admission;

  constructor(private readonly deps: RetrievalDeps) {
    this.admission = deps.admission ?? new SeparateAdmission(deps);
  }

  /** One retrieval in its `memgate.retrieve` span, with the retrieval metrics (src/telemetry). */
  retrieve(principal: Principal, body: RetrieveBody, signal?: AbortSignal): Promise<RetrievalPayload> {
    const subject = {
      tenantId: principal.tenant.id,
      userId: body.userId,
      queryChars: body.query?.length ?? 0,
    };
    return traceRetrieval(subject, () => this.retrieveTraced(principal, body, signal));
  }

  private async retrieveTraced(
    principal: Principal,
    body: RetrieveBody,
    signal?: AbortSignal,
  ): Promise<RetrievalPayload> {
    const started = performance.now();
    const queryTimeMs = () => performance.now() - started;
    const { tenant } = principal;
    const explain = body.explain === true;
    if (explain) requireAdmin(principal, "explain");
    const compiled = this.resolvePolicy(principal, body);

    if (body.backend !== undefined && !this.deps.backends.has(tenant, body.backend)) {
      throw new HttpProblem("FORBIDDEN", `backend: this tenant has no "${body.backend}" backend`);
    }
    const backendName: BackendName = body.backend ?? compiled.policy.backend ?? tenant.defaultBackend;
    const query = body.query ?? "";
    const cacheKey = payloadCacheKey({
      tenantId: tenant.id,
      backend: backendName,
      userId: body.userId,
      query,
      policyHash: compiled.hash,
    });
    const fb: FallbackContext = {
      compiled,
      userId: body.userId,
      backend: backendName,
      cache: this.deps.cache,
      cacheKey,
      queryTimeMs,
      explain,
    };

    try {
      const cooldownKey = `${tenant.id}:${backendName}`;
      let cached: Promise<CacheLookup | undefined> | undefined;
      await inSpan("memgate.eligibility", async () => {
        this.checkEligibility(body, compiled);
        // The limit is consumed and the cooldown and the cache are read at once (with Redis: one script, one round
        // trip; src/retrieval/admission-redis.ts). Decisions are taken in order: limit, cooldown, then the cache;
        // a request the limit or a cooldown refuses never uses the cache read. (With Redis the one command's span
        // sits under memgate.eligibility; memgate.cache.lookup still reports the cache's result.)
        const checks = this.admission.check({
          rateKey: `${tenant.id}:${body.userId}`,
          rule: compiled.policy.rateLimit.perUser,
          cooldownKey,
          cacheKey: explain ? undefined : cacheKey,
        });
        cached = checks.cached;
        const decision = await checks.limit;
        if (!decision.allowed) {
          recordRateLimitRejection("user");
          throw new Fallback("RATE_LIMITED", `retry in ${Math.ceil(decision.retryAfterMs / 1000)} s`);
        }
        const cooling = await checks.cooldownMs;
        if (cooling > 0) {
          recordRateLimitRejection("backend");
          throw new Fallback("RATE_LIMITED", `${backendName} asked to wait ${Math.ceil(cooling / 1000)} s`);
        }
      });

      if (cached !== undefined) {
        const lookup = cached;
        const hit = await traceCacheLookup(() => lookup);
        if (hit?.fresh) {
          return {
            ...hit.payload,
            metadata: { ...hit.payload.metadata, queryTime: round(queryTimeMs()), cache: "hit" },
          };
        }
      }

      // --- redis/single-flight: identical concurrent requests (same cache key) make one backend call, within
      // this replica and across replicas (src/cache/singleflight.ts). A shared computation is not tied to one
      // client's abort signal (it serves several); the policy's backend timeout still bounds it.
      const produce = async (callSignal: AbortSignal | undefined): Promise<RetrievalPayload> => {
        const backendPromise = this.deps.backends.get(tenant, backendName);
        if (!backendPromise)
          throw new Fallback(UNAVAILABLE[backendName], "backend not configured for this tenant");
        const backend = await backendPromise.catch((err: unknown) => {
          this.deps.logger.error(
            { err, backend: backendName, tenant: tenant.id },
            "backend could not be created",
          );
          throw new Fallback(UNAVAILABLE[backendName], "backend could not be initialised");
        });
        const candidates = await this.search(backend, backendName, cooldownKey, body, compiled, callSignal);

        let payload: RetrievalPayload;
        try {
          const result = runPipeline(
            { userId: body.userId, query, candidates, backend: backendName, explain },
            compiled,
            pipelineObserver(compiled.policy.name, backendName),
          );
          payload = buildPayload(result, compiled, {
            backend: backendName,
            cache: explain || this.deps.cache.available?.() === false ? "bypass" : "miss",
            queryTimeMs: queryTimeMs(),
            explain,
          });
        } catch (err) {
          this.deps.logger.error({ err, policy: compiled.policy.name }, "policy pipeline failed");
          throw new Fallback("POLICY_FAILED");
        }
        return payload;
      };
      // Written after the answer (src/cache/singleflight.ts); a failed write is logged, never the caller's problem.
      const store = async (payload: RetrievalPayload): Promise<void> => {
        const { trace: _trace, ...cacheable } = payload;
        await this.deps.cache
          .set(cacheKey, cacheable, compiled.policy.cache.ttlSeconds, compiled.policy.cache.staleSeconds)
          .catch((err: unknown) => this.deps.logger.warn({ err }, "cache write failed"));
      };
      if (explain) {
        const payload = await produce(signal);
        await store(payload);
        return payload;
      }
      const flight = await this.deps.flights.run(
        cacheKey,
        flightOptionsFor(compiled.policy),
        () => produce(undefined),
        store,
      );
      // Another replica's (or a just-finished) result read from the cache is a hit.
      const served = flight.role === "remote" ? { cache: "hit" as const } : {};
      return {
        ...flight.payload,
        metadata: { ...flight.payload.metadata, ...served, queryTime: round(queryTimeMs()) },
      };
      // --- end redis/single-flight ---
    } catch (err) {
      if (err instanceof Fallback) return answerWithFallback(err.code, err.detail, fb);
      throw err;
    }
  }

  private resolvePolicy(principal: Principal, body: RetrieveBody): CompiledPolicy {
    const { tenant } = principal;
    const name = body.policy ?? tenant.policies.default;
    const allowed = tenant.policies.allowed;
    if (!allowed.includes("*") && !allowed.includes(name)) {
      throw new HttpProblem("FORBIDDEN", `policy: "${name}" is not allowed for this tenant`);
    }
    let base = this.deps.policies.get(name);
    if (!base) {
      if (body.policy !== undefined)
        throw new HttpProblem("VALIDATION_FAILED", `policy: no policy named "${name}"`);
      this.deps.logger.error(
        { tenant: tenant.id, policy: name },
        "default policy missing; serving built-in defaults",
      );
      base = BUILTIN;
    }
    if (body.overrides === undefined) return base;
    requireAdmin(principal, "overrides");
    try {
      return this.deps.overrides.apply(base, body.overrides);
    } catch (err) {
      if (err instanceof PolicyError) {
        const detail = err.problems.map((p) => `${formatPath(p.path)}: ${p.message}`).join("; ");
        throw new HttpProblem("VALIDATION_FAILED", detail);
      }
      throw err;
    }
  }

  private checkEligibility(body: RetrieveBody, compiled: CompiledPolicy): void {
    if (body.useMemory !== true) throw new Fallback("MEMORY_DISABLED");
    if (typeof body.sessionId !== "string" || !ID_PATTERN.test(body.sessionId))
      throw new Fallback("SESSION_INVALID");
    const query = body.query ?? "";
    if (query.trim().length === 0) throw new Fallback("INVALID_QUERY", "the query is blank");
    const max = compiled.policy.retrieval.maxQueryChars;
    if (query.length > max) throw new Fallback("INVALID_QUERY", `the query is longer than ${max} characters`);
  }

  private async search(
    backend: Backend,
    name: BackendName,
    cooldownKey: string,
    body: RetrieveBody,
    compiled: CompiledPolicy,
    clientSignal: AbortSignal | undefined,
  ): Promise<Candidate[]> {
    const { policy } = compiled;
    const timeoutMs = policy.timeouts.backendMs;
    const timeout = AbortSignal.timeout(timeoutMs);
    const signal = clientSignal ? AbortSignal.any([timeout, clientSignal]) : timeout;
    try {
      const existenceKey = `${cooldownKey}:${body.userId}`;
      let exists = this.deps.existence.get(existenceKey);
      if (exists === undefined) {
        exists = await raceSignal(backend.userExists(body.userId, { signal }), signal, name);
        this.deps.existence.set(existenceKey, exists);
      }
      if (!exists) throw new Fallback("COLLECTION_NOT_FOUND");
      return await raceSignal(
        backend.search({
          userId: body.userId,
          query: body.query ?? "",
          limit: policy.retrieval.topK * policy.retrieval.overfetch,
          searchType: policy.retrieval.searchType,
          policy,
          signal,
        }),
        signal,
        name,
      );
    } catch (err) {
      if (err instanceof Fallback) throw err;
      if (err instanceof BackendError) {
        if (err.kind === "rate_limited" && err.retryAfterMs)
          await this.deps.cooldown.start(cooldownKey, err.retryAfterMs);
        this.deps.logger.warn({ backend: name, kind: err.kind, status: err.status }, "backend call failed");
        throw new Fallback(codeForKind(err.kind, name), err.kind === "unavailable" ? err.message : undefined);
      }
      this.deps.logger.error({ err, backend: name }, "backend adapter threw an unexpected error");
      throw new Fallback(UNAVAILABLE[name]);
    }
  }
}

function requireAdmin(principal: Principal, field: string): void {
  if (!principal.scopes.has("admin")) throw new HttpProblem("FORBIDDEN", `${field}: needs the 'admin' scope`);
}

function round(ms: number): number {
  return Math.round(ms * 100) / 100;
}
