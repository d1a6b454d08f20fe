/**
 * The route registry of the OpenAPI document (./document.ts): one line per route the gateway serves, with the zod
 * schemas its handler validates with (request) and answers with (./schemas.ts, src/retrieval/payload-schema.ts).
 * test/http/openapi.routes.test.ts walks the real app (its hot routes and its Express router) and fails when a
 * route is served and not listed here, or listed and not served.
 *
 * ADDING A ROUTE — one line in `API_ROUTES`, then `npm run openapi` (rewrites docs/openapi.json):
 *
 *   api("post", "/v1/memories/details", {
 *     tag: "retrieval", summary: "…", access: "retrieve",            // "public" or the scope the key needs
 *     body: { schema: detailsBodySchema, limit: "64kb" },            // the zod schema the handler parses
 *     ok: { schema: detailsAnswerSchema, description: "…" },         // a zod schema with .meta({ id })
 *   }),
 *
 * Express `:param`s are written `{param}`; path parameters are derived from the path. The error answers
 * (401/403/429 for a keyed route, 400/413/415 for a JSON body, 503 while draining) are added by ./document.ts;
 * `errors` lists any other problem+json status the route answers (e.g. 404). A drop-in route of the Zep or
 * OpenMemory API is `dropIn(…)`: its wire format is the upstream SDK's and is not restated. A mount that answers
 * a whole prefix or every method of a path (`router.use`, `router.all`: a proxy, static files) is a line in
 * `PREFIX_ROUTES`. A new answer schema goes in ./schemas.ts with `.meta({ id })` and a `Describes` check against
 * the type the handler sends; a new tag is a line in `TAGS`. A route whose answer is not JSON gives
 * `ok.contentType` (e.g. "text/event-stream"); other statuses with their own body, `also`.
 */
import { z } from "zod";
import { indexPayloadSchema, retrievalPayloadSchema } from "../../retrieval/payload-schema";
import { detailsBodySchema, retrieveBodySchema, timelineBodySchema } from "../../retrieval/request";
import type { Scope } from "../../tenants/types";
import {
  COMPARE_BODY,
  compareBodySchema,
  EVAL_BODY,
  evalBodySchema,
  VALIDATE_BODY,
  validateBodySchema,
} from "../routes/playground";
import {
  comparisonSchema,
  effectivePolicySchema,
  evaluationSchema,
  healthSchema,
  playgroundInfoSchema,
  playgroundModeSchema,
  policyCheckSchema,
  policyListSchema,
  readinessSchema,
  shadowReportSchema,
} from "./schemas";

export type HttpMethod = "get" | "post" | "put" | "patch" | "delete";

export const TAGS = {
  retrieval: "The retrieval API: a chat turn's memories, shaped by the tenant's policy.",
  agents: "The agents' door: an MCP server whose tools go through the same retrieval core as /v1.",
  operations: "Health, readiness, metrics, this document, and the policies' state (admin).",
  playground:
    "The policy playground (README, 'Policy playground'): served only when MEMGATE_PLAYGROUND is on. Admin scope.",
  "drop-in: Zep":
    "Zep Cloud v3 under /api/v2 for the Zep SDK (docs/adopting.md): searches and thread context are answered in " +
    "Zep's own shape with the tenant's policy applied; every other /api/v2 call is proxied to the tenant's Zep " +
    "unchanged. Wire formats are Zep's and are not restated here.",
  "drop-in: OpenMemory":
    "The OpenMemory API for the OpenMemory SDK (docs/adopting.md): /memory/query is answered in OpenMemory's shape " +
    "with the tenant's policy applied; the other routes are proxied to the tenant's OpenMemory, or served from " +
    "its embedded local store. Wire formats are OpenMemory's and are not restated here.",
} as const;
export type Tag = keyof typeof TAGS;

export interface Answer {
  schema: z.ZodType;
  description: string;
  /** Default `application/json`. */
  contentType?: string;
}

export interface ApiRoute {
  method: HttpMethod;
  /** OpenAPI form: `/users/{userId}/memories`. */
  path: string;
  tag: Tag;
  summary: string;
  description?: string;
  /** `public`: no key; otherwise a key (Bearer or x-api-key) of a tenant with this scope. */
  access: "public" | Scope;
  /** A JSON body, parsed with `schema`, at most `limit` (as given to `jsonBody`, e.g. "64kb"). */
  body?: { schema: z.ZodType; limit: string };
  ok: Answer & { status?: 200 | 201 | 204 };
  /** Other answers than the problem+json ones ./document.ts adds, by status (e.g. /readyz's 503). */
  also?: Record<number, Answer>;
  /** Other problem+json statuses the route answers (e.g. 404). */
  errors?: number[];
}

export function api(method: HttpMethod, path: string, spec: Omit<ApiRoute, "method" | "path">): ApiRoute {
  return { method, path, ...spec };
}

const upstreamAnswer = (what: string): Answer => ({ schema: z.unknown(), description: what });

/** A route of a drop-in API: the upstream SDK's wire format, not restated. */
export function dropIn(
  method: HttpMethod,
  path: string,
  tag: "drop-in: Zep" | "drop-in: OpenMemory",
  access: Scope,
  summary: string,
  bodyLimit?: string,
): ApiRoute {
  return {
    method,
    path,
    tag,
    summary,
    access,
    ...(bodyLimit === undefined ? {} : { body: { schema: z.unknown(), limit: bodyLimit } }),
    ok: upstreamAnswer(`The ${tag.slice("drop-in: ".length)} API's answer, in its wire format.`),
    // A shaped route (scope `retrieve`) answers a failing upstream with its fallback; a proxied one cannot.
    ...(access === "proxy" ? { errors: [502, 504] } : {}),
  };
}

/** Every route of the gateway. Register a new one here (see the top of this file). */
export const API_ROUTES: readonly ApiRoute[] = [
  // --- the retrieval API (src/http/routes/retrieve.ts) ---
  api("post", "/v1/retrieve", {
    tag: "retrieval",
    summary: "Memories for one chat turn, shaped by the policy",
    description:
      "Eligibility (useMemory, sessionId, query) and a failing backend are never errors: they answer 200 with " +
      "`metadata.fallback` set (docs/api.md#eligibility-and-fallbacks). `overrides` and `explain` need the admin scope.",
    access: "retrieve",
    body: { schema: retrieveBodySchema, limit: "64kb" },
    ok: {
      schema: z.union([retrievalPayloadSchema, indexPayloadSchema]),
      description:
        'The shaped memories, or a declared fallback; with `detail: "index"` the index lines instead (progressive disclosure\'s layer 1).',
    },
  }),
  api("post", "/v1/memories/details", {
    tag: "retrieval",
    summary: "Progressive disclosure, layer 3: the full shaped content of given memory ids",
    description:
      "Only the user's own ids: another user's or an unknown id is simply absent. Redacted, screened and within the " +
      "policy's budget (docs/api.md#progressive-disclosure).",
    access: "retrieve",
    body: { schema: detailsBodySchema, limit: "64kb" },
    ok: { schema: retrievalPayloadSchema, description: "The memories asked for, or a declared fallback." },
  }),
  api("post", "/v1/memories/timeline", {
    tag: "retrieval",
    summary: "Progressive disclosure, layer 2: the turns before and after a memory, as index lines",
    access: "retrieve",
    body: { schema: timelineBodySchema, limit: "64kb" },
    ok: { schema: indexPayloadSchema, description: "The timeline, or a declared fallback." },
    errors: [404],
  }),
  api("post", "/mcp", {
    tag: "agents",
    summary: "The MCP server (Streamable HTTP, stateless): search_memory, get_timeline, get_details",
    description:
      "JSON-RPC 2.0 messages of the Model Context Protocol (README, 'Agents (MCP)'). GET and DELETE /mcp answer 405: " +
      "there are no sessions.",
    access: "retrieve",
    body: { schema: z.unknown(), limit: "64kb" },
    ok: { schema: z.unknown(), description: "The JSON-RPC answer, as JSON or as one server-sent event." },
  }),
  // --- operations (src/http/routes/ops.ts, src/telemetry/metrics-endpoint.ts, ./route.ts) ---
  api("get", "/healthz", {
    tag: "operations",
    summary: "The process is alive",
    access: "public",
    ok: { schema: healthSchema, description: "Alive." },
  }),
  api("get", "/readyz", {
    tag: "operations",
    summary: "This replica can serve",
    description: "A failing backend or Redis is `degraded` with a 200: fallbacks still answer.",
    access: "public",
    ok: { schema: readinessSchema, description: "`ready` or `degraded`, with the checks." },
    also: {
      503: { schema: readinessSchema, description: "`not_ready` (naming what stops it) or `draining`." },
    },
  }),
  api("get", "/metrics", {
    tag: "operations",
    summary: "Prometheus metrics",
    description:
      "Unauthenticated unless MEMGATE_METRICS_TOKEN is set (then `Authorization: Bearer <that token>`, not a " +
      "memgate key); absent from this port when MEMGATE_METRICS_PORT gives it a listener of its own.",
    access: "public",
    ok: { schema: z.string(), description: "Prometheus text exposition.", contentType: "text/plain" },
    also: {
      401: {
        schema: z.string(),
        description: "MEMGATE_METRICS_TOKEN is set and was not sent.",
        contentType: "text/plain",
      },
      503: { schema: z.string(), description: "Too many scrapes at once; retry.", contentType: "text/plain" },
    },
  }),
  api("get", "/openapi.json", {
    tag: "operations",
    summary: "This document",
    description: "Public, like /healthz: it describes the API and holds no tenant's data.",
    access: "public",
    ok: {
      schema: z.record(z.string(), z.unknown()),
      description: "The OpenAPI 3.1 document (docs/openapi.json).",
    },
  }),
  api("get", "/v1/policies", {
    tag: "operations",
    summary: "The tenant's policies and rejected policy files",
    access: "admin",
    ok: { schema: policyListSchema, description: "Each policy's version, hash, status and last error." },
  }),
  api("get", "/v1/policies/{name}/effective", {
    tag: "operations",
    summary: "One policy as it runs: compiled, every default filled in",
    description: "Unknown, retired (file deleted) and not allowed for the tenant are the same 404.",
    access: "admin",
    ok: { schema: effectivePolicySchema, description: "The effective policy." },
    errors: [404],
  }),
  // --- the policy playground (src/http/routes/playground.ts) ---
  api("get", "/ui", {
    tag: "playground",
    summary: "The playground page",
    description: "The page holds no data; its calls carry the admin key the user pastes.",
    access: "public",
    ok: { schema: z.string(), description: "The page.", contentType: "text/html" },
  }),
  api("get", "/ui/mode", {
    tag: "playground",
    summary: "Whether any key works (dev mode)",
    description: "Asked by the page before it has a key, to say so; nothing else, no key needed.",
    access: "public",
    ok: { schema: playgroundModeSchema, description: "Dev mode or not." },
  }),
  api("get", "/v1/playground", {
    tag: "playground",
    summary: "What the page offers this key's tenant",
    access: "admin",
    ok: {
      schema: playgroundInfoSchema,
      description: "Backends, policies, golden set size; in dev mode, the local store's users.",
    },
  }),
  api("get", "/v1/playground/shadow", {
    tag: "playground",
    summary: "The live shadow report of this key's tenant (docs/rollouts.md#shadow)",
    access: "admin",
    ok: {
      schema: shadowReportSchema,
      description: "Recent shadow runs in this process: tokens, overlap, what each side drops most.",
    },
  }),
  api("post", "/v1/playground/validate", {
    tag: "playground",
    summary: "Check a policy text as `memgate policy validate` does",
    access: "admin",
    body: { schema: validateBodySchema, limit: VALIDATE_BODY },
    ok: { schema: policyCheckSchema, description: "The check, valid or not." },
  }),
  api("post", "/v1/playground/compare", {
    tag: "playground",
    summary: "Run one or two policies on the same candidates",
    access: "admin",
    body: { schema: compareBodySchema, limit: COMPARE_BODY },
    ok: { schema: comparisonSchema, description: "Each policy's run, with its explain trace." },
  }),
  api("post", "/v1/playground/eval", {
    tag: "playground",
    summary: "Score one or two policies on the golden set",
    description:
      "With `Accept: application/x-ndjson` the answer is a stream of lines: `{progress: {done, total}}` while the " +
      "searches run, then `{result: Evaluation}` (or `{problem}`). Closing the request stops the searches " +
      "(docs/api.md#playground-api).",
    access: "admin",
    body: { schema: evalBodySchema, limit: EVAL_BODY },
    ok: { schema: evaluationSchema, description: "Each policy's report, and the sweep with `budgets`." },
    errors: [404],
  }),
  // --- drop-in Zep (src/compat/zep/routes.ts) ---
  dropIn(
    "post",
    "/api/v2/graph/search",
    "drop-in: Zep",
    "retrieve",
    "graph.search, shaped by the policy",
    "256kb",
  ),
  dropIn(
    "get",
    "/api/v2/threads/{threadId}/context",
    "drop-in: Zep",
    "retrieve",
    "thread.getUserContext, shaped",
  ),
  dropIn("post", "/api/v2/threads/{threadId}/messages", "drop-in: Zep", "proxy", "thread.addMessages", "1mb"),
  // --- drop-in OpenMemory (src/compat/openmemory/routes.ts) ---
  dropIn("post", "/memory/query", "drop-in: OpenMemory", "retrieve", "query, shaped by the policy", "1mb"),
  dropIn("post", "/memory/add", "drop-in: OpenMemory", "proxy", "add", "1mb"),
  dropIn("get", "/memory/all", "drop-in: OpenMemory", "proxy", "list memories"),
  dropIn("get", "/memory/{id}", "drop-in: OpenMemory", "proxy", "get a memory"),
  dropIn("delete", "/memory/{id}", "drop-in: OpenMemory", "proxy", "delete a memory"),
  dropIn("get", "/users/{userId}/memories", "drop-in: OpenMemory", "proxy", "a user's memories"),
  dropIn("delete", "/users/{userId}/memories", "drop-in: OpenMemory", "proxy", "delete a user's memories"),
  dropIn("get", "/health", "drop-in: OpenMemory", "proxy", "OpenMemory's health"),
];

/**
 * A mount that answers every path under a prefix, any method (`router.use(prefix, …)`: a proxy, static files), or
 * every method of one path (`router.all(path, …)`): in the document as `x-prefix-routes`, since OpenAPI has no
 * wildcard paths.
 */
export interface PrefixRoute {
  prefix: string;
  access: "public" | Scope;
  description: string;
}

export const PREFIX_ROUTES: readonly PrefixRoute[] = [
  {
    prefix: "/api/v2",
    access: "proxy",
    description: "Any other Zep v3 call: proxied to the tenant's Zep unchanged.",
  },
  {
    prefix: "/memory",
    access: "proxy",
    description: "Any other OpenMemory call: proxied (or the local store).",
  },
  { prefix: "/users", access: "proxy", description: "OpenMemory user routes: proxied (or the local store)." },
  { prefix: "/health", access: "proxy", description: "OpenMemory health: proxied (or the local store)." },
  {
    prefix: "/sectors",
    access: "proxy",
    description: "OpenMemory sectors: proxied to the tenant's OpenMemory.",
  },
  {
    prefix: "/ui",
    access: "public",
    description: "The playground page's static files (MEMGATE_PLAYGROUND).",
  },
];
