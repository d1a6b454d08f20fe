import { Router } from "express";
import { retrieveBodySchema } from "../../retrieval/request";
import type { RetrievalService } from "../../retrieval/service";
import type { TenantDirectory } from "../../tenants/types";
import { authenticate, requireScope } from "../auth";
import { HttpProblem } from "../errors";
import { jsonBody } from "../middleware";
import { refusalProblem, sendJsonText, sendUpstream } from "../outcome";
import { type KeyLimits, rateLimitKey } from "../rate-limit";
import { describeZodError } from "../validation";

/** POST /v1/retrieve (docs/api.md#the-retrieval-request): the body as a retrieval request to the core, the outcome as JSON. */
export function retrieveRoute(deps: {
  tenants: TenantDirectory;
  retrieval: RetrievalService;
  keyLimits?: KeyLimits;
}): Router {
  const router = Router();
  router.post(
    "/v1/retrieve",
    authenticate(deps.tenants),
    rateLimitKey(deps.keyLimits),
    requireScope("retrieve"),
    ...jsonBody("64kb"),
    async function retrieve(req, res) {
      const parsed = retrieveBodySchema.safeParse(req.body);
      if (!parsed.success) throw new HttpProblem("VALIDATION_FAILED", describeZodError(parsed.error));
      const principal = res.locals.principal;
      if (!principal) throw new HttpProblem("UNAUTHORIZED", "no credentials");
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
            if (outcome.json !== undefined) sendJsonText(res, outcome.json);
            else res.json(outcome.payload);
            return;
          case "fallback":
            res.json(outcome.payload);
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
    },
  );
  return router;
}
