import { z } from "zod";
import { BACKEND_NAMES } from "../policy/schema";

/**
 * userId and sessionId share this pattern (docs/api.md#the-retrieval-request): never `.` or `..`, which would be
 * a dot segment in an upstream URL (`GET /users/{id}`: src/backends/upstream-path.ts).
 */
export const ID_PATTERN = /^(?!\.{1,2}$)[A-Za-z0-9_.:@-]{1,128}$/;
export const ID_RULE = 'must be 1–128 of [A-Za-z0-9_.:@-], not "." or ".."';

/**
 * The body of POST /v1/retrieve. Only what makes the request meaningless is a 400; what eligibility decides
 * (useMemory not true, a missing/invalid sessionId, a blank or long query) is a fallback in a 200 (docs/api.md#eligibility-and-fallbacks).
 */
export const retrieveBodySchema = z
  .object({
    userId: z.string({ error: "is required (a string)" }).regex(ID_PATTERN, ID_RULE),
    sessionId: z.unknown().optional().meta({ description: "Missing or invalid: SESSION_INVALID fallback." }),
    query: z.string({ error: "must be a string" }).max(65_536).optional(),
    useMemory: z.unknown().optional().meta({ description: "Anything but true: MEMORY_DISABLED fallback." }),
    policy: z
      .string()
      .regex(/^[a-z0-9][a-z0-9_.-]{0,63}$/, "must be a policy name")
      .optional(),
    backend: z.enum(BACKEND_NAMES).optional(),
    overrides: z.record(z.string(), z.unknown()).optional(),
    explain: z.boolean().optional(),
    /**
     * The time of the chat turn (ISO 8601 with a zone): relative time phrases in the query ("last month", "two
     * weeks ago") are resolved against it. Default: the gateway's clock when the request arrives.
     */
    turnTime: z.iso.datetime({ offset: true, error: "must be an ISO 8601 date-time with a zone" }).optional(),
  })
  .strict();

export type RetrieveBody = z.output<typeof retrieveBodySchema>;
