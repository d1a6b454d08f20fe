import type { ServerResponse } from "node:http";
import { DEFAULT_TIMELINE_WINDOW } from "../../retrieval/disclosure";
import type { RetrievalOutcome } from "../../retrieval/outcome";
import { detailsBodySchema, timelineBodySchema } from "../../retrieval/request";
import type { RetrievalService } from "../../retrieval/service";
import type { TenantDirectory } from "../../tenants/types";
import { HttpProblem } from "../errors";
import { guardedRoute, type HotRoute } from "../hot";
import { refusalProblem } from "../outcome";
import { abortOnClose, sendJson } from "../plain";
import type { KeyLimits } from "../rate-limit";
import { describeZodError } from "../validation";

interface Deps {
  tenants: TenantDirectory;
  retrieval: RetrievalService;
  keyLimits?: KeyLimits;
}

/**
 * POST /v1/memories/details and POST /v1/memories/timeline (docs/api.md#progressive-disclosure): layers 3 and 2
 * of progressive disclosure, with /v1/retrieve's guards (key, per-key limit, scope `retrieve`, a JSON body of at
 * most 64 KiB) and its answers: the outcome as JSON, a fallback in a 200, a refusal as problem+json (an id that is
 * not the user's: 404 on a timeline, simply absent from details).
 */
export function disclosureRoutes(deps: Deps): HotRoute[] {
  const details = { path: "/v1/memories/details", scope: "retrieve", bodyLimit: "64kb" } as const;
  const timeline = { path: "/v1/memories/timeline", scope: "retrieve", bodyLimit: "64kb" } as const;
  return [
    guardedRoute(deps, details, async function memoryDetails(_req, res, { principal, body: raw }) {
      const parsed = detailsBodySchema.safeParse(raw);
      if (!parsed.success) throw new HttpProblem("VALIDATION_FAILED", describeZodError(parsed.error));
      const body = parsed.data;
      const outcome = await deps.retrieval.details({
        principal,
        userId: body.userId,
        ids: body.ids,
        policy: body.policy,
        backend: body.backend,
        signal: abortOnClose(res),
      });
      send(res, outcome);
    }),
    guardedRoute(deps, timeline, async function memoryTimeline(_req, res, { principal, body: raw }) {
      const parsed = timelineBodySchema.safeParse(raw);
      if (!parsed.success) throw new HttpProblem("VALIDATION_FAILED", describeZodError(parsed.error));
      const body = parsed.data;
      const window = body.window ?? DEFAULT_TIMELINE_WINDOW;
      const outcome = await deps.retrieval.timeline({
        principal,
        userId: body.userId,
        id: body.id,
        before: window,
        after: window,
        policy: body.policy,
        backend: body.backend,
        signal: abortOnClose(res),
      });
      send(res, outcome, true);
    }),
  ];
}

/** Details: `{memories, metadata, systemPrompt}`; a timeline: `{index, metadata, systemPrompt}` (its lines). */
function send(res: ServerResponse, outcome: RetrievalOutcome, asIndex = false): void {
  switch (outcome.kind) {
    case "payload":
    case "fallback":
      sendJson(res, 200, JSON.stringify(asIndex ? (outcome.index ?? emptyIndex(outcome)) : outcome.payload));
      return;
    case "refused":
      throw refusalProblem(outcome);
    case "rejected":
      throw new HttpProblem("INTERNAL", "unexpected upstream answer");
  }
}

function emptyIndex(outcome: Extract<RetrievalOutcome, { kind: "payload" | "fallback" }>) {
  return { index: [], metadata: { ...outcome.payload.metadata, indexTokens: 0 }, systemPrompt: "" };
}
