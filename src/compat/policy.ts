/**
 * The retrieval policy on the drop-in compatibility routes (CONTRACT §7).
 *
 * - Which policy: the tenant's default one, or the one named by the optional `x-memgate-policy` request header
 *   (it must be allowed for the tenant: 403 otherwise; an unknown name is a 400).
 * - The request's own result count (Zep `limit`, OpenMemory `k`) replaces `retrieval.topK` for that request.
 *   Zep allows up to 50 and OpenMemory up to 200, beyond the 1–20 range of policy files and `overrides`. The
 *   public ranges stay as they are: `withTopK` derives an internal variant of an already compiled policy that
 *   differs only in `retrieval.topK` (same redactor and tokenizer, a hash of its own). It is never validated
 *   against the file schema, never cached and never visible outside the request.
 */
import type { Request, Response } from "express";
import { HttpProblem } from "../http/errors";
import type { Logger } from "../logging/logger";
import { type PipelineResult, runPipeline } from "../pipeline";
import type { Candidate } from "../pipeline/types";
import { type CompiledPolicy, compilePolicy, policyHash } from "../policy/compile";
import type { PolicyRegistry } from "../policy/registry-types";
import { type FallbackAction, type FallbackCode, policySchema } from "../policy/schema";
import { isPolicyAllowed } from "../tenants/directory";
import type { Principal } from "../tenants/types";

export const POLICY_HEADER = "x-memgate-policy";
export const FALLBACK_HEADER = "x-memgate-fallback";

const POLICY_NAME = /^[a-z0-9][a-z0-9_.-]{0,63}$/;

/** Served only if a tenant's default policy vanished from the registry (as /v1/retrieve does): never a 5xx. */
const BUILTIN = compilePolicy(policySchema.parse({ name: "builtin-default", version: 1 }));

/** The policy for this request (see the top of this file). Throws HttpProblem for the caller's faults. */
export function resolvePolicy(
  req: Request,
  principal: Principal,
  policies: PolicyRegistry,
  logger: Logger,
): CompiledPolicy {
  const { tenant } = principal;
  const asked = req.get(POLICY_HEADER)?.trim();
  if (asked !== undefined && !POLICY_NAME.test(asked)) {
    throw new HttpProblem("VALIDATION_FAILED", `${POLICY_HEADER}: must be a policy name`);
  }
  const name = asked ?? tenant.policies.default;
  if (!isPolicyAllowed(tenant, name)) {
    throw new HttpProblem("FORBIDDEN", `${POLICY_HEADER}: "${name}" is not allowed for this tenant`);
  }
  const compiled = policies.get(name);
  if (compiled !== undefined) return compiled;
  if (asked !== undefined)
    throw new HttpProblem("VALIDATION_FAILED", `${POLICY_HEADER}: no policy "${name}"`);
  logger.error({ tenant: tenant.id, policy: name }, "default policy missing; serving built-in defaults");
  return BUILTIN;
}

/**
 * The same compiled policy with another `retrieval.topK` (any positive integer; see the top of this file) and
 * `budget.fill` off: the SDK asked for at most that many results, so the budget never adds more.
 */
export function withTopK(compiled: CompiledPolicy, topK: number): CompiledPolicy {
  const { retrieval, budget } = compiled.policy;
  if (retrieval.topK === topK && !budget.fill) return compiled;
  const policy = {
    ...compiled.policy,
    retrieval: { ...retrieval, topK },
    budget: { ...budget, fill: false },
  };
  return { policy, hash: policyHash(policy), ctx: compiled.ctx };
}

/** Runs policy stages 2–8 on the candidates with `topK` taken from the request. */
export function shape(
  candidates: readonly Candidate[],
  compiled: CompiledPolicy,
  opts: { userId: string; query: string; backend: string; topK: number },
): PipelineResult {
  return runPipeline(
    { userId: opts.userId, query: opts.query, candidates, backend: opts.backend },
    withTopK(compiled, Math.max(1, Math.floor(opts.topK))),
  );
}

/**
 * Marks a response as a fallback: `x-memgate-fallback: <CODE>; action=<action>`. The compat routes keep no
 * payload cache, so a `cache` action serves what `skip` does (an empty result in the SDK's shape).
 */
export function markFallback(res: Response, compiled: CompiledPolicy, code: FallbackCode): void {
  const declared: FallbackAction = compiled.policy.fallbacks[code];
  const action = declared === "cache" ? "skip" : declared;
  res.setHeader(FALLBACK_HEADER, `${code}; action=${action}`);
}

/** `x-memgate-policy: <name>@<version>` on every shaped answer, so a client can tell which policy applied. */
export function markPolicy(res: Response, compiled: CompiledPolicy): void {
  res.setHeader(POLICY_HEADER, `${compiled.policy.name}@${compiled.policy.version}`);
}

/** A deadline for one upstream call: the policy's backend timeout, or the client going away. */
export function callSignal(res: Response, compiled: CompiledPolicy): AbortSignal {
  const controller = new AbortController();
  res.on("close", () => {
    if (!res.writableFinished) controller.abort();
  });
  return AbortSignal.any([AbortSignal.timeout(compiled.policy.timeouts.backendMs), controller.signal]);
}
