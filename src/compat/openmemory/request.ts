/**
 * The body of `POST /memory/query` on the OpenMemory surface: OpenMemory's own fields (`query` 1–8192 chars,
 * `k` 1–200, default 8, `user_id`, `filters`), plus seed 003's extras (src/backends/openmemory/extras.ts), which a client sends as
 *
 *     { "query": "...", "k": 10,
 *       "filters": { "tags": ["file_ingest", "docs"] },          // AND
 *       "as_of": "2026-03-01T09:00:00Z",                           // or epoch ms; also accepted inside filters
 *       "version_strategy": "latest" }                             // latest | earliest | longest | score
 *
 * (`openmemory-js`: `client.query(q, { k, filters: { tags }, ...{ as_of, version_strategy } })`; its `query`
 * sends every option it is given). Unknown fields pass through to the upstream untouched; the extras do not
 * (OpenMemory has no tag filter and would ignore them anyway): they apply in the backend
 * (src/backends/openmemory/extras.ts).
 *
 * A malformed body gets 400 in OpenMemory's own error shape `{"error":"invalid_input","details":[...]}`.
 */
import { z } from "zod";
import { type Extras, VERSION_STRATEGIES } from "../../backends/openmemory/extras";
import { OPENMEMORY_MAX_K } from "../../backends/openmemory/native";
import { DOT_ID_RULE, isDotSegmentId } from "../../backends/upstream-path";
import { reservedOwnerProblem } from "../owners";

export const OPENMEMORY_DEFAULT_K = 8;

const asOf = z.union([z.number(), z.string()]).transform((v, ctx) => {
  const ms = typeof v === "number" ? v : /(Z|[+-]\d{2}:?\d{2})$/i.test(v.trim()) ? Date.parse(v) : Number.NaN;
  if (!Number.isFinite(ms)) {
    ctx.addIssue({ code: "custom", message: "expected an ISO 8601 date-time with a zone, or epoch ms" });
    return z.NEVER;
  }
  return ms;
});
const strategy = z.enum(VERSION_STRATEGIES, { error: `expected one of ${VERSION_STRATEGIES.join(", ")}` });

/** A user id never `.` or `..` (src/backends/upstream-path.ts). */
const userId = z.string().refine((v) => !isDotSegmentId(v), DOT_ID_RULE);

const filtersSchema = z.looseObject({
  tags: z.array(z.string().min(1).max(256)).max(64).optional(),
  user_id: userId.optional(),
  as_of: asOf.optional(),
  version_strategy: strategy.optional(),
});

const queryBodySchema = z.looseObject({
  query: z.string({ error: "expected string" }).min(1, "length < 1").max(8192, "length > 8192"),
  k: z.number().int().min(1).max(OPENMEMORY_MAX_K, `expected integer 1–${OPENMEMORY_MAX_K}`).optional(),
  user_id: userId.optional(),
  filters: filtersSchema.optional(),
  as_of: asOf.optional(),
  version_strategy: strategy.optional(),
});

export interface OpenMemoryQuery {
  query: string;
  k: number;
  /** `filters.user_id`, else `user_id` (a body where both are given and differ is refused). */
  userId: string | undefined;
  extras: Extras;
  /** The body for the upstream without the extras (`k` is set by the caller). */
  upstreamBody: Record<string, unknown>;
}

export type ParsedQuery = { ok: true; value: OpenMemoryQuery } | { ok: false; details: string[] };

export function parseQuery(body: unknown): ParsedQuery {
  const parsed = queryBodySchema.safeParse(body);
  if (!parsed.success) {
    return {
      ok: false,
      details: parsed.error.issues.map((i) => `${i.path.map(String).join(".") || "body"}: ${i.message}`),
    };
  }
  const { as_of, version_strategy, filters, ...rest } = parsed.data;
  // OpenMemory filters by `filters.user_id` first: memgate's per-user limit and cache key must name the user the
  // server searches, so a body naming two users is refused rather than guessed (issue 26 finding 8).
  if (rest.user_id !== undefined && filters?.user_id !== undefined && rest.user_id !== filters.user_id) {
    return { ok: false, details: ["user_id: must equal filters.user_id when both are given"] };
  }
  const userId = filters?.user_id ?? rest.user_id;
  const reserved = userId === undefined ? undefined : reservedOwnerProblem(userId);
  if (reserved !== undefined) {
    return {
      ok: false,
      details: [`${filters?.user_id === undefined ? "" : "filters."}user_id: ${reserved}`],
    };
  }
  const {
    tags,
    as_of: filterAsOf,
    version_strategy: filterStrategy,
    ...upstreamFilters
  } = filters ?? { tags: undefined, as_of: undefined, version_strategy: undefined };
  const extras: Extras = {};
  if (tags !== undefined && tags.length > 0) extras.tags = tags;
  const asOfMs = as_of ?? filterAsOf;
  if (asOfMs !== undefined) extras.asOfMs = asOfMs;
  const chosen = version_strategy ?? filterStrategy;
  if (chosen !== undefined) extras.strategy = chosen;
  const upstreamBody: Record<string, unknown> = { ...rest };
  if (filters !== undefined) upstreamBody.filters = upstreamFilters;
  return {
    ok: true,
    value: {
      query: rest.query,
      k: rest.k ?? OPENMEMORY_DEFAULT_K,
      userId,
      extras,
      upstreamBody,
    },
  };
}
