/**
 * The OpenMemory surface (docs/adopting.md#openmemory): `new OpenMemory({ baseUrl: "http://<gateway>", apiKey: <memgate key> })`.
 *
 * | route                                        | scope      | tenant with `openmemory`   | tenant with only `local` |
 * |----------------------------------------------|------------|----------------------------|--------------------------|
 * | `POST /memory/query`                         | `retrieve` | upstream answer, shaped    | local search, shaped     |
 * | `POST /memory/add`, `GET /memory/all`,       | `proxy`    | streamed to the upstream   | served by the local      |
 * |   `GET`/`DELETE /memory/{id}`, `GET /health`, |            |   unchanged (../proxy.ts)  |   store (./local.ts)     |
 * |   `GET`/`DELETE /users/{id}/memories`        |            |                            |                          |
 * | any other `/memory/*`, `/users/*`, `/sectors` | `proxy`    | proxied                    | 404                      |
 *
 * Which backend answers: the tenant's `openmemory` backend when it has one, else its embedded `local` backend;
 * a tenant with neither gets 403. Upstream calls carry the tenant's OpenMemory key (`x-api-key`), never the
 * caller's memgate key. On `/memory/query` a failing upstream gives the policy's fallback (`{query, matches: []}`
 * marked `x-memgate-fallback`), never a 5xx; OpenMemory's 400 for the caller's own request comes back unchanged.
 * Answers of the local store use OpenMemory's formats, errors included (`{"err":"nf"}`, `invalid_input`).
 */
import { type Request, type Response, Router } from "express";
import { z } from "zod";
import {
  type Answer,
  DEFAULT_USER,
  type LocalOpenMemory,
  localSurface,
} from "../../backends/local/openmemory";
import type { BackendConfig } from "../../backends/types";
import { authenticate, principalOf, requireScope } from "../../http/auth";
import { HttpProblem } from "../../http/errors";
import { setAnswerHeader } from "../../http/head";
import { guardedRoute, type HotRoute } from "../../http/hot";
import { jsonBody } from "../../http/middleware";
import { sendJson } from "../../http/plain";
import { rateLimitKey } from "../../http/rate-limit";
import type { RetrievalPayload } from "../../retrieval/payload";
import type { Principal } from "../../tenants/types";
import type { CompatDeps } from "../deps";
import { serveRetrieval } from "../door";
import { forgetOnSuccess } from "../invalidate";
import { joinUrl, proxy } from "../proxy";
import { type OpenMemoryQuery, parseQuery } from "./request";

const OPENMEMORY_PATHS = ["/memory", "/users", "/health", "/sectors"];
const BODY_LIMIT = "1mb";
export const TAG_FALLBACK_HEADER = "x-memgate-tag-fallback";
export const AS_OF_FALLBACK_HEADER = "x-memgate-as-of-fallback";

type OpenMemoryConfig = NonNullable<BackendConfig["openmemory"]>;
type Target = { kind: "upstream"; om: OpenMemoryConfig } | { kind: "local"; surface: LocalOpenMemory };

function credentialOf(om: OpenMemoryConfig): Record<string, string> {
  return om.apiKey === undefined || om.apiKey === "" ? {} : { "x-api-key": om.apiKey };
}

/** OpenMemory's answer `{ query, matches[] }` from a payload: each kept match as it came, `content` and `score` shaped. */
function queryAnswer(q: OpenMemoryQuery, payload: RetrievalPayload): Record<string, unknown> {
  const native = payload.native;
  const matches = payload.memories.flatMap((memory) => {
    const source = native?.sources[memory.id];
    return source === undefined ? [] : [{ ...source.item, content: memory.content, score: memory.score }];
  });
  return { ...native?.echo, query: q.query, matches };
}

const addSchema = z.looseObject({
  content: z.string({ error: "expected string" }).min(1).max(200_000),
  tags: z.array(z.string()).optional(),
  metadata: z.record(z.string(), z.unknown()).optional(),
  user_id: z.string().optional(),
});

function send(res: Response, answer: Answer): void {
  res.status(answer.status).json(answer.body);
}

function pageOf(req: Request): { limit: number; offset: number } {
  const int = (v: unknown, fallback: number, max: number) => {
    const n = typeof v === "string" && /^\d+$/.test(v) ? Number(v) : fallback;
    return Math.min(max, n);
  };
  return { limit: int(req.query.l, 100, 1000), offset: int(req.query.u, 0, Number.MAX_SAFE_INTEGER) };
}

/** Which backend answers the tenant's OpenMemory calls (see the top of this file). */
function targetFor(deps: CompatDeps, principal: Principal): Target {
  const { tenant } = principal;
  if (tenant.backends.openmemory !== undefined) return { kind: "upstream", om: tenant.backends.openmemory };
  const local = tenant.backends.local === undefined ? undefined : deps.localStores?.get(tenant.id);
  if (local !== undefined) return { kind: "local", surface: localSurface(local) };
  throw new HttpProblem("FORBIDDEN", "this tenant has no OpenMemory or local backend");
}

/** `POST /memory/query`: a hot route (src/http/hot.ts) into the core. */
export function openMemoryQueryRoute(deps: CompatDeps): HotRoute {
  // Every answer is `sendJson`/`sendUpstream` or an error: its head is written at once (src/http/head.ts).
  const route = { path: "/memory/query", scope: "retrieve", bodyLimit: BODY_LIMIT, headOnce: true } as const;
  return guardedRoute(deps, route, async function openMemoryQuery(req, res, { principal, body }) {
    const target = targetFor(deps, principal);
    const parsed = parseQuery(body);
    if (!parsed.ok) {
      sendJson(res, 400, JSON.stringify({ error: "invalid_input", details: parsed.details }));
      return;
    }
    const q = parsed.value;
    const render = (payload: RetrievalPayload) => {
      if (payload.native?.notes?.includes("tag-fallback")) setAnswerHeader(res, TAG_FALLBACK_HEADER, "true");
      if (payload.native?.notes?.includes("as-of-fallback"))
        setAnswerHeader(res, AS_OF_FALLBACK_HEADER, "true");
      return queryAnswer(q, payload);
    };
    await serveRetrieval(
      req,
      res,
      deps,
      {
        userId: q.userId ?? DEFAULT_USER,
        query: q.query,
        backend: target.kind === "local" ? "local" : "openmemory",
        topK: q.k,
        native: { kind: "openmemory.query", body: q.upstreamBody, userId: q.userId, extras: q.extras },
      },
      { answer: render, empty: () => ({ query: q.query, matches: [] }) },
    );
  });
}

export function openMemoryRoutes(deps: CompatDeps): Router {
  const router = Router();
  const auth = [authenticate(deps.tenants), rateLimitKey(deps.keyLimits)];

  const targetOf = (res: Response): Target => targetFor(deps, principalOf(res));

  /** A write the local store accepted ends the owners' cached answers before it is answered (finding 7). */
  function forget(res: Response, answer: Answer, owners: readonly string[]): Promise<void> {
    if (answer.status < 200 || answer.status >= 300) return Promise.resolve();
    return deps.retrieval.forgetUsers(principalOf(res).tenant.id, owners);
  }

  function localOf(res: Response): LocalOpenMemory {
    const target = targetOf(res);
    if (target.kind !== "local") throw new HttpProblem("INTERNAL", "not a local target");
    return target.surface;
  }

  router.use(OPENMEMORY_PATHS, ...auth, requireScope("proxy"), function openMemoryProxy(req, res, next) {
    const target = targetOf(res);
    if (target.kind === "local") return next();
    const beforeAnswer = forgetOnSuccess(deps, principalOf(res).tenant.id, req, "openmemory");
    proxy(req, res, next, {
      ...(beforeAnswer === undefined ? {} : { beforeAnswer }),
      url: joinUrl(target.om.baseUrl, req.originalUrl),
      credential: credentialOf(target.om),
      label: "OpenMemory",
      logger: deps.logger,
      ...(deps.proxyDeadlineMs === undefined ? {} : { deadlineMs: deps.proxyDeadlineMs }),
    });
  });

  // Reached only for a tenant served by its local store (the proxy above answers everyone else).
  router.post("/memory/add", jsonBody(BODY_LIMIT), async function localAdd(req, res) {
    const surface = localOf(res);
    const parsed = addSchema.safeParse(req.body);
    if (!parsed.success) {
      const details = parsed.error.issues.map(
        (i) => `${i.path.map(String).join(".") || "body"}: ${i.message}`,
      );
      return send(res, { status: 400, body: { error: "invalid_input", details } });
    }
    const answer = surface.add(parsed.data);
    await forget(res, answer, [parsed.data.user_id ?? DEFAULT_USER]);
    send(res, answer);
  });
  router.get("/memory/all", function localAll(req, res) {
    const { limit, offset } = pageOf(req);
    const sector =
      typeof req.query.sector === "string" && req.query.sector !== "" ? req.query.sector : undefined;
    send(res, localOf(res).all(limit, offset, sector));
  });
  router.get("/memory/:id", function localGet(req, res) {
    send(res, localOf(res).get(String(req.params.id)));
  });
  router.delete("/memory/:id", async function localDelete(req, res) {
    const id = String(req.params.id);
    const owner = deps.localStores?.get(principalOf(res).tenant.id)?.get(id)?.userId;
    const answer = localOf(res).delete(id);
    await forget(res, answer, owner === undefined ? [] : [owner]);
    send(res, answer);
  });
  router.get("/users/:userId/memories", function localUserMemories(req, res) {
    const { limit, offset } = pageOf(req);
    send(res, localOf(res).userMemories(String(req.params.userId), limit, offset));
  });
  router.delete("/users/:userId/memories", async function localDeleteUser(req, res) {
    const userId = String(req.params.userId);
    const answer = localOf(res).deleteUser(userId);
    await forget(res, answer, [userId]);
    send(res, answer);
  });
  router.get("/health", function localHealth(_req, res) {
    send(res, localOf(res).health());
  });
  return router;
}
