import { z } from "zod";
import { BACKEND_NAMES, POLICY_NAME } from "../policy/schema";
import { MAX_DETAIL_IDS, MAX_TIMELINE_WINDOW } from "./disclosure";

/**
 * userId and sessionId share this pattern (docs/api.md#the-retrieval-request): never `.` or `..`, which would be
 * a dot segment in an upstream URL (`GET /users/{id}`: src/backends/upstream-path.ts).
 */
export const ID_PATTERN = /^(?!\.{1,2}$)[A-Za-z0-9_.:@-]{1,128}$/;
export const ID_RULE = 'must be 1–128 of [A-Za-z0-9_.:@-], not "." or ".."';
/** The longest `query` (code units). */
const MAX_QUERY = 65_536;

/**
 * The body of POST /v1/retrieve. Only what makes the request meaningless is a 400; what eligibility decides
 * (useMemory not true, a missing/invalid sessionId, a blank or long query) is a fallback in a 200 (docs/api.md#eligibility-and-fallbacks).
 */
export const retrieveBodySchema = z
  .object({
    userId: z.string({ error: "is required (a string)" }).regex(ID_PATTERN, ID_RULE),
    sessionId: z.unknown().optional().meta({ description: "Missing or invalid: SESSION_INVALID fallback." }),
    query: z.string({ error: "must be a string" }).max(MAX_QUERY).optional(),
    useMemory: z.unknown().optional().meta({ description: "Anything but true: MEMORY_DISABLED fallback." }),
    policy: z.string().regex(POLICY_NAME, "must be a policy name").optional(),
    backend: z.enum(BACKEND_NAMES).optional(),
    overrides: z.record(z.string(), z.unknown()).optional(),
    explain: z.boolean().optional(),
    /**
     * The time of the chat turn (ISO 8601 with a zone): relative time phrases in the query ("last month", "two
     * weeks ago") are resolved against it. Default: the gateway's clock when the request arrives.
     */
    turnTime: z.iso.datetime({ offset: true, error: "must be an ISO 8601 date-time with a zone" }).optional(),
    /**
     * `full` (the default): the memories and their system prompt. `index`: layer 1 of progressive disclosure, an
     * index line per memory (id, gist, type, time, score, citation) and the index as the system prompt.
     */
    detail: z.enum(["index", "full"]).optional(),
  })
  .strict();

export type RetrieveBody = z.output<typeof retrieveBodySchema>;

const hasOwn = Object.prototype.hasOwnProperty;

/**
 * `retrieveBodySchema.safeParse(raw)`: a body that plainly passes (a plain object of the schema's fields, without
 * `overrides` or `turnTime`, each of the type and form the schema asks) is checked here without zod, and is its own
 * data (zod's would be a copy with the same fields); every other body, whatever it holds, goes to zod, so every
 * error is zod's own (test/http/retrieve-body.test.ts holds the two paths to the same answers).
 */
export function parseRetrieveBody(
  raw: unknown,
): { success: true; data: RetrieveBody } | { success: false; error: z.ZodError } {
  if (plainRetrieveBody(raw)) return { success: true, data: raw as RetrieveBody };
  const parsed = retrieveBodySchema.safeParse(raw);
  return parsed.success ? { success: true, data: parsed.data } : { success: false, error: parsed.error };
}

function plainRetrieveBody(raw: unknown): boolean {
  if (typeof raw !== "object" || raw === null || Object.getPrototypeOf(raw) !== Object.prototype)
    return false;
  const body = raw as Record<string, unknown>;
  for (const key in body) {
    if (!hasOwn.call(body, key)) return false;
    const v = body[key];
    switch (key) {
      case "userId":
        if (typeof v !== "string" || !ID_PATTERN.test(v)) return false;
        break;
      case "sessionId":
      case "useMemory":
        break;
      case "query":
        if (typeof v !== "string" || v.length > MAX_QUERY) return false;
        break;
      case "policy":
        if (typeof v !== "string" || !POLICY_NAME.test(v)) return false;
        break;
      case "backend":
        if (!(BACKEND_NAMES as readonly unknown[]).includes(v)) return false;
        break;
      case "explain":
        if (typeof v !== "boolean") return false;
        break;
      case "detail":
        if (v !== "index" && v !== "full") return false;
        break;
      default:
        return false; // overrides, turnTime (zod's), or a field the schema does not have
    }
  }
  return typeof body.userId === "string";
}

const userIdField = z.string({ error: "is required (a string)" }).regex(ID_PATTERN, ID_RULE);
const policyField = z.string().regex(POLICY_NAME, "must be a policy name").optional();
/** A memory id as a backend gives it (local ids, Zep uuids, OpenMemory ids). */
const memoryId = z.string({ error: "must be a memory id (a string)" }).min(1).max(256);

/** POST /v1/memories/details (layer 3): the full shaped content of some of the user's memories. */
export const detailsBodySchema = z
  .object({
    userId: userIdField,
    ids: z
      .array(memoryId, { error: "is required (a list of memory ids)" })
      .min(1, "give at least one id")
      .max(MAX_DETAIL_IDS, `at most ${MAX_DETAIL_IDS} ids`),
    policy: policyField,
    backend: z.enum(BACKEND_NAMES).optional(),
  })
  .strict();

/** POST /v1/memories/timeline (layer 2): the turns before and after one of the user's memories. */
export const timelineBodySchema = z
  .object({
    userId: userIdField,
    id: memoryId,
    /** Turns on each side (default 3, at most 10). */
    window: z.number().int().min(1).max(MAX_TIMELINE_WINDOW).optional(),
    policy: policyField,
    backend: z.enum(BACKEND_NAMES).optional(),
  })
  .strict();

export type DetailsBody = z.output<typeof detailsBodySchema>;
export type TimelineBody = z.output<typeof timelineBodySchema>;
