/**
 * Drop-in compatibility (docs/adopting.md): existing Zep and OpenMemory clients keep their SDKs and change only the
 * base URL. Zep v3 lives under `/api/v2` (./zep), OpenMemory at the root (`/memory/*`, `/users/*`, `/health`,
 * `/sectors`; ./openmemory). Neither touches `/v1/*`, `/healthz`, `/readyz` or `/metrics`.
 * How a client adopts memgate: README.md, "The doors", and docs/adopting.md; the request path: docs/request-lifecycle.md.
 */
import { Router } from "express";
import type { HotRoute } from "../http/hot";
import type { CompatDeps } from "./deps";
import { openMemoryQueryRoute, openMemoryRoutes } from "./openmemory/routes";
import { zepRoutes, zepSearchRoute } from "./zep/routes";

export type { CompatDeps } from "./deps";

/** The doors' searches, served before Express (src/http/hot.ts). */
export function compatHotRoutes(deps: CompatDeps): HotRoute[] {
  return [zepSearchRoute(deps), openMemoryQueryRoute(deps)];
}

/** Every other route of the doors, on Express. */
export function compatRoutes(deps: CompatDeps): Router {
  const router = Router();
  router.use(zepRoutes(deps));
  router.use(openMemoryRoutes(deps));
  return router;
}
