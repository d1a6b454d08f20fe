/**
 * Hot routes: routes served on Node's request and response before Express (src/http/app.ts) — `POST /v1/retrieve`
 * and the drop-in doors' searches (`POST /api/v2/graph/search`, `POST /memory/query`), the requests a chat
 * application sends every turn. Each takes the steps its Express form took, in the same order, through the same
 * functions the Express middlewares wrap: authenticate → per-key limit → scope → JSON body; what ends a request
 * early is thrown, and the edge answers it (`answerError`, ./middleware.ts).
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Principal, Scope, TenantDirectory } from "../tenants/types";
import { authenticateRequest, checkScope } from "./auth";
import { jsonBodyReader } from "./middleware";
import { localsOf, requestPath } from "./plain";
import { type KeyLimits, limitKey } from "./rate-limit";

/** Serves one request; rejects with what ends it early (an `HttpProblem`, a body error, a bug). */
export type HotHandler = (req: IncomingMessage, res: ServerResponse) => Promise<void>;

export interface HotRoute {
  method: "POST";
  /** The route's path, lower case: also its template in the HTTP span, the duration metric and the access log. */
  path: string;
  handle: HotHandler;
  /**
   * Every answer of the route goes through `sendBody` (./plain.ts) or `answerError` (./middleware.ts), and its own
   * headers through `setAnswerHeader` (./head.ts): the edge's headers are left set aside for it, and its head is
   * written at once. Without it they are set on the response before the route runs.
   */
  headOnce?: boolean;
}

/** What a guarded route's own work receives. */
export interface Guarded {
  principal: Principal;
  /** The parsed JSON body (undefined: the request had none). */
  body: unknown;
}

/**
 * A hot route whose own work (`handle`) runs after authentication, the key's limit, the scope check and the JSON
 * body (at most `bodyLimit`), as an Express route with `authenticate`, `rateLimitKey`, `requireScope` and `jsonBody`.
 */
export function guardedRoute(
  deps: { tenants: TenantDirectory; keyLimits?: KeyLimits | undefined },
  route: { path: string; scope: Scope; bodyLimit: string; headOnce?: boolean },
  handle: (req: IncomingMessage, res: ServerResponse, guarded: Guarded) => Promise<void>,
): HotRoute {
  const readBody = jsonBodyReader(route.bodyLimit);
  return {
    method: "POST",
    path: route.path,
    ...(route.headOnce === true ? { headOnce: true } : {}),
    async handle(req, res) {
      const locals = localsOf(res);
      locals.httpRoute = route.path;
      const principal = authenticateRequest(deps.tenants, req);
      locals.principal = principal;
      await limitKey(deps.keyLimits, principal, res);
      checkScope(principal, route.scope);
      await handle(req, res, { principal, body: await readBody(req, res) });
    },
  };
}

/** The hot routes by `METHOD path`. */
export function hotRouteTable(routes: readonly HotRoute[]): ReadonlyMap<string, HotHandler> {
  const table = new Map<string, HotHandler>();
  for (const r of routes) {
    const key = `${r.method} ${r.path.toLowerCase()}`;
    if (table.has(key)) throw new Error(`hot route ${key} is defined twice`);
    table.set(key, r.handle);
  }
  return table;
}

/**
 * The hot route a request asks for, matched as Express matches a route's path: the method, and the path without
 * its query, case-insensitively, with or without one trailing slash (test/http/hot-routes.test.ts holds this
 * against Express's own router).
 */
export function hotRouteOf(
  table: ReadonlyMap<string, HotHandler>,
  req: IncomingMessage,
): HotHandler | undefined {
  const path = requestPath(req);
  const bare = path.length > 1 && path.endsWith("/") ? path.slice(0, -1) : path;
  return table.get(`${req.method} ${bare.toLowerCase()}`);
}
