/**
 * What every drop-in door does around the retrieval core: read the optional `x-memgate-policy` header, hand the
 * request to the core, and render its outcome in the SDK's wire shape. A door only parses its wire request and
 * renders; policy, limits, cache, single-flight, cooldown, existence, resilience, spans and metrics are the
 * core's (src/retrieval/service.ts), the same as on /v1/retrieve.
 *
 * Rendering an outcome:
 * - payload (a miss or a cache hit) → the door's shaped answer; `x-memgate-cache: miss|hit`.
 * - fallback → `x-memgate-fallback: <CODE>; action=<action>` and, when the `cache` action served a stored
 *   payload, that payload in the door's shape (`x-memgate-cache: hit|stale`), else the door's empty answer.
 *   Never a 5xx for a failing backend.
 * - a rendering that throws (see `sendRendered`) → the door's empty answer, `x-memgate-fallback: POLICY_FAILED;
 *   action=skip`.
 * - refused (policy not allowed / unknown, `overrides` without admin) → problem+json 403 / 400.
 * - rejected (the upstream refused the caller's own request: Zep 400/413/414/422, OpenMemory 400) → its answer,
 *   status and body as it came, so the SDK raises its own error.
 * Every answer of the core names its policy: `x-memgate-policy: <name>@<version>`.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { principalOf } from "../http/auth";
import { setAnswerHeader } from "../http/head";
import { refusalProblem, sendUpstream } from "../http/outcome";
import { abortOnClose, headerOf, sendJson } from "../http/plain";
import type { Logger } from "../logging/logger";
import type { RetrievalPayload } from "../retrieval/payload";
import type { RetrievalRequest, RetrievalService } from "../retrieval/service";

export const POLICY_HEADER = "x-memgate-policy";
export const FALLBACK_HEADER = "x-memgate-fallback";
export const CACHE_HEADER = "x-memgate-cache";

export interface DoorRendering {
  /** The shaped answer from a payload (a served one, or a cached one a `cache` fallback serves). */
  answer(payload: RetrievalPayload): unknown;
  /** The answer when nothing is served (skip / empty fallbacks). */
  empty(): unknown;
}

export type DoorRequest = Omit<RetrievalRequest, "principal" | "policy" | "policyField" | "signal">;

/** One retrieval through the core, answered in the door's shape (see the top of this file). */
export async function serveRetrieval(
  req: IncomingMessage,
  res: ServerResponse,
  deps: { retrieval: RetrievalService; logger: Logger },
  request: DoorRequest,
  render: DoorRendering,
): Promise<void> {
  const principal = principalOf(res);
  const asked = headerOf(req, POLICY_HEADER)?.trim();
  const outcome = await deps.retrieval.retrieve({
    ...request,
    principal,
    ...(asked === undefined ? {} : { policy: asked }),
    policyField: POLICY_HEADER,
    signal: abortOnClose(res),
  });
  switch (outcome.kind) {
    case "refused":
      throw refusalProblem(outcome);
    case "rejected":
      sendUpstream(res, outcome.response);
      return;
    case "payload": {
      const { payload } = outcome;
      markPayload(res, payload);
      sendRendered(res, () => render.answer(payload), { deps, render, principal, request });
      return;
    }
    case "fallback": {
      const { payload } = outcome;
      markPayload(res, payload);
      setAnswerHeader(res, FALLBACK_HEADER, `${outcome.code}; action=${outcome.action}`);
      deps.logger.warn(
        {
          backend: payload.metadata.backend,
          tenant: principal.tenant.id,
          code: outcome.code,
          action: outcome.action,
          door: request.native?.kind,
        },
        "drop-in door fallback",
      );
      const served = outcome.action === "cache" && payload.native !== undefined;
      sendRendered(res, () => (served ? render.answer(payload) : render.empty()), {
        deps,
        render,
        principal,
        request,
      });
      return;
    }
  }
}

/** The fallback a door answers when rendering failed: nothing served, as a `skip`. */
export const RENDER_FALLBACK = "POLICY_FAILED; action=skip";

/**
 * Sends a door's rendered answer. Rendering walks objects an upstream sent (kept items, echoed fields); whatever
 * makes it throw — a stack overflow on a structure the upstream JSON bound (src/backends/json.ts) did not stop,
 * a bug — the caller gets the door's empty answer as a `POLICY_FAILED` skip (`x-memgate-fallback`), never a 5xx;
 * the failure is logged (its class only: the message may quote upstream text).
 */
function sendRendered(
  res: ServerResponse,
  answer: () => unknown,
  ctx: {
    deps: { logger: Logger };
    render: DoorRendering;
    principal: ReturnType<typeof principalOf>;
    request: DoorRequest;
  },
): void {
  let text: string;
  try {
    text = JSON.stringify(answer());
  } catch (err) {
    ctx.deps.logger.error(
      {
        err: { type: err instanceof Error ? err.name : typeof err },
        tenant: ctx.principal.tenant.id,
        door: ctx.request.native?.kind,
      },
      "drop-in door rendering failed: answered its fallback",
    );
    setAnswerHeader(res, FALLBACK_HEADER, RENDER_FALLBACK);
    text = JSON.stringify(ctx.render.empty());
  }
  sendJson(res, 200, text);
}

function markPayload(res: ServerResponse, payload: RetrievalPayload): void {
  const { policy, cache } = payload.metadata;
  setAnswerHeader(res, POLICY_HEADER, `${policy.name}@${policy.version}`);
  setAnswerHeader(res, CACHE_HEADER, cache);
}

export { isRecord } from "../backends/json";
