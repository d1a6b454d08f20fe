import { POLICY_HEADER } from "../../compat/door";
import { parseRetrieveBody } from "../../retrieval/request";
import type { RetrievalService } from "../../retrieval/service";
import type { TenantDirectory } from "../../tenants/types";
import { HttpProblem } from "../errors";
import { setAnswerHeader } from "../head";
import { guardedRoute, type HotRoute } from "../hot";
import { refusalProblem, sendUpstream } from "../outcome";
import { closeSignal, sendJson } from "../plain";
import type { KeyLimits } from "../rate-limit";
import { describeZodError } from "../validation";

/**
 * POST /v1/retrieve (docs/api.md#the-retrieval-request): the body as a retrieval request to the core, the outcome
 * as JSON. A hot route (../hot.ts): key, limit, scope `retrieve` and a JSON body of at most 64 KiB first.
 */
export function retrieveRoute(deps: {
  tenants: TenantDirectory;
  retrieval: RetrievalService;
  keyLimits?: KeyLimits;
}): HotRoute {
  // Every answer is `sendJson`/`sendUpstream` (`sendBody`) or an error (`answerError`): its head is written at once.
  const route = { path: "/v1/retrieve", scope: "retrieve", bodyLimit: "64kb", headOnce: true } as const;
  return guardedRoute(deps, route, async function retrieve(_req, res, { principal, body: raw }) {
    const parsed = parseRetrieveBody(raw);
    if (!parsed.success) throw new HttpProblem("VALIDATION_FAILED", describeZodError(parsed.error));
    const body = parsed.data;
    const signal = closeSignal(res);
    const outcome = await deps.retrieval.retrieve({
      principal,
      userId: body.userId,
      query: body.query ?? "",
      policy: body.policy,
      overrides: body.overrides,
      explain: body.explain,
      backend: body.backend,
      turn: { sessionId: body.sessionId, useMemory: body.useMemory },
      ...(body.turnTime === undefined ? {} : { turnTime: Date.parse(body.turnTime) }),
      ...(body.detail === undefined ? {} : { detail: body.detail }),
      get signal() {
        return signal();
      },
    });
    // Which policy answered (the default, the user's canary, or the one asked for): as the drop-in doors say it.
    if (outcome.kind === "payload" || outcome.kind === "fallback") {
      const { policy } = outcome.payload.metadata;
      setAnswerHeader(res, POLICY_HEADER, `${policy.name}@${policy.version}`);
    }
    switch (outcome.kind) {
      case "payload":
        if (outcome.index !== undefined) sendJson(res, 200, JSON.stringify(outcome.index));
        else sendJson(res, 200, outcome.json ?? JSON.stringify(outcome.payload));
        return;
      case "fallback":
        sendJson(res, 200, JSON.stringify(outcome.index ?? outcome.payload));
        return;
      case "refused":
        throw refusalProblem(outcome);
      case "rejected":
        sendUpstream(res, outcome.response);
        return;
    }
  });
}
