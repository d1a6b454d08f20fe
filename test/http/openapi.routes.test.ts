/**
 * Every route the gateway serves is in the OpenAPI document, and every route the document lists is served: the
 * hot routes (src/http/app.ts `hotRoutes`) and the Express router, walked layer by layer, against the document's
 * paths and its `x-prefix-routes` (mounts that answer a whole prefix). A route added to the app and not to
 * src/http/openapi/routes.ts — or the other way round — fails here, naming it.
 */
import { METHODS } from "node:http";
import type express from "express";
import { expressRoutes, hotRoutes } from "../../src/http/app";
import { buildOpenApiDocument } from "../../src/http/openapi/document";
import { type Harness, makeHarness } from "../helpers/harness";

interface Served {
  /** `GET /users/{userId}/memories` */
  routes: Set<string>;
  /** Paths a middleware answers as a whole (`/api/v2`). */
  prefixes: Set<string>;
}

interface LayerLike {
  route?: { path: string | string[]; methods: Record<string, boolean> };
  handle?: { stack?: LayerLike[] };
  rawPath?: unknown;
}

/** `/users/:userId/memories/` → `/users/{userId}/memories` (the document's form, one trailing slash dropped). */
function openApiPath(path: string): string {
  const bare = path.length > 1 && path.endsWith("/") ? path.slice(0, -1) : path;
  return bare.replace(/:([A-Za-z0-9_]+)/g, "{$1}");
}

function pathsOf(raw: unknown): string[] {
  const list = Array.isArray(raw) ? raw.flat(Number.POSITIVE_INFINITY) : [raw];
  return list.map((p) => {
    if (typeof p !== "string")
      throw new Error(`a route path that is not a string (${String(p)}): list it by hand`);
    return p;
  });
}

/** Walks an Express router's layers (Express 5's router: `layer.route`, `layer.rawPath`, nested routers). */
function walk(stack: readonly LayerLike[], prefix: string, served: Served): void {
  for (const layer of stack) {
    if (layer.route !== undefined) {
      const methods = Object.keys(layer.route.methods);
      // `router.all(path)` answers every method (each one, or `_all`): documented as a prefix route, as a mount is.
      const all = methods.includes("_all") || METHODS.every((m) => methods.includes(m.toLowerCase()));
      for (const path of pathsOf(layer.route.path)) {
        if (all) served.prefixes.add(openApiPath(prefix + path));
        else for (const m of methods) served.routes.add(`${m.toUpperCase()} ${openApiPath(prefix + path)}`);
      }
    } else if (Array.isArray(layer.handle?.stack)) {
      for (const path of pathsOf(layer.rawPath))
        walk(layer.handle.stack, prefix + (path === "/" ? "" : path), served);
    } else {
      // A middleware: on "/" it is a step (auth, 404, errors); on a path it answers that prefix (a proxy, files).
      for (const path of pathsOf(layer.rawPath))
        if (path !== "/") served.prefixes.add(openApiPath(prefix + path));
    }
  }
}

function servedBy(app: express.Express, hot: ReadonlyArray<{ method: string; path: string }>): Served {
  const served: Served = { routes: new Set(), prefixes: new Set() };
  for (const r of hot) served.routes.add(`${r.method} ${r.path}`);
  walk((app as unknown as { router: { stack: LayerLike[] } }).router.stack, "", served);
  return served;
}

function documented(): Served {
  const doc = buildOpenApiDocument() as unknown as {
    paths: Record<string, Record<string, unknown>>;
    "x-prefix-routes": Array<{ prefix: string }>;
  };
  const methods = new Set(["get", "post", "put", "patch", "delete"]);
  const routes = Object.entries(doc.paths).flatMap(([path, item]) =>
    Object.keys(item)
      .filter((m) => methods.has(m))
      .map((m) => `${m.toUpperCase()} ${path}`),
  );
  return { routes: new Set(routes), prefixes: new Set(doc["x-prefix-routes"].map((p) => p.prefix)) };
}

/** What one side has and the other lacks, as a message naming the fix. */
function disagreements(served: Served, doc: Served): string[] {
  const only = (a: Set<string>, b: Set<string>) => [...a].filter((x) => !b.has(x)).sort();
  const out: string[] = [];
  for (const r of only(served.routes, doc.routes)) out.push(`served, not documented: ${r}`);
  for (const r of only(doc.routes, served.routes)) out.push(`documented, not served: ${r}`);
  for (const p of only(served.prefixes, doc.prefixes)) out.push(`prefix served, not documented: ${p}`);
  for (const p of only(doc.prefixes, served.prefixes)) out.push(`prefix documented, not served: ${p}`);
  return out;
}

describe("the OpenAPI document lists exactly the routes the gateway serves", () => {
  let h: Harness;
  // The playground on, /metrics on the gateway's port: every route the gateway can serve.
  beforeEach(async () => {
    h = await makeHarness({ env: { MEMGATE_PLAYGROUND: "on" } });
  });
  afterEach(() => h.close());

  test("every served route is documented and every documented route is served", () => {
    const served = servedBy(expressRoutes(h.services), hotRoutes(h.services));
    // The walk sees the routes at all (a router that stopped exposing its layers would pass vacuously).
    expect(served.routes).toContain("POST /v1/retrieve");
    expect(served.routes).toContain("GET /users/{userId}/memories");
    expect(served.prefixes).toContain("/api/v2");
    const problems = disagreements(served, documented());
    if (problems.length > 0) {
      throw new Error(
        `${problems.join("\n")}\nRegister routes in src/http/openapi/routes.ts (API_ROUTES or PREFIX_ROUTES), then run \`npm run openapi\`.`,
      );
    }
  });

  test("a route added to the app and not to the registry is named (this test can fail)", () => {
    const app = expressRoutes(h.services);
    app.post("/v1/memories/undocumented", (_req, res) => {
      res.json({});
    });
    app.use("/v2/mounted", (_req, res) => {
      res.json({});
    });
    app.all("/v2/any-method", (_req, res) => {
      res.json({});
    });
    const hot = [...hotRoutes(h.services), { method: "POST", path: "/v1/hot-undocumented" }];
    expect(disagreements(servedBy(app, hot), documented())).toEqual([
      "served, not documented: POST /v1/hot-undocumented",
      "served, not documented: POST /v1/memories/undocumented",
      "prefix served, not documented: /v2/any-method",
      "prefix served, not documented: /v2/mounted",
    ]);
  });
});
