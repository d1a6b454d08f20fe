import type { IncomingMessage, ServerResponse } from "node:http";
import { retrieveBodySchema } from "../../retrieval/request";
import type { RetrievalService } from "../../retrieval/service";
import type { TenantDirectory } from "../../tenants/types";
import { authenticateRequest, checkScope } from "../auth";
import { HttpProblem } from "../errors";
import { jsonBodyReader } from "../middleware";
import { refusalProblem, sendJsonText, sendUpstream } from "../outcome";
import { localsOf } from "../plain";
import { type KeyLimits, limitKey } from "../rate-limit";
import { describeZodError } from "../validation";

/** The route's template, as the HTTP span, the duration metric and the access log name it. */
export const RETRIEVE_ROUTE = "/v1/retrieve";

/**
 * POST /v1/retrieve (docs/api.md#the-retrieval-request): the body as a retrieval request to the core, the outcome
 * as JSON. A hot route (src/http/app.ts): served on Node's request and response before Express, through the same
 * steps the Express routes take (authenticate → per-key limit → scope → JSON body), in that order; it rejects
 * with what ends the request early (an `HttpProblem`, a body error), which the edge answers as problem+json.
 */
export function retrieveRoute(deps: {
  tenants: TenantDirectory;
  retrieval: RetrievalService;
  keyLimits?: KeyLimits;
}): (req: IncomingMessage, res: ServerResponse) => Promise<void> {
  const readBody = jsonBodyReader("64kb");
  return async function retrieve(req, res) {
    const locals = localsOf(res);
    locals.httpRoute = RETRIEVE_ROUTE;
    const principal = authenticateRequest(deps.tenants, req);
    locals.principal = principal;
    await limitKey(deps.keyLimits, principal, res);
    checkScope(principal, "retrieve");
    const parsed = retrieveBodySchema.safeParse(await readBody(req, res));
    if (!parsed.success) throw new HttpProblem("VALIDATION_FAILED", describeZodError(parsed.error));
    const controller = new AbortController();
    const onClose = () => {
      if (!res.writableFinished) controller.abort();
    };
    res.on("close", onClose);
    try {
      const body = parsed.data;
      const outcome = await deps.retrieval.retrieve({
        principal,
        userId: body.userId,
        query: body.query ?? "",
        policy: body.policy,
        overrides: body.overrides,
        explain: body.explain,
        backend: body.backend,
        turn: { sessionId: body.sessionId, useMemory: body.useMemory },
        signal: controller.signal,
      });
      switch (outcome.kind) {
        case "payload":
          sendJsonText(res, outcome.json ?? JSON.stringify(outcome.payload));
          return;
        case "fallback":
          sendJsonText(res, JSON.stringify(outcome.payload));
          return;
        case "refused":
          throw refusalProblem(outcome);
        case "rejected":
          sendUpstream(res, outcome.response);
          return;
      }
    } finally {
      res.off("close", onClose);
    }
  };
}
