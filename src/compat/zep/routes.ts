/**
 * Zep Cloud v3 under `/api/v2` (CONTRACT §7): `ZepClient({ apiKey: <memgate key>, baseUrl: "http://<gateway>/api/v2" })`.
 *
 * | route                                 | scope      | what happens                                                   |
 * |---------------------------------------|------------|----------------------------------------------------------------|
 * | `POST /api/v2/graph/search`           | `retrieve` | Zep's answer shaped by the tenant's policy (./search.ts)       |
 * | `GET /api/v2/threads/{id}/context`    | `retrieve` | redaction and the token budget on `context` (./text.ts)        |
 * | any other `/api/v2/*`                 | `proxy`    | streamed to the tenant's Zep unchanged (../proxy.ts)           |
 *
 * Upstream calls carry the tenant's Zep key (`Authorization: Api-Key <tenant key>`), never the caller's.
 * On the two shaped routes a failing Zep gives the policy's fallback (an empty answer in Zep's shape, marked
 * `x-memgate-fallback`), never a 5xx; the caller's own refused request (Zep 400/413/414/422) comes back as Zep
 * sent it (see ../upstream.ts). A tenant without a Zep backend gets 403 on every route.
 */
import { type Request, Router } from "express";
import { HttpProblem } from "../../http/errors";
import { jsonBody } from "../../http/middleware";
import { rateLimitKey } from "../../http/rate-limit";
import type { FallbackCode } from "../../policy/schema";
import { authenticate, principalOf, requireScope } from "../../tenants/auth";
import type { Principal } from "../../tenants/types";
import type { CompatDeps } from "../deps";
import { callSignal, markFallback, markPolicy, resolvePolicy } from "../policy";
import { joinUrl, proxy } from "../proxy";
import { callUpstream, isRecord, judge, passThrough } from "../upstream";
import { emptySearchAnswer, planSearch, shapeSearch } from "./search";
import { shapeContext } from "./text";

/** Zep search bodies are small, but `search_filters` may carry uuid lists (max 256 each). */
const SEARCH_BODY_LIMIT = "256kb";

function zepOf(principal: Principal): { apiKey: string; baseUrl: string } {
  const zep = principal.tenant.backends.zep;
  if (zep === undefined) throw new HttpProblem("FORBIDDEN", "this tenant has no Zep backend");
  return zep;
}

function zepHeaders(apiKey: string, hasBody: boolean): Record<string, string> {
  const headers: Record<string, string> = { authorization: `Api-Key ${apiKey}`, accept: "application/json" };
  if (hasBody) headers["content-type"] = "application/json";
  return headers;
}

function queryString(req: Request): string {
  const at = req.originalUrl.indexOf("?");
  return at < 0 ? "" : req.originalUrl.slice(at);
}

export function zepRoutes(deps: CompatDeps): Router {
  const router = Router();
  const auth = [authenticate(deps.tenants), rateLimitKey(deps.keyLimits)];

  function logFallback(code: FallbackCode, detail: string, principal: Principal): void {
    deps.logger.warn({ backend: "zep", tenant: principal.tenant.id, code, detail }, "zep compat fallback");
  }

  router.post(
    "/api/v2/graph/search",
    ...auth,
    requireScope("retrieve"),
    ...jsonBody(SEARCH_BODY_LIMIT),
    async function zepGraphSearch(req, res) {
      const principal = principalOf(res);
      const zep = zepOf(principal);
      const compiled = resolvePolicy(req, principal, deps.policies, deps.logger);
      markPolicy(res, compiled);
      if (!isRecord(req.body)) throw new HttpProblem("VALIDATION_FAILED", "body: must be a JSON object");
      const plan = planSearch(req.body, compiled);
      const answerEmpty = (code: FallbackCode, detail: string) => {
        logFallback(code, detail, principal);
        markFallback(res, compiled, code);
        res.json(emptySearchAnswer(plan));
      };
      const max = compiled.policy.retrieval.maxQueryChars;
      if (plan.query.length > max) return answerEmpty("INVALID_QUERY", `query longer than ${max} characters`);

      const answer = await callUpstream({
        url: `${zep.baseUrl.replace(/\/+$/, "")}/graph/search`,
        method: "POST",
        headers: zepHeaders(zep.apiKey, true),
        body: JSON.stringify(plan.upstreamBody),
        signal: callSignal(res, compiled),
      });
      const verdict = judge(answer, "zep");
      if (verdict.kind === "pass") return passThrough(res, answer);
      if (verdict.kind === "fallback") return answerEmpty(verdict.code, verdict.detail);
      let shaped: ReturnType<typeof shapeSearch>;
      try {
        shaped = shapeSearch(verdict.json, plan, compiled);
      } catch (err) {
        deps.logger.error({ err, policy: compiled.policy.name }, "policy pipeline failed (zep compat)");
        return answerEmpty("POLICY_FAILED", "the policy failed");
      }
      if (shaped === undefined) return answerEmpty("ZEP_UNAVAILABLE", "malformed search answer");
      res.json(shaped.body);
    },
  );

  router.get(
    "/api/v2/threads/:threadId/context",
    ...auth,
    requireScope("retrieve"),
    async function zepThreadContext(req, res) {
      const principal = principalOf(res);
      const zep = zepOf(principal);
      const compiled = resolvePolicy(req, principal, deps.policies, deps.logger);
      markPolicy(res, compiled);
      const answerEmpty = (code: FallbackCode, detail: string) => {
        logFallback(code, detail, principal);
        markFallback(res, compiled, code);
        res.json({ context: "" });
      };
      const threadId = String(req.params.threadId);
      const answer = await callUpstream({
        url: `${zep.baseUrl.replace(/\/+$/, "")}/threads/${encodeURIComponent(threadId)}/context${queryString(req)}`,
        method: "GET",
        headers: zepHeaders(zep.apiKey, false),
        signal: callSignal(res, compiled),
      });
      const verdict = judge(answer, "zep");
      if (verdict.kind === "pass") return passThrough(res, answer);
      if (verdict.kind === "fallback") return answerEmpty(verdict.code, verdict.detail);
      if (!isRecord(verdict.json)) return answerEmpty("ZEP_UNAVAILABLE", "malformed context answer");
      const { context } = verdict.json;
      res.json(
        typeof context === "string"
          ? { ...verdict.json, context: shapeContext(context, compiled).text }
          : verdict.json,
      );
    },
  );

  router.use("/api/v2", ...auth, requireScope("proxy"), function zepProxy(req, res, next) {
    const zep = zepOf(principalOf(res));
    proxy(req, res, next, {
      url: joinUrl(zep.baseUrl, req.url),
      credential: { authorization: `Api-Key ${zep.apiKey}` },
      label: "Zep",
      logger: deps.logger,
    });
  });

  return router;
}
