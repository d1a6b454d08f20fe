/**
 * The retrieval core: one request path for every door (/v1/retrieve, the Zep and OpenMemory drop-in routes, the
 * CLI, the policy playground's `compare` and `evaluate`). A door translates its wire request into a
 * `RetrievalRequest` and renders the typed `RetrievalOutcome`;
 * policy resolution, eligibility, limits, cooldown, cache, single-flight, existence, the backend call (with its
 * breaker, bulkhead and retry, src/resilience), the pipeline, fallbacks, spans and metrics all happen here, once.
 *
 * The flow is a list of steps (docs/request-lifecycle.md has each step's exits):
 *
 *     resolve policy → eligibility → admit → look up → fly (produce, store) → respond
 *
 * Each step returns `undefined` to go on or a `Halt` that ends the request; `respond` turns a halt into the
 * outcome (a declared fallback becomes the policy's action: skip, empty, or the cached payload).
 */
import { performance } from "node:perf_hooks";
import type { BackendProvider } from "../backends/registry";
import { type Backend, BackendError, type BackendErrorKind, type NativeAnswer } from "../backends/types";
import { payloadCacheKey, userCacheKeys } from "../cache/key";
import {
  type FlightUnlock,
  flightOptionsFor,
  type PreAcquisition,
  type SingleFlight,
} from "../cache/singleflight";
import type { CacheLookup, PayloadCache } from "../cache/types";
import { mapLimit } from "../concurrency";
import type { RecordedCandidates } from "../eval/candidates";
import { evaluatePolicy } from "../eval/run";
import { ExpansionSearches } from "../eval/searches";
import { budgetGrid, sweepPolicies } from "../eval/sweep";
import type { BackendCooldown } from "../limits/cooldown";
import type { RateLimiter } from "../limits/types";
import type { Logger } from "../logging/logger";
import { runPipeline } from "../pipeline";
import { firstCandidates } from "../pipeline/candidate";
import { expansionPlan, foundByBackend, keepExpanded, mergeExpanded } from "../pipeline/expansion";
import { resolveTimeScope } from "../pipeline/query/time-scope";
import { RecentCache } from "../pipeline/text/recent";
import type { Candidate } from "../pipeline/types";
import type { CompiledPolicy, OverrideCache } from "../policy/compile";
import type { PolicyRegistry } from "../policy/registry-types";
import type { BackendName, FallbackCode, Policy } from "../policy/schema";
import { userScope } from "../redis/keys";
import type { ReinforcementCounts, ReinforcementStore } from "../reinforcement/types";
import { raceSignal } from "../resilience/deadline";
import type { ShadowOffer, ShadowRunner } from "../rollout/shadow";
import { LinkedSignal } from "../signals";
import { recordRateLimitRejection, recordSufficiency } from "../telemetry/metrics";
import {
  inSpan,
  inStep,
  type PipelineTrace,
  startPipelineTrace,
  traceCacheLookup,
  traceRetrieval,
} from "../telemetry/tracing";
import type { Principal } from "../tenants/types";
import { type Admission, SeparateAdmission } from "./admission";
import { type DisclosureDeps, disclose, indexView } from "./disclosure";
import type { ExistenceCache } from "./existence";
import { answerWithFallback } from "./fallback";
import type { DetailsRequest, Refusal, RetrievalOutcome, RetrievalRequest, TimelineRequest } from "./outcome";
import { buildPayload, type ExpansionReport, type NativeRendering, type RetrievalPayload } from "./payload";
import { PayloadText } from "./payload-text";
import {
  type ComparisonOutcome,
  type ComparisonRequest,
  type ComparisonRun,
  type EvaluationOutcome,
  type EvaluationRequest,
  memoryTokens,
  type ResolvedChoice,
  resolveChoices,
  runCandidates,
  takeOf,
} from "./playground";
import { requireAdmin, resolvePolicy } from "./policy";
import { ID_PATTERN } from "./request";
import { redactDeep, screenDeep, shapeText } from "./text";

export type { DetailsRequest, Refusal, RetrievalOutcome, RetrievalRequest, TimelineRequest } from "./outcome";

export interface RetrievalDeps {
  policies: PolicyRegistry;
  backends: BackendProvider;
  cache: PayloadCache;
  limiter: RateLimiter;
  existence: ExistenceCache;
  cooldown: BackendCooldown;
  flights: SingleFlight;
  /** The limit, cooldown and cache checks (default: the three calls above; with Redis one script). */
  admission?: Admission;
  overrides: OverrideCache;
  logger: Logger;
  /** Reinforcement counts (policy `ranking.reinforcement`); absent = none kept, the signal reads unavailable. */
  reinforcement?: ReinforcementStore;
  /** Shadow policies (src/rollout/shadow.ts): produced answers offered to the tenant's shadow; absent = none run. */
  shadow?: ShadowRunner;
}

const UNAVAILABLE: Record<BackendName, FallbackCode> = {
  zep: "ZEP_UNAVAILABLE",
  openmemory: "OPENMEMORY_UNAVAILABLE",
  local: "LOCAL_UNAVAILABLE",
};

/** The declared fallback for a classified backend failure. */
export function codeForKind(kind: BackendErrorKind, backend: BackendName): FallbackCode {
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

/** What ends a request before (or instead of) a shaped payload. */
type Halt =
  | { kind: "fallback"; code: FallbackCode; detail?: string | undefined }
  /**
   * `text`: the payload's JSON text, from which the answer and its JSON are made (./payload-text.ts); `hit`: the
   * text is a cache hit's, answered with its hit metadata (`PayloadText.hitJson`).
   */
  | { kind: "payload"; payload: RetrievalPayload; text?: PayloadText; hit?: true }
  | Refusal
  | Extract<RetrievalOutcome, { kind: "rejected" }>;

const fallback = (code: FallbackCode, detail?: string): Halt => ({ kind: "fallback", code, detail });

/** A backend cooling down (it answered 429 with Retry-After): its declared RATE_LIMITED fallback. */
const coolingHalt = (turn: { backend: BackendName }, ms: number): Halt =>
  fallback("RATE_LIMITED", `${turn.backend} asked to wait ${Math.ceil(ms / 1000)} s`);

/** One request on its way through the steps. */
interface Turn {
  req: RetrievalRequest;
  compiled: CompiledPolicy;
  backend: BackendName;
  cacheKey: string;
  cooldownKey: string;
  explain: boolean;
  started: number;
  /** The chat turn's time (epoch ms): the request's `turnTime`, else the clock when it arrived. */
  turnTime: number;
  /** Candidates asked of the backend (default the policy's `topK × overfetch`; the playground: the most any of its policies takes). */
  limit?: number;
  /** The cache read started by `admit`, used by `lookUp`. */
  cached?: Promise<CacheLookup | undefined>;
  /** The flight lock `admit` tried with a miss (Redis): handed to the flight by `fly`, else released by `run`. */
  flight?: Promise<PreAcquisition | undefined>;
  /** Set by `produce` when the tenant has a shadow policy: offered once the outcome is made (`run`). */
  shadow?: ShadowOffer;
}

/** What a produced payload is made of, before it is a payload. Thrown inside a flight to share a fallback. */
class FlightHalt extends Error {
  constructor(readonly halt: Halt) {
    super(halt.kind === "fallback" ? halt.code : halt.kind);
  }
}

/** Queries of at most this many code units have their cache key remembered (`turnFor`). */
const MEMO_QUERY_CHARS = 512;
const DAY_MS = 86_400_000;
/**
 * Cache keys of recent plain retrievals by what they are made of (tenant, backend, user, policy hash, day, query):
 * the key is a pure function of these, so one process-wide bounded cache serves every service (the shared
 * RecentCache, ~1,024 keys a generation).
 */
const recentKeys = new RecentCache<string>(1024, 1024 * 640);

export class RetrievalService {
  private readonly admission: Admission;

  constructor(private readonly deps: RetrievalDeps) {
    this.admission = deps.admission ?? new SeparateAdmission(deps);
  }

  /** One retrieval in its `memgate.retrieve` span, with the retrieval metrics (src/telemetry). */
  retrieve(req: RetrievalRequest): Promise<RetrievalOutcome> {
    const subject = {
      tenantId: req.principal.tenant.id,
      userId: req.userId,
      queryChars: req.query.length,
      door: req.native?.kind ?? req.door ?? "retrieve",
    };
    return traceRetrieval(subject, () => this.run(req));
  }

  /** Progressive disclosure, layer 3 (./disclosure.ts): the full shaped content of some of the user's memories. */
  details(req: DetailsRequest): Promise<RetrievalOutcome> {
    const subject = {
      tenantId: req.principal.tenant.id,
      userId: req.userId,
      queryChars: 0,
      door: req.door ?? "retrieve",
    };
    return traceRetrieval(subject, () => disclose(this.disclosureDeps(), req), "memgate.details");
  }

  /** Progressive disclosure, layer 2 (./disclosure.ts): the turns around one of the user's memories, as index lines. */
  timeline(req: TimelineRequest): Promise<RetrievalOutcome> {
    const subject = {
      tenantId: req.principal.tenant.id,
      userId: req.userId,
      queryChars: 0,
      door: req.door ?? "retrieve",
    };
    return traceRetrieval(subject, () => disclose(this.disclosureDeps(), req), "memgate.timeline");
  }

  private disclosureDeps(): DisclosureDeps {
    return {
      ...this.deps,
      admission: this.admission,
      codeFor: (err, backend) => codeForKind(err.kind, backend),
      unavailable: (backend) => UNAVAILABLE[backend],
    };
  }

  /**
   * Ends the cached answers of the tenant's users (fresh and stale; on every replica with Redis) and lets no open
   * flight of theirs in this replica be joined: called after a write or delete through the gateway (issue 26
   * finding 7). Never throws.
   */
  async forgetUsers(tenantId: string, userIds: readonly string[]): Promise<void> {
    for (const userId of new Set(userIds)) {
      this.deps.flights.forget(userCacheKeys(tenantId, userId).prefix);
      await this.deps.cache.invalidateUser(tenantId, userId).catch((err: unknown) => {
        this.deps.logger.warn({ err }, "cache invalidation failed");
      });
    }
  }

  /**
   * The policy a door's non-retrieval call applies (Zep `thread.addMessages` with `return_context`: the write goes
   * through unchanged, its returned context is shaped with `shapeText`), resolved as for a retrieval.
   */
  policyFor(
    principal: Principal,
    ask: { policy?: string | undefined; policyField: string },
  ): CompiledPolicy | Refusal {
    return resolvePolicy(this.deps, principal, {
      name: ask.policy,
      field: ask.policyField,
      overrides: undefined,
      topK: undefined,
    });
  }

  private async run(req: RetrievalRequest): Promise<RetrievalOutcome> {
    const turn = this.begin(req);
    if (turn.kind === "refused") return turn;
    const halt =
      (await this.screen(turn)) ?? // eligibility, then admit (limit, cooldown), in one span
      (await this.lookUp(turn)) ??
      (await this.fly(turn));
    // A lock taken with the miss by a request that did not fly (refused after all): released, off the answer's path.
    if (turn.flight !== undefined)
      void turn.flight.then((pre) => this.deps.flights.abandon(turn.cacheKey, pre));
    const outcome = await this.respond(turn, halt);
    // A produced answer's shadow run (src/rollout/shadow.ts) is queued now, as the answer goes back to its door.
    if (turn.shadow !== undefined) this.deps.shadow?.offer(turn.shadow);
    if (req.detail !== "index" || (outcome.kind !== "payload" && outcome.kind !== "fallback")) return outcome;
    // Layer 1: the same (cached, shared) payload, answered as index lines.
    const index = indexView(outcome.payload, req.query, turn.compiled, turn.turnTime);
    return outcome.kind === "payload"
      ? { kind: "payload", payload: outcome.payload, index }
      : { ...outcome, index };
  }

  /** Step 1, resolve: the policy, the backend, the keys. Refuses what the caller may not ask for. */
  private begin(req: RetrievalRequest): (Turn & { kind: "turn" }) | Refusal {
    const { principal } = req;
    const explain = req.explain === true;
    if (explain) {
      const refused = requireAdmin(principal, "explain");
      if (refused) return refused;
    }
    const compiled = resolvePolicy(this.deps, principal, {
      name: req.policy,
      field: req.policyField ?? "policy",
      overrides: req.overrides,
      topK: req.topK,
      userId: req.userId, // a tenant's canary (src/rollout/canary.ts)
    });
    if ("kind" in compiled) return compiled;
    return this.turnFor(req, compiled, explain);
  }

  /** The backend (the request's, the policy's or the tenant's default) and the keys of a request under a policy. */
  private turnFor(
    req: RetrievalRequest,
    compiled: CompiledPolicy,
    explain: boolean,
  ): (Turn & { kind: "turn" }) | Refusal {
    const { tenant } = req.principal;
    if (req.backend !== undefined && !this.deps.backends.has(tenant, req.backend)) {
      return {
        kind: "refused",
        code: "FORBIDDEN",
        detail: `backend: this tenant has no "${req.backend}" backend`,
      };
    }
    const backend: BackendName = req.backend ?? compiled.policy.backend ?? tenant.defaultBackend;
    const turnTime = req.turnTime ?? Date.now();
    const analyzed = usesQueryAnalysis(compiled.policy);
    // A plain retrieval's key is remembered (`recentKeys`): a user's repeated question is not analysed and hashed
    // again on every turn. The resolved time scope is a function of the turn's UTC day, so the day is in the memo's key.
    const memo =
      req.native === undefined && req.intent === undefined && req.query.length <= MEMO_QUERY_CHARS
        ? `${tenant.id}\u0000${backend}\u0000${req.userId}\u0000${compiled.hash}\u0000${analyzed ? Math.floor(turnTime / DAY_MS) : ""}\u0000${req.query}`
        : undefined;
    const known = memo === undefined ? undefined : recentKeys.get(memo);
    const cacheKey = known ?? this.cacheKeyOf(req, compiled, backend, turnTime, analyzed);
    if (memo !== undefined && known === undefined) recentKeys.set(memo, cacheKey, cacheKey.length);
    return {
      kind: "turn",
      req,
      compiled,
      backend,
      cacheKey,
      cooldownKey: `${tenant.id}:${backend}`,
      explain,
      started: performance.now(),
      turnTime,
    };
  }

  /** A request's payload cache key (`payloadCacheKey`) under a policy and backend, at the turn's time. */
  private cacheKeyOf(
    req: RetrievalRequest,
    compiled: CompiledPolicy,
    backend: BackendName,
    turnTime: number,
    analyzed: boolean,
  ): string {
    // A question with a time scope ("last month") shapes differently on another day: its resolved scope is part
    // of the key. Other questions share entries whatever the turn's time.
    const scope = analyzed ? resolveTimeScope(req.query, turnTime) : undefined;
    const scoped = scope === undefined ? undefined : { timeScope: [scope.start, scope.end] };
    // A caller's own intent shapes differently: part of the key (only then, so other keys stay as they were).
    const scopeVariant = req.intent === undefined ? scoped : { ...scoped, intent: req.intent };
    const variant =
      req.native === undefined
        ? scopeVariant
        : scopeVariant === undefined
          ? req.native
          : [req.native, scopeVariant];
    return payloadCacheKey({
      tenantId: req.principal.tenant.id,
      backend,
      userId: req.userId,
      query: req.query,
      policyHash: compiled.hash,
      ...(variant === undefined ? {} : { variant }),
    });
  }

  /** Steps 2 and 3 as the `memgate.eligibility` step (src/telemetry/tracing.ts): a fallback decided here shows on it. */
  private screen(turn: Turn): Promise<Halt | undefined> {
    return inStep("memgate.eligibility", async (attributes) => {
      const halt = this.eligibility(turn) ?? (await this.admit(turn));
      if (halt?.kind === "fallback") attributes["memgate.fallback.code"] = halt.code;
      return halt;
    });
  }

  /** Step 2, eligibility: a chat turn that does not use memory, a bad session, a blank or overlong query. */
  private eligibility(turn: Turn): Halt | undefined {
    const { req, compiled } = turn;
    if (req.turn !== undefined) {
      if (req.turn.useMemory !== true) return fallback("MEMORY_DISABLED");
      const { sessionId } = req.turn;
      if (typeof sessionId !== "string" || !ID_PATTERN.test(sessionId)) return fallback("SESSION_INVALID");
    }
    if (req.needs?.query !== false && req.query.trim().length === 0)
      return fallback("INVALID_QUERY", "the query is blank");
    const max = compiled.policy.retrieval.maxQueryChars;
    if (req.query.length > max)
      return fallback("INVALID_QUERY", `the query is longer than ${max} characters`);
    return undefined;
  }

  /**
   * Step 3, admit: the per-user limit is consumed and the cooldown and the cache are read at once (with Redis one
   * script, one round trip: ./admission-redis.ts). Decisions in order: limit, cooldown; a refused request never
   * uses the cache read.
   */
  private async admit(turn: Turn): Promise<Halt | undefined> {
    const { req, compiled } = turn;
    const flight = flightOptionsFor(compiled.policy);
    const checks = this.admission.check({
      // The user's scope: its Redis Cluster slot tag is the one of the user's cache entries (src/redis/keys.ts).
      rateKey: userScope(req.principal.tenant.id, req.userId),
      rule: compiled.policy.rateLimit.perUser,
      cooldownKey: turn.cooldownKey,
      cacheKey: turn.explain ? undefined : turn.cacheKey,
      // A miss tries the flight's lock in the same step (what `fly` would do first), when flights share one.
      flight: turn.explain || !flight.shareAcrossReplicas ? undefined : { lockMs: flight.lockMs },
    });
    if (checks.cached !== undefined) turn.cached = checks.cached;
    if (checks.flight !== undefined) turn.flight = checks.flight;
    const decision = await checks.limit;
    if (!decision.allowed) {
      recordRateLimitRejection("user");
      return fallback("RATE_LIMITED", `retry in ${Math.ceil(decision.retryAfterMs / 1000)} s`);
    }
    const cooling = await checks.cooldownMs;
    if (cooling > 0) {
      recordRateLimitRejection("backend");
      return coolingHalt(turn, cooling);
    }
    return undefined;
  }

  /**
   * The playground's step 3: no per-user limit is taken, but a backend that asked memgate to back off (429 with
   * Retry-After) is not called while it cools down — the same cooldown `admit` reads, so a tried policy can neither
   * ignore it nor keep calling a backend that real traffic is kept away from.
   */
  private async playgroundCooldown(turn: Turn): Promise<Halt | undefined> {
    const cooling = await this.deps.cooldown.remaining(turn.cooldownKey);
    return cooling > 0 ? coolingHalt(turn, cooling) : undefined;
  }

  /**
   * Step 4, look up: a fresh cache entry answers (a hit). A plain retrieval's hit answers from the entry's JSON
   * text (only its metadata is read, once per entry, and only its `queryTime` is written per hit:
   * ./payload-text.ts); a door's from its payload.
   */
  private async lookUp(turn: Turn): Promise<Halt | undefined> {
    const { cached } = turn;
    if (cached === undefined) return undefined;
    const hit = await traceCacheLookup(() => cached);
    if (!hit?.fresh) return undefined;
    const text = turn.req.native === undefined ? hit.text : undefined;
    if (text !== undefined)
      return { kind: "payload", payload: text.answer(text.hitMetadata()), text, hit: true };
    return {
      kind: "payload",
      payload: { ...hit.payload, metadata: { ...hit.payload.metadata, cache: "hit" } },
    };
  }

  /**
   * Step 5, fly: produce the payload (existence, the backend call, the pipeline) and store it; identical
   * concurrent requests share one production, within this replica and across replicas (src/cache/singleflight.ts).
   * A shared production is not tied to one client's abort signal; the policy's backend timeout bounds it.
   */
  private async fly(turn: Turn): Promise<Halt> {
    const { compiled, cacheKey } = turn;
    // The lock the admission took with the miss (and the generation read with it), now the flight's.
    const tried = turn.flight;
    turn.flight = undefined;
    const pre = tried === undefined ? undefined : await tried;
    // The user's cache generation, read as the production starts (or with the lock it starts with): if the user's
    // memories are written or deleted through the gateway meanwhile (invalidateUser), what this production found
    // is not stored.
    let generation: Promise<number | undefined> = Promise.resolve(undefined);
    // The produced payload's JSON text, made once: the answer (/v1/retrieve) and the cache entry are the same bytes
    // but the metadata span (./payload-text.ts); with Redis encoded once too, as the entry stores it. Not for an
    // explain payload: its trace is answered, never cached.
    let text: PayloadText | undefined;
    const textOf = (payload: RetrievalPayload): PayloadText | undefined => {
      if (payload.trace !== undefined) return undefined;
      text ??= this.deps.cache.kind === "redis" ? PayloadText.of(payload).encoded() : PayloadText.of(payload);
      return text;
    };
    const produce = async (signal: AbortSignal | undefined): Promise<RetrievalPayload> => {
      generation =
        pre?.token != null && pre.generation !== undefined
          ? Promise.resolve(pre.generation)
          : this.deps.cache.generation(cacheKey).catch(() => undefined);
      const halt = await this.produce(turn, signal);
      if (halt.kind !== "payload") throw new FlightHalt(halt);
      return halt.payload;
    };
    // Written after the answer; a failed write is logged, never the caller's problem. The flight's lock goes with
    // the write when the cache can release it (`unlock`: src/cache/singleflight.ts).
    const store = async (payload: RetrievalPayload, unlock?: FlightUnlock): Promise<boolean> => {
      const { trace: _trace, ...cacheable } = payload;
      const since = await generation;
      if (since === undefined) return false;
      // Redis stores the text; the in-process cache keeps the one /v1/retrieve answers from (a door's never needs one).
      const shared =
        this.deps.cache.kind === "redis" || turn.req.native === undefined ? textOf(payload) : undefined;
      const { ttlSeconds, staleSeconds } = compiled.policy.cache;
      return this.deps.cache
        .set(cacheKey, cacheable, ttlSeconds, staleSeconds, since, shared, unlock)
        .catch((err: unknown) => {
          this.deps.logger.warn({ err }, "cache write failed");
          return false;
        });
    };
    try {
      if (turn.explain) {
        const payload = await produce(turn.req.signal);
        await store(payload);
        return { kind: "payload", payload };
      }
      const flight = await this.deps.flights.run(
        cacheKey,
        flightOptionsFor(compiled.policy),
        () => produce(undefined),
        store,
        pre,
      );
      // Another replica's (or a just-finished) result read from the cache is a hit.
      const payload = flight.payload as RetrievalPayload;
      if (flight.role === "remote")
        return { kind: "payload", payload: { ...payload, metadata: { ...payload.metadata, cache: "hit" } } };
      // This request's own production answers /v1/retrieve from the text the cache entry is made of.
      const answered =
        flight.role === "leader" && turn.req.native === undefined ? textOf(payload) : undefined;
      return answered === undefined
        ? { kind: "payload", payload }
        : { kind: "payload", payload, text: answered };
    } catch (err) {
      if (err instanceof FlightHalt) return err.halt;
      throw err;
    }
  }

  /** The backend's answer through the policy. Never throws: every failure is a declared fallback. */
  private async produce(turn: Turn, clientSignal: AbortSignal | undefined): Promise<Halt> {
    const searched = await this.fetch(turn, clientSignal);
    if ("kind" in searched) return searched;
    const counts = await this.reinforcementCounts(turn, searched.candidates);
    const first = this.shape(turn, searched.candidates, searched.native, true, undefined, counts);
    const expanded = await this.expand(turn, first, searched.candidates, clientSignal, counts, true);
    const final = expanded?.halt ?? first;
    const sufficiency = final.kind === "payload" ? final.payload.metadata.sufficiency : undefined;
    if (sufficiency !== undefined)
      recordSufficiency(sufficiency.verdict, sufficiency.expanded, sufficiency.expansion?.with);
    if (counts !== undefined && final.kind === "payload") this.reinforce(turn, final.payload);
    if (final.kind === "payload") this.prepareShadow(turn, searched.candidates, counts, final.payload);
    return final;
  }

  /**
   * What a produced answer offers the tenant's shadow policy (src/rollout/shadow.ts): the same candidates, as the
   * first `shape` got them. Kept on the turn and offered by `run` once the outcome is made, so the run is queued
   * behind the answer, never in the middle of a flight. Not for `explain` or `overrides`.
   */
  private prepareShadow(
    turn: Turn,
    candidates: readonly Candidate[],
    counts: ReinforcementCounts | undefined,
    payload: RetrievalPayload,
  ): void {
    const { req } = turn;
    const rule = req.principal.tenant.policies.shadow;
    if (this.deps.shadow === undefined || rule === undefined || turn.explain || req.overrides !== undefined)
      return;
    turn.shadow = {
      tenant: req.principal.tenant.id,
      rule,
      served: turn.compiled,
      input: {
        userId: req.userId,
        query: req.query,
        candidates,
        backend: turn.backend,
        turnTime: turn.turnTime,
        ...(req.native === undefined ? {} : { citations: false as const }),
        ...(counts === undefined ? {} : { reinforcement: counts }),
        ...(req.intent === undefined ? {} : { intent: req.intent }),
      },
      answer: { ids: payload.memories.map((m) => m.id), tokens: payload.metadata.totalTokens },
      topK: req.topK,
    };
  }

  /**
   * The reinforcement counts of the candidates (policy `ranking.reinforcement` with ranking on): one read of the
   * user's counts; undefined when the policy does not use them. Never throws (the store reports unavailable).
   */
  private async reinforcementCounts(
    turn: Turn,
    candidates: readonly Candidate[],
  ): Promise<ReinforcementCounts | undefined> {
    const { ranking } = turn.compiled.policy;
    if (!ranking.enabled || ranking.reinforcement?.enabled !== true) return undefined;
    const store = this.deps.reinforcement;
    if (store === undefined) return { counts: new Map(), available: false };
    const ids = candidates.map((c) => c.id);
    return store.read(turn.req.principal.tenant.id, turn.req.userId, ids).catch(() => ({
      counts: new Map(),
      available: false,
    }));
  }

  /** After a produced answer: +1 for each kept memory, in one call, not awaited (a cache hit never gets here). */
  private reinforce(turn: Turn, payload: RetrievalPayload): void {
    const r = turn.compiled.policy.ranking.reinforcement;
    const store = this.deps.reinforcement;
    if (store === undefined || r === undefined || payload.memories.length === 0) return;
    const ids = payload.memories.map((m) => m.id);
    store
      .add(turn.req.principal.tenant.id, turn.req.userId, ids, r.ttlDays * 86_400)
      .catch((err: unknown) => this.deps.logger.warn({ err }, "reinforcement increment failed"));
  }

  /**
   * The expansion round (policy `sufficiency.expand`): a context that is not `sufficient` gets one more search, as
   * `expansionPlan` says (`sufficiency.expandWith`: the question for `expandFactor` × the candidates — not when the
   * backend returned fewer than asked: it has no more —, or its missing words), if at least half the policy's
   * backend deadline is left; its candidates are merged after the first ones (by id) and shaped again for the
   * question. Its answer replaces the first only when it is at least as complete; either way
   * `metadata.sufficiency.expansion` says what was searched for. A failed second search keeps the first answer.
   * Not for a door's own upstream call. `observed` as `shape`'s (the playground's tried policies are not). Returns
   * the answer and the candidates it was shaped from (the merged ones when the round's answer is kept).
   */
  private async expand(
    turn: Turn,
    first: Halt,
    candidates: readonly Candidate[],
    clientSignal: AbortSignal | undefined,
    counts: ReinforcementCounts | undefined,
    observed: boolean,
  ): Promise<{ halt: Halt; from: readonly Candidate[] } | undefined> {
    const { policy } = turn.compiled;
    const before = first.kind === "payload" ? first.payload.metadata.sufficiency : undefined;
    // The decision shared with `memgate eval` (../pipeline/expansion.ts); the deadline and doors are the core's.
    const asked = turn.limit ?? policy.retrieval.topK * policy.retrieval.overfetch;
    const plan = expansionPlan(policy, before, turn.req.query, asked, foundByBackend(candidates));
    if (plan === undefined || before === undefined || first.kind !== "payload") return undefined;
    if (turn.req.native !== undefined) return undefined;
    const left = policy.timeouts.backendMs - (performance.now() - turn.started);
    if (left < policy.timeouts.backendMs / 2) return undefined;
    // The same user, policy and backend: only the query (and how many) differ.
    const search = { ...turn, req: { ...turn.req, query: plan.query }, limit: plan.limit };
    const again = await this.fetch(search, clientSignal, Math.floor(left));
    if ("kind" in again) return undefined;
    const merged = mergeExpanded(candidates, again.candidates);
    const report = {
      with: plan.with,
      query: plan.query,
      limit: plan.limit,
      added: merged.length - candidates.length,
    };
    if (report.added === 0)
      return { halt: reported(first, before, { ...report, kept: false }), from: candidates };
    const more =
      counts === undefined
        ? undefined
        : await this.reinforcementCounts(turn, merged.slice(candidates.length));
    const second = this.shape(
      { ...turn, limit: plan.limit },
      merged,
      undefined,
      observed,
      report,
      mergeCounts(counts, more),
    );
    const after = second.kind === "payload" ? second.payload.metadata.sufficiency : undefined;
    if (second.kind === "payload" && after !== undefined && keepExpanded(before, after))
      return { halt: reported(second, after, { ...report, kept: true }), from: merged };
    return { halt: reported(first, before, { ...report, kept: false }), from: candidates };
  }

  /** The tenant's backend instance, its existence check and its search (./service.ts `search`). */
  private async fetch(
    turn: Turn,
    clientSignal: AbortSignal | undefined,
    timeoutMs?: number,
  ): Promise<{ candidates: Candidate[]; native?: NativeAnswer } | Halt> {
    const { req, backend: name } = turn;
    const instance = this.deps.backends.get(req.principal.tenant, name);
    if (!instance) return fallback(UNAVAILABLE[name], "backend not configured for this tenant");
    let backend: Backend;
    try {
      backend = await instance;
    } catch (err) {
      this.deps.logger.error(
        { err, backend: name, tenant: req.principal.tenant.id },
        "backend could not be created",
      );
      return fallback(UNAVAILABLE[name], "backend could not be initialised");
    }
    return this.search(turn, backend, clientSignal, timeoutMs);
  }

  /**
   * Candidates through the turn's policy (stages 2–8 and format) into a payload; a stage that throws:
   * `POLICY_FAILED`. `observed`: one span per stage and the stage metrics (redactions, injection flags, duplicates).
   */
  private shape(
    turn: Turn,
    candidates: readonly Candidate[],
    native: NativeAnswer | undefined,
    observed: boolean,
    /** The expansion round's second run: what it searched for. */
    expansion?: Omit<ExpansionReport, "kept">,
    reinforcement?: ReinforcementCounts,
  ): Halt {
    const { req, compiled, backend: name } = turn;
    const expanded = expansion !== undefined;
    let traced: PipelineTrace | undefined;
    try {
      // Not observed (the playground's tried policies): no span, no stage metrics.
      traced = observed
        ? startPipelineTrace({
            policy: compiled.policy.name,
            backend: name,
            expanded,
            ...(expansion === undefined ? {} : { expandedWith: expansion.with }),
          })
        : undefined;
      const result = runPipeline(
        {
          userId: req.userId,
          query: req.query,
          candidates,
          backend: name,
          explain: turn.explain,
          turnTime: turn.turnTime,
          asked: turn.limit ?? compiled.policy.retrieval.topK * compiled.policy.retrieval.overfetch,
          ...(req.native === undefined ? {} : { citations: false as const }),
          ...(reinforcement === undefined ? {} : { reinforcement }),
          ...(req.intent === undefined ? {} : { intent: req.intent }),
          ...(expansion === undefined
            ? {}
            : { expansion: { with: expansion.with, query: expansion.query, added: expansion.added } }),
        },
        compiled,
        traced?.observer,
      );
      traced?.end(result);
      const payload = buildPayload(result, compiled, {
        backend: name,
        cache: turn.explain || this.deps.cache.available?.() === false ? "bypass" : "miss",
        queryTimeMs: performance.now() - turn.started,
        explain: turn.explain,
        expanded,
      });
      if (native !== undefined) payload.native = renderable(native, payload, compiled);
      return { kind: "payload", payload };
    } catch (err) {
      traced?.fail(err);
      this.deps.logger.error({ err, policy: compiled.policy.name }, "policy pipeline failed");
      return fallback("POLICY_FAILED");
    }
  }

  /**
   * The policy playground (admin; src/http/routes/playground.ts): one search, then the SAME candidates through
   * each policy's pipeline with the explain trace — for each, what /v1/retrieve with `explain` would answer, its
   * expansion round (policy `sufficiency.expand`: a second search of its own) included; the candidate table then
   * holds the round's added candidates when its answer is kept. Not
   * cached, no per-user limit; a backend cooling down is not called. A query the core would not search, a backend
   * cooling down, or a failed search is its declared fallback code, and each policy answers with its declared action.
   */
  compare(req: ComparisonRequest): Promise<ComparisonOutcome> {
    return inSpan("memgate.playground.compare", async () => {
      const choices = resolveChoices(this.deps, req.principal, req.policies);
      if ("kind" in choices) return choices;
      const turn = this.playgroundTurn(req, choices);
      if (turn.kind === "refused") return turn;
      const searched =
        this.eligibility(turn) ??
        (await this.playgroundCooldown(turn)) ??
        (await this.fetch(turn, req.signal));
      const halt = "kind" in searched ? searched : undefined;
      const fetched = "kind" in searched ? [] : searched.candidates;
      const runs: ComparisonRun[] = [];
      for (const choice of choices) {
        const { compiled } = choice;
        const candidates = firstCandidates(fetched, takeOf(compiled));
        const own = { ...turn, compiled, limit: takeOf(compiled) };
        // Counts are read (the table shows them) but a tried policy's kept memories are not counted.
        const counts = halt === undefined ? await this.reinforcementCounts(own, candidates) : undefined;
        // Not observed: a policy being tried is not traffic (the dashboards' redaction and injection counts).
        const first = halt ?? this.shape(own, candidates, undefined, false, undefined, counts);
        // Its expansion round too (its own second search), as /v1/retrieve would run it.
        const expanded =
          halt === undefined
            ? await this.expand(own, first, candidates, req.signal, counts, false)
            : undefined;
        const shaped = expanded?.halt ?? first;
        const payload =
          shaped.kind === "payload" ? shaped.payload : await this.playgroundFallback(own, shaped);
        runs.push({
          label: choice.label,
          source: choice.source,
          maxTokens: effectiveBudget(payload) ?? compiled.policy.retrieval.maxTokens,
          tokenizer: compiled.ctx.tokenizer.name,
          candidates: runCandidates(expanded?.from ?? candidates, compiled),
          payload,
          tokens: memoryTokens(payload.memories, compiled),
        });
      }
      const code = halt?.kind === "fallback" ? halt.code : undefined;
      const message = runs[0]?.payload.metadata.fallback?.message;
      return {
        kind: "compared",
        comparison: {
          tenant: req.principal.tenant.id,
          userId: req.userId,
          query: req.query,
          backend: turn.backend,
          fetched: fetched.length,
          fallback: code === undefined ? null : { code, message: message ?? code },
          runs,
        },
      };
    });
  }

  /**
   * `memgate eval` in the playground (admin): every golden-set question's candidates fetched once by the core's
   * search from the tenant's backend, then each policy measured on them (src/eval/run.ts). A failed search counts
   * as a question without candidates, as in `memgate eval`. While the backend cools down (a 429 with Retry-After,
   * maybe from this very run) and once the caller has gone (`signal`), no more searches go out: the remaining
   * questions count as failed with that code (RATE_LIMITED, ABORTED).
   */
  evaluate(req: EvaluationRequest): Promise<EvaluationOutcome> {
    return inSpan("memgate.playground.evaluate", async () => {
      const choices = resolveChoices(this.deps, req.principal, req.policies);
      if ("kind" in choices) return choices;
      const first = choices[0];
      if (first === undefined)
        return { kind: "refused", code: "VALIDATION_FAILED", detail: "policies: give a policy" };
      const grid =
        req.budgets === undefined
          ? undefined
          : budgetGrid(
              choices.map((c) => ({ label: c.label, compiled: c.compiled })),
              req.budgets,
            );
      if (grid !== undefined && "problem" in grid) {
        return { kind: "refused", code: "VALIDATION_FAILED", detail: `budgets: ${grid.problem}` };
      }
      const limit = Math.max(...choices.map((c) => takeOf(c.compiled)));
      const { searchType } = first.compiled.policy.retrieval;
      // The backend is the same for every question: a refusal (not the tenant's backend) is one answer.
      const probe = this.playgroundTurn({ ...req, userId: "", query: "" }, choices);
      if (probe.kind === "refused") return probe;
      let done = 0;
      const progress = (line: RecordedCandidates): RecordedCandidates => {
        req.onProgress?.(++done, req.questions.length);
        return line;
      };
      const lines = await mapLimit(req.questions, 4, async (q): Promise<RecordedCandidates> => {
        const base = {
          id: q.id,
          userId: q.userId,
          query: q.query,
          backend: probe.backend,
          searchType,
          limit,
        };
        const turn = this.playgroundTurn({ ...req, userId: q.userId, query: q.query }, choices);
        if (turn.kind === "refused") return progress({ ...base, results: [], error: turn.detail });
        if (req.signal?.aborted) return progress({ ...base, results: [], error: "ABORTED" });
        const searched =
          this.eligibility(turn) ??
          (await this.playgroundCooldown(turn)) ??
          (await this.fetch(turn, req.signal));
        if (!("kind" in searched)) return progress({ ...base, results: searched.candidates });
        const error = searched.kind === "fallback" ? searched.code : searched.kind;
        return progress({ ...base, results: [], error });
      });
      // An expansion round searching with the missing words: the same core search, for the question's user.
      const searches = new ExpansionSearches(async (line, query, n) => {
        const turn = this.playgroundTurn({ ...req, userId: line.userId, query }, choices);
        if (turn.kind === "refused") throw new Error(turn.detail);
        const found =
          (await this.playgroundCooldown(turn)) ?? (await this.fetch({ ...turn, limit: n }, req.signal));
        if ("kind" in found) throw new Error(found.kind === "fallback" ? found.code : found.kind);
        return found.candidates;
      });
      const reports = [];
      for (const c of choices) {
        const { outcomes: _outcomes, ...report } = await evaluatePolicy(
          req.questions,
          lines,
          { label: c.label, compiled: c.compiled },
          { search: searches.search },
        );
        reports.push(report);
      }
      const sweep =
        grid === undefined
          ? undefined
          : await sweepPolicies(req.questions, lines, grid, { search: searches.search });
      return {
        kind: "evaluated",
        evaluation: {
          tenant: req.principal.tenant.id,
          backend: probe.backend,
          questions: req.questions.length,
          users: new Set(req.questions.map((q) => q.userId)).size,
          failed: lines.filter((r) => r.error !== undefined).length,
          reports,
          ...(sweep === undefined ? {} : { sweep }),
        },
      };
    });
  }

  /** A playground search: the first policy's backend settings, as many candidates as the hungriest policy takes. */
  private playgroundTurn(
    ask: { principal: Principal; userId: string; query: string; backend?: BackendName | undefined },
    choices: readonly ResolvedChoice[],
  ): (Turn & { kind: "turn" }) | Refusal {
    const first = choices[0];
    if (first === undefined) {
      return { kind: "refused", code: "VALIDATION_FAILED", detail: "policies: give one or two policies" };
    }
    const req: RetrievalRequest = { principal: ask.principal, userId: ask.userId, query: ask.query };
    if (ask.backend !== undefined) req.backend = ask.backend;
    const turn = this.turnFor(req, first.compiled, true);
    if (turn.kind === "refused") return turn;
    return { ...turn, limit: Math.max(...choices.map((c) => takeOf(c.compiled))) };
  }

  /** A playground policy's declared action for a fallback (never a cached payload: the playground has no key). */
  private async playgroundFallback(turn: Turn, halt: Halt): Promise<RetrievalPayload> {
    const code = halt.kind === "fallback" ? halt.code : "POLICY_FAILED";
    const detail = halt.kind === "fallback" ? halt.detail : undefined;
    return answerWithFallback(code, detail, {
      compiled: turn.compiled,
      userId: turn.req.userId,
      backend: turn.backend,
      cache: this.deps.cache,
      queryTimeMs: () => performance.now() - turn.started,
      explain: true,
    });
  }

  /** The existence check and the search, under the policy's backend timeout; failures classified. */
  private async search(
    turn: Turn,
    backend: Backend,
    clientSignal: AbortSignal | undefined,
    timeoutMs?: number,
  ): Promise<{ candidates: Candidate[]; native?: NativeAnswer } | Halt> {
    const { req, compiled, backend: name } = turn;
    const { policy } = compiled;
    const deadline = new LinkedSignal(clientSignal, timeoutMs ?? policy.timeouts.backendMs);
    const { signal } = deadline;
    const limit = turn.limit ?? policy.retrieval.topK * policy.retrieval.overfetch;
    try {
      if (req.needs?.user !== false) {
        const existenceKey = `${turn.cooldownKey}:${req.userId}`;
        let exists = this.deps.existence.get(existenceKey);
        if (exists === undefined) {
          exists = await raceSignal(backend.userExists(req.userId, { signal }), signal, name);
          this.deps.existence.set(existenceKey, exists);
        }
        if (!exists) return fallback("COLLECTION_NOT_FOUND");
      }
      if (req.native !== undefined) {
        if (backend.searchNative === undefined)
          return fallback(UNAVAILABLE[name], "no such call on this backend");
        const native = await raceSignal(
          backend.searchNative({ native: req.native, limit, policy, signal }),
          signal,
          name,
        );
        return { candidates: native.candidates, native };
      }
      const candidates = await raceSignal(
        backend.search({
          userId: req.userId,
          query: req.query,
          limit,
          searchType: policy.retrieval.searchType,
          policy,
          signal,
        }),
        signal,
        name,
      );
      return { candidates };
    } catch (err) {
      if (err instanceof BackendError) {
        if (err.kind === "rate_limited" && err.retryAfterMs)
          await this.deps.cooldown.start(turn.cooldownKey, err.retryAfterMs);
        this.deps.logger.warn({ backend: name, kind: err.kind, status: err.status }, "backend call failed");
        if (err.kind === "invalid_query" && err.response !== undefined && req.native !== undefined)
          return { kind: "rejected", response: err.response };
        return fallback(codeForKind(err.kind, name), err.kind === "unavailable" ? err.message : undefined);
      }
      this.deps.logger.error({ err, backend: name }, "backend adapter threw an unexpected error");
      return fallback(UNAVAILABLE[name]);
    } finally {
      deadline.dispose();
    }
  }

  /** Step 6, respond: the outcome, with the request's own query time; a fallback becomes its declared action. */
  private async respond(turn: Turn, halt: Halt): Promise<RetrievalOutcome> {
    const queryTime = round(performance.now() - turn.started);
    if (halt.kind === "payload") {
      const { payload, text } = halt;
      const metadata = { ...payload.metadata, queryTime };
      if (text === undefined) return { kind: "payload", payload: { ...payload, metadata } };
      const json = halt.hit === true ? text.hitJson(queryTime) : text.json(metadata);
      return { kind: "payload", payload: text.answer(metadata), json };
    }
    if (halt.kind !== "fallback") return halt;
    const payload = await answerWithFallback(halt.code, halt.detail, {
      compiled: turn.compiled,
      userId: turn.req.userId,
      backend: turn.backend,
      cache: this.deps.cache,
      cacheKey: turn.cacheKey,
      queryTimeMs: () => performance.now() - turn.started,
      explain: turn.explain,
    });
    const action = payload.metadata.fallback?.action ?? "skip";
    return { kind: "fallback", code: halt.code, action, payload };
  }
}

/**
 * A door's wire answer as kept with the payload: the sources of the kept memories only, their free text and the
 * other fields redacted as the memories were and through the injection screen (an item with a field a `drop`
 * detector fires on is left out), the `context` block redacted, screened and fitted to the token budget.
 */
function renderable(
  native: NativeAnswer,
  payload: RetrievalPayload,
  compiled: CompiledPolicy,
): NativeRendering {
  const { redactor, screener } = compiled.ctx;
  const sources: NativeRendering["sources"] = {};
  for (const memory of payload.memories) {
    const source = native.sources[memory.id];
    if (source === undefined) continue;
    const item = screenDeep(redactDeep(source.item, redactor), screener);
    if (item.dropped) continue;
    sources[memory.id] = { list: source.list, item: item.value as Record<string, unknown> };
  }
  const out: NativeRendering = {
    sources,
    echo: screenDeep(redactDeep(native.echo, redactor), screener).value as Record<string, unknown>,
  };
  if (native.context !== undefined) out.context = shapeText(native.context, compiled);
  if (native.notes !== undefined) out.notes = native.notes;
  return out;
}

/** Whether the policy's stages read the query analysis (and so its time scope). */
function usesQueryAnalysis(policy: Policy): boolean {
  return (
    policy.ranking.enabled ||
    policy.clip.answerAware ||
    policy.sufficiency.enabled ||
    policy.budget.stop !== undefined
  );
}

/** A produced answer whose certificate says what the expansion round searched for and whether it was kept. */
function reported(
  halt: Extract<Halt, { kind: "payload" }>,
  sufficiency: NonNullable<RetrievalPayload["metadata"]["sufficiency"]>,
  expansion: ExpansionReport,
): Halt {
  const metadata = { ...halt.payload.metadata, sufficiency: { ...sufficiency, expansion } };
  return { ...halt, payload: { ...halt.payload, metadata } };
}

/** The counts of the first read and of the expansion's own candidates, together. */
function mergeCounts(
  a: ReinforcementCounts | undefined,
  b: ReinforcementCounts | undefined,
): ReinforcementCounts | undefined {
  if (a === undefined || b === undefined) return a ?? b;
  return { counts: new Map([...a.counts, ...b.counts]), available: a.available && b.available };
}

function round(ms: number): number {
  return Math.round(ms * 100) / 100;
}

/**
 * The budget the token_budget stage enforced (its trace detail's `maxTokens`: with `budget.relative` less than
 * `retrieval.maxTokens`), for the playground's budget bar; undefined without a trace.
 */
function effectiveBudget(payload: RetrievalPayload): number | undefined {
  const value = payload.trace?.find((t) => t.stage === "token_budget")?.detail?.maxTokens;
  return typeof value === "number" ? value : undefined;
}
