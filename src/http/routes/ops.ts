import { Router } from "express";
import type { PolicyRegistry } from "../../policy/registry-types";
import { authenticate, requireScope } from "../../tenants/auth";
import type { TenantDirectory } from "../../tenants/types";

export interface ReadinessCheck {
  name: string;
  ok: boolean;
  detail?: string;
}

export type Readiness = () => Promise<ReadinessCheck[]>;

/** /healthz (alive), /readyz (policies, Redis, backends; 503 naming what is not ready), /v1/policies (admin). */
export function opsRoutes(deps: {
  tenants: TenantDirectory;
  policies: PolicyRegistry;
  readiness: Readiness;
}): Router {
  const router = Router();
  router.get("/healthz", function healthz(_req, res) {
    res.json({ status: "ok" });
  });
  router.get("/readyz", async function readyz(_req, res) {
    const checks = await deps.readiness();
    const ready = checks.every((c) => c.ok);
    res.status(ready ? 200 : 503).json({ status: ready ? "ready" : "not_ready", checks });
  });
  router.get("/v1/policies", authenticate(deps.tenants), requireScope("admin"), function policies(_req, res) {
    res.json(deps.policies.list());
  });
  return router;
}
