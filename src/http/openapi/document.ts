/**
 * The OpenAPI 3.1 document of the gateway, generated from the route registry (./routes.ts) and the zod schemas the
 * routes validate and answer with: a schema change is a document change. Served at `GET /openapi.json`
 * (./route.ts) and checked in as docs/openapi.json (`npm run openapi`; test/http/openapi.test.ts fails when the
 * file is stale).
 *
 * Built with zod-openapi (5.x: Node ≥ 20, zod 4), a thin layer over zod 4's own `z.toJSONSchema`: it turns the
 * schemas of requests (input) and answers (output) into JSON Schema 2020-12 (OpenAPI 3.1's dialect) and the ones
 * with `.meta({ id })` into `#/components/schemas` entries; the paths and operations are written here.
 */
import { z } from "zod";
import {
  createDocument,
  type oas31,
  type ZodOpenApiOperationObject,
  type ZodOpenApiResponseObject,
  type ZodOpenApiResponsesObject,
} from "zod-openapi";
import { type Answer, API_ROUTES, type ApiRoute, PREFIX_ROUTES, type PrefixRoute, TAGS } from "./routes";
import { problemSchema } from "./schemas";

const DESCRIPTION = [
  "memgate is a retrieval-policy gateway in front of long-term memory services (Zep Cloud, OpenMemory, an embedded",
  "local store): docs/api.md is the prose reference, this document the machine-readable one, generated from the",
  "zod schemas the gateway validates with.",
  "",
  "Keys: `Authorization: Bearer <key>` or `x-api-key: <key>` (also `Authorization: Api-Key <key>`, the Zep SDK's",
  "form). A route names the scope its key needs (`x-memgate-scope`: retrieve, admin or proxy). Without a tenants",
  "file the gateway runs in dev mode: one tenant with every scope, any key or none accepted.",
  "",
  "Errors are `application/problem+json` (`Problem`) and only for the caller's own faults: a failing backend, Redis",
  "or policy stage never produces a 5xx but a declared fallback in a 200 (`metadata.fallback`).",
  "",
  "The drop-in Zep (`/api/v2/*`) and OpenMemory APIs are listed by path only: their wire formats are the SDKs';",
  "`x-prefix-routes` lists the prefixes proxied as a whole.",
].join("\n");

const STATUS_TEXT: Record<number, string> = {
  400: "Malformed JSON, or a field that fails the schema (`detail` names the field path).",
  401: "No key, or an unknown one.",
  403: "The key's tenant lacks the scope, the policy or the backend asked for.",
  404: "Not found.",
  413: "The body is larger than the route's limit.",
  415: "The body is not application/json.",
  429: "The key exceeded its request rate.",
  502: "A proxied call: the upstream could not be reached.",
  504: "A proxied call: the upstream did not answer in time.",
  503: "The gateway is shutting down (draining): retry on another replica.",
};

const RATE_LIMIT_HEADERS = z.object({
  "Retry-After": z.string().meta({ description: "Seconds until the key may call again." }),
  RateLimit: z.string().meta({ description: '`"key";r=<remaining>;t=<reset s>` (IETF draft).' }),
  "RateLimit-Policy": z.string().meta({ description: '`"key";q=<points>;w=<window s>` (IETF draft).' }),
});

/**
 * The problem+json answer of a status, once in `components.responses` (`Problem429`, …) and referenced by every
 * route: one object per status (zod-openapi registers a component by the object's identity).
 */
const PROBLEM_ANSWERS = new Map<number, ZodOpenApiResponseObject>();
function problemAnswer(status: number): ZodOpenApiResponseObject {
  let answer = PROBLEM_ANSWERS.get(status);
  if (answer === undefined) {
    answer = {
      id: `Problem${status}`,
      description: STATUS_TEXT[status] ?? "A problem.",
      content: { "application/problem+json": { schema: problemSchema } },
      ...(status === 429 ? { headers: RATE_LIMIT_HEADERS } : {}),
      ...(status === 503 ? { headers: z.object({ "Retry-After": z.string() }) } : {}),
    };
    PROBLEM_ANSWERS.set(status, answer);
  }
  return answer;
}

const answerOf = (a: Answer) => ({
  description: a.description,
  content: { [a.contentType ?? "application/json"]: { schema: a.schema } },
});

/** The problem+json statuses a route answers: what its access and body imply, its own, and draining. */
function problemStatuses(route: ApiRoute): number[] {
  const statuses = new Set<number>(route.errors ?? []);
  if (route.access !== "public") for (const s of [401, 403, 429]) statuses.add(s);
  if (route.body !== undefined) for (const s of [400, 413, 415]) statuses.add(s);
  if (route.also?.[503] === undefined) statuses.add(503);
  return [...statuses].sort((a, b) => a - b);
}

/** `/users/{userId}/memories` → its path parameters as a zod object (every one a string). */
function pathParams(path: string): z.ZodObject | undefined {
  const names = [...path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1] ?? "");
  if (names.length === 0) return undefined;
  return z.object(Object.fromEntries(names.map((n) => [n, z.string()])));
}

function operationOf(route: ApiRoute): ZodOpenApiOperationObject {
  const responses: ZodOpenApiResponsesObject = { [String(route.ok.status ?? 200)]: answerOf(route.ok) };
  for (const [status, answer] of Object.entries(route.also ?? {}))
    responses[status as "200"] = answerOf(answer);
  for (const status of problemStatuses(route)) responses[String(status) as "200"] = problemAnswer(status);
  const params = pathParams(route.path);
  const keyed = route.access !== "public";
  const limits = route.body === undefined ? "" : `JSON body of at most ${describeLimit(route.body.limit)}.`;
  const scope = keyed ? `Needs a key with the \`${route.access}\` scope.` : "No key needed.";
  return {
    operationId: operationId(route),
    tags: [route.tag],
    summary: route.summary,
    description: [route.description, scope, limits].filter((s) => s !== undefined && s !== "").join(" "),
    security: keyed ? [{ bearer: [] }, { apiKey: [] }] : [],
    ...(keyed ? { "x-memgate-scope": route.access } : {}),
    ...(params === undefined ? {} : { requestParams: { path: params } }),
    ...(route.body === undefined
      ? {}
      : { requestBody: { required: true, content: { "application/json": { schema: route.body.schema } } } }),
    responses,
  };
}

/** `"64kb"` → `64 KiB`, `"1mb"` → `1 MiB` (the forms the routes give `jsonBody`). */
function describeLimit(limit: string): string {
  const m = /^(\d+)\s*(kb|mb)?$/i.exec(limit.trim());
  if (m === null) return limit;
  const unit = (m[2] ?? "").toLowerCase();
  return `${m[1]} ${unit === "mb" ? "MiB" : unit === "kb" ? "KiB" : "bytes"}`;
}

/** `post /v1/playground/compare` → `postV1PlaygroundCompare`; `get /memory/{id}` → `getMemoryById`. */
function operationId(route: ApiRoute): string {
  const words = route.path
    .split("/")
    .filter((s) => s !== "")
    .map((s) => (s.startsWith("{") ? `by ${s.slice(1, -1)}` : s))
    .flatMap((s) => s.split(/[^A-Za-z0-9]+/))
    .filter((w) => w !== "");
  return [route.method, ...words].map((w, i) => (i === 0 ? w : w[0]?.toUpperCase() + w.slice(1))).join("");
}

/** The document for these routes (by default every route of the gateway). */
export function buildOpenApiDocument(
  routes: readonly ApiRoute[] = API_ROUTES,
  prefixes: readonly PrefixRoute[] = PREFIX_ROUTES,
): oas31.OpenAPIObject {
  const paths: Record<string, Record<string, ZodOpenApiOperationObject>> = {};
  for (const route of routes) {
    const item = paths[route.path] ?? {};
    paths[route.path] = item;
    if (item[route.method] !== undefined)
      throw new Error(`${route.method} ${route.path} is registered twice`);
    item[route.method] = operationOf(route);
  }
  return createDocument({
    openapi: "3.1.0",
    info: { title: "memgate", version: "v1", description: DESCRIPTION, license: { name: "Apache-2.0" } },
    tags: Object.entries(TAGS).map(([name, description]) => ({ name, description })),
    paths,
    components: {
      securitySchemes: {
        bearer: {
          type: "http",
          scheme: "bearer",
          description: "A memgate API key: `Authorization: Bearer <key>`.",
        },
        apiKey: { type: "apiKey", in: "header", name: "x-api-key", description: "A memgate API key." },
      },
    },
    "x-prefix-routes": prefixes.map((p) => ({ ...p })),
  });
}

/** Every object's keys in code-point order, recursively (arrays keep their order): a stable text. */
function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (typeof value !== "object" || value === null) return value;
  const entries = Object.entries(value).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return Object.fromEntries(entries.map(([k, v]) => [k, sortKeys(v)]));
}

/** The document as docs/openapi.json holds it and /openapi.json serves it: stable key order, 2-space indent. */
export function openApiText(doc: oas31.OpenAPIObject = buildOpenApiDocument()): string {
  return `${JSON.stringify(sortKeys(doc), null, 2)}\n`;
}
