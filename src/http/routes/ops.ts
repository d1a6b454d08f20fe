import { basename, dirname, sep } from "node:path";
import { Router } from "express";
import type { PolicyRegistry } from "../../policy/registry-types";
import { isPolicyAllowed } from "../../tenants/directory";
import { ANY_POLICY, type Tenant, type TenantDirectory } from "../../tenants/types";
import { MEMGATE_VERSION } from "../../version";
import { authenticate, principalOf, requireScope } from "../auth";
import { HttpProblem } from "../errors";
import { type KeyLimits, rateLimitKey } from "../rate-limit";

export interface ReadinessCheck {
  name: string;
  ok: boolean;
  /**
   * A failing check that does not take the replica out of rotation: Redis down (the cache is bypassed and limits
   * fall back to in-process counters) or a backend's circuit open (its fallback answers) — every request is still
   * answered. /readyz then says "degraded", 200.
   */
  degraded?: boolean;
  detail?: string;
}

export type Readiness = () => Promise<ReadinessCheck[]>;

/**
 * /healthz (alive), /readyz (200 "ready" or "degraded" — backends' circuits, Redis — with the checks; 503
 * "not_ready" naming what stops this process from serving, 503 "draining" during graceful shutdown),
 * /v1/policies (admin: the caller's tenant's policies).
 */
export function opsRoutes(deps: {
  tenants: TenantDirectory;
  policies: PolicyRegistry;
  readiness: Readiness;
  /** Set during graceful shutdown (src/server/serve.ts): /readyz then answers 503 "draining". */
  lifecycle?: { shuttingDown: boolean };
  keyLimits?: KeyLimits;
}): Router {
  const router = Router();
  router.get("/healthz", function healthz(_req, res) {
    res.json({ status: "ok", version: MEMGATE_VERSION });
  });
  router.get("/readyz", async function readyz(_req, res) {
    if (deps.lifecycle?.shuttingDown) {
      // The app lets /readyz through while draining (src/http/app.ts); the connection still closes after it.
      res.setHeader("connection", "close");
      res.status(503).json({
        status: "draining",
        checks: [{ name: "lifecycle", ok: false, detail: "shutting down: finishing in-flight requests" }],
      });
      return;
    }
    const checks = await deps.readiness();
    const ready = checks.every((c) => c.ok || c.degraded === true);
    const degraded = checks.some((c) => !c.ok && c.degraded === true);
    const status = ready ? (degraded ? "degraded" : "ready") : "not_ready";
    res.status(ready ? 200 : 503).json({ status, checks });
  });
  router.get(
    "/v1/policies",
    authenticate(deps.tenants),
    rateLimitKey(deps.keyLimits),
    requireScope("admin"),
    function policies(_req, res) {
      res.json(policiesOf(deps.policies, principalOf(res).tenant));
    },
  );
  router.get(
    "/v1/policies/:name/effective",
    authenticate(deps.tenants),
    rateLimitKey(deps.keyLimits),
    requireScope("admin"),
    function effectivePolicy(req, res) {
      res.json(effectiveOf(deps.policies, principalOf(res).tenant, String(req.params.name)));
    },
  );
  return router;
}

/** What `GET /v1/policies/{name}/effective` answers: the compiled policy, every default filled in. */
export interface EffectivePolicy {
  name: string;
  version: number;
  hash: string;
  file: string;
  policy: Record<string, unknown>;
}

/**
 * The active policy `name` as the pipeline runs it. Unknown, retired (its file was deleted) and not allowed for
 * the tenant are one answer, 404, as a retrieval naming such a policy is refused alike.
 */
export function effectiveOf(registry: PolicyRegistry, tenant: Tenant, name: string): EffectivePolicy {
  const compiled = isPolicyAllowed(tenant, name) ? registry.get(name) : undefined;
  if (compiled === undefined) throw new HttpProblem("NOT_FOUND", `no policy named "${name}"`);
  const { policy, hash } = compiled;
  const file = registry.list().policies.find((p) => p.name === name)?.file ?? "";
  return { name: policy.name, version: policy.version, hash, file: basename(file), policy: { ...policy } };
}

/**
 * What `GET /v1/policies` shows one tenant's admin key: the policies its tenant may use (`policies.allowed`),
 * files by name, never the server's path (also taken out of the error texts); the rejected files (which define
 * no policy, so belong to no tenant) only to a tenant allowed every policy.
 */
export function policiesOf(registry: PolicyRegistry, tenant: Tenant): ReturnType<PolicyRegistry["list"]> {
  const { policies, rejected } = registry.list();
  const name = (file: string) => basename(file);
  // Every file of the registry is in one directory: its path goes from every text.
  const scrub = (text: string, file: string) => text.replaceAll(`${dirname(file)}${sep}`, "");
  return {
    policies: policies
      .filter((p) => isPolicyAllowed(tenant, p.name))
      .map((p) => ({
        ...p,
        file: name(p.file),
        lastError: p.lastError === null ? null : scrub(p.lastError, p.file),
      })),
    rejected: tenant.policies.allowed.includes(ANY_POLICY)
      ? rejected.map((r) => ({ ...r, file: name(r.file), error: scrub(r.error, r.file) }))
      : [],
  };
}
