/**
 * Zep Cloud v3 under `/api/v2` (docs/adopting.md#zep): `ZepClient({ apiKey: <memgate key>, baseUrl: "http://<gateway>/api/v2" })`.
 *
 * | route (SDK call)                                          | scope      | what happens                              |
 * |-----------------------------------------------------------|------------|-------------------------------------------|
 * | `POST /api/v2/graph/search` (`graph.search`, every scope) | `retrieve` | the retrieval core, Zep's answer shaped   |
 * | `GET /api/v2/threads/{id}/context` (`thread.getUserContext`, `templateId` …) | `retrieve` | the core; `context` redacted and fitted to the budget |
 * | `POST /api/v2/threads/{id}/messages` (`thread.addMessages`) | `proxy`  | written unchanged; with `return_context` the returned `context` is shaped |
 * | any other `/api/v2/*`                                     | `proxy`    | streamed to the tenant's Zep unchanged (../proxy.ts) |
 *
 * The two retrieval routes go through the retrieval core like /v1/retrieve (../door.ts): the tenant's policy
 * (or `x-memgate-policy`), the per-user limit, the payload cache and its stale `cache` fallback, single-flight,
 * the backend cooldown (Zep's `Retry-After`), the breaker, bulkhead and retry, spans and metrics. Zep's `limit`
 * (default 10; above Zep's maximum of 50 clamped to 50, answered with `x-memgate-limit: 50; asked=<n>`) is the
 * policy's topK for the request. Upstream calls carry the tenant's Zep key, never the
 * caller's. A failing Zep gives the policy's fallback in Zep's shape (marked `x-memgate-fallback`), never a 5xx;
 * the caller's own refused request (Zep 400/413/414/422) comes back as Zep sent it. A tenant without a Zep
 * backend gets 403 on every route.
 */
import { type Request, Router } from "express";
import { parseUpstreamJson } from "../../backends/json";
import { BackendError } from "../../backends/types";
import { refuseDotSegmentId } from "../../backends/upstream-path";
import { askedLimit, zepExchange } from "../../backends/zep/native";
import { authenticate, principalOf, requireScope } from "../../http/auth";
import { HttpProblem } from "../../http/errors";
import { setAnswerHeader } from "../../http/head";
import { guardedRoute, type HotRoute } from "../../http/hot";
import { jsonBody } from "../../http/middleware";
import { refusalProblem, sendUpstream } from "../../http/outcome";
import { rateLimitKey } from "../../http/rate-limit";
import { shapeText } from "../../retrieval/text";
import type { Principal } from "../../tenants/types";
import type { CompatDeps } from "../deps";
import { isRecord, POLICY_HEADER, serveRetrieval } from "../door";
import { forgetOnSuccess } from "../invalidate";
import { graphOwner, NO_OWNER, reservedOwnerProblem, threadOwner } from "../owners";
import { joinUrl, proxy } from "../proxy";
import { contextAnswer, emptySearchAnswer, searchAnswer } from "./render";

/** Zep search bodies are small, but `search_filters` may carry uuid lists (max 256 each). */
const SEARCH_BODY_LIMIT = "256kb";
/** `thread.addMessages`: at most 30 messages of at most 4,096 characters each in Zep; room for metadata. */
const MESSAGES_BODY_LIMIT = "1mb";
/** Longest a write waits for Zep (it is not a retrieval: no policy timeout applies). */
const WRITE_TIMEOUT_MS = 30_000;
/** On a search whose `limit` was above Zep's maximum: `<limit used>; asked=<limit asked>`. */
export const LIMIT_HEADER = "x-memgate-limit";

const invalid = (detail: string) => new HttpProblem("VALIDATION_FAILED", detail);

function zepOf(principal: Principal): { apiKey: string; baseUrl: string } {
  const zep = principal.tenant.backends.zep;
  if (zep === undefined) throw new HttpProblem("FORBIDDEN", "this tenant has no Zep backend");
  return zep;
}

/** The caller's query parameters, as they came (`template_id`, `min_rating`, …). */
function paramsOf(req: Request): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(req.query)) if (typeof v === "string") out[k] = v;
  return out;
}

/** `POST /api/v2/graph/search` (`graph.search`, every scope): a hot route (src/http/hot.ts) into the core. */
export function zepSearchRoute(deps: CompatDeps): HotRoute {
  // Every answer is `sendJson`/`sendUpstream` or an error: its head is written at once (src/http/head.ts).
  const route = {
    path: "/api/v2/graph/search",
    scope: "retrieve",
    bodyLimit: SEARCH_BODY_LIMIT,
    headOnce: true,
  } as const;
  return guardedRoute(deps, route, async function zepGraphSearch(req, res, { principal, body }) {
    zepOf(principal);
    if (!isRecord(body)) throw new HttpProblem("VALIDATION_FAILED", "body: must be a JSON object");
    const owner = typeof body.user_id === "string" && body.user_id !== "" ? body.user_id : undefined;
    const reserved = owner === undefined ? undefined : reservedOwnerProblem(owner);
    if (reserved !== undefined) throw new HttpProblem("VALIDATION_FAILED", `user_id: ${reserved}`);
    const graph = typeof body.graph_id === "string" && body.graph_id !== "" ? body.graph_id : undefined;
    refuseDotSegmentId("user_id", owner, invalid);
    refuseDotSegmentId("graph_id", graph, invalid);
    const asked = askedLimit(body);
    const topK = asked?.limit;
    // A limit above Zep's maximum is clamped, and says so (docs/adopting.md#zep).
    if (asked?.clampedFrom !== undefined)
      setAnswerHeader(res, LIMIT_HEADER, `${asked.limit}; asked=${asked.clampedFrom}`);
    await serveRetrieval(
      req,
      res,
      deps,
      {
        userId: owner ?? (graph === undefined ? NO_OWNER : graphOwner(graph)),
        query: typeof body.query === "string" ? body.query : "",
        backend: "zep",
        ...(topK === undefined ? {} : { topK }),
        native: { kind: "zep.graph.search", body, setLimit: topK !== undefined },
        // A graph search (no user) has no user collection to check; Zep's 404 still says "no such graph".
        needs: { user: owner !== undefined },
      },
      { answer: searchAnswer, empty: () => emptySearchAnswer(body.scope ?? "edges") },
    );
  });
}

export function zepRoutes(deps: CompatDeps): Router {
  const router = Router();
  const auth = [authenticate(deps.tenants), rateLimitKey(deps.keyLimits)];

  router.get(
    "/api/v2/threads/:threadId/context",
    ...auth,
    requireScope("retrieve"),
    async function zepThreadContext(req, res) {
      zepOf(principalOf(res));
      const threadId = String(req.params.threadId);
      refuseDotSegmentId("threadId", threadId, invalid);
      await serveRetrieval(
        req,
        res,
        deps,
        {
          userId: threadOwner(threadId),
          query: "",
          backend: "zep",
          native: { kind: "zep.thread.context", threadId, params: paramsOf(req) },
          needs: { user: false, query: false },
        },
        { answer: contextAnswer, empty: () => ({ context: "" }) },
      );
    },
  );

  router.post(
    "/api/v2/threads/:threadId/messages",
    ...auth,
    requireScope("proxy"),
    jsonBody(MESSAGES_BODY_LIMIT),
    async function zepAddMessages(req, res) {
      const principal = principalOf(res);
      const zep = zepOf(principal);
      const asked = req.get(POLICY_HEADER)?.trim();
      const compiled = deps.retrieval.policyFor(principal, { policy: asked, policyField: POLICY_HEADER });
      if ("kind" in compiled) throw refusalProblem(compiled);
      const threadId = String(req.params.threadId);
      refuseDotSegmentId("threadId", threadId, invalid);
      let answer: Awaited<ReturnType<typeof zepExchange>>;
      try {
        answer = await zepExchange(zep, "thread.add_messages", {
          method: "POST",
          path: `/threads/${encodeURIComponent(threadId)}/messages`,
          body: req.body,
          signal: AbortSignal.timeout(WRITE_TIMEOUT_MS),
        });
      } catch (err) {
        const reason = err instanceof BackendError ? err.message : "Zep could not be reached";
        throw new HttpProblem("UPSTREAM_UNREACHABLE", reason);
      }
      // The thread's new messages end its cached context (finding 7).
      if (answer.status >= 200 && answer.status < 300)
        await deps.retrieval.forgetUsers(principal.tenant.id, [threadOwner(threadId)]);
      res.setHeader(POLICY_HEADER, `${compiled.policy.name}@${compiled.policy.version}`);
      const returned = answer.status >= 200 && answer.status < 300 ? parseObject(answer.body) : undefined;
      if (returned === undefined || typeof returned.context !== "string") return sendUpstream(res, answer);
      res.status(answer.status).json({ ...returned, context: shapeText(returned.context, compiled) });
    },
  );

  router.use("/api/v2", ...auth, requireScope("proxy"), function zepProxy(req, res, next) {
    const principal = principalOf(res);
    const zep = zepOf(principal);
    const beforeAnswer = forgetOnSuccess(deps, principal.tenant.id, req, "zep");
    proxy(req, res, next, {
      url: joinUrl(zep.baseUrl, req.url),
      credential: { authorization: `Api-Key ${zep.apiKey}` },
      label: "Zep",
      logger: deps.logger,
      ...(beforeAnswer === undefined ? {} : { beforeAnswer }),
      ...(deps.proxyDeadlineMs === undefined ? {} : { deadlineMs: deps.proxyDeadlineMs }),
    });
  });

  return router;
}

/** Zep's answer as an object to shape; undefined (passed back as it came) when not JSON or nested too deep. */
function parseObject(text: string): Record<string, unknown> | undefined {
  const parsed = parseUpstreamJson(text);
  return parsed.ok && isRecord(parsed.value) ? parsed.value : undefined;
}
