import { z } from "zod";
import { MEMORY_TYPES, ROLES } from "./types";

/** ISO 8601 with a date and time (and optional zone), the form backends and replay files carry. */
const ISO_8601 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})?$/;

export const candidateSchema = z
  .object({
    id: z.string().min(1).max(256),
    content: z.string().max(1_000_000),
    score: z.number().min(0).max(1),
    timestamp: z
      .string()
      .regex(ISO_8601, "must be an ISO 8601 date-time")
      .refine((s) => !Number.isNaN(Date.parse(s)), "must be a real date"),
    sessionId: z.string().max(256),
    messageId: z.string().max(256).optional(),
    type: z.enum(MEMORY_TYPES),
    role: z.enum(ROLES).optional(),
    backend: z.string().max(64).optional(),
    sourceId: z.string().max(256).optional(),
    replyTo: z.string().min(1).max(256).optional(),
    origin: z.literal("reply").optional(),
    /** The backend's own score, not on the common scale (src/pipeline/types.ts). */
    backendScore: z.number().optional(),
    /** A fact's validity (Zep edges' `valid_at`, `invalid_at`): src/pipeline/types.ts. */
    validAt: z
      .string()
      .regex(ISO_8601, "must be an ISO 8601 date-time")
      .refine((s) => !Number.isNaN(Date.parse(s)), "must be a real date")
      .optional(),
    invalidAt: z
      .string()
      .regex(ISO_8601, "must be an ISO 8601 date-time")
      .refine((s) => !Number.isNaN(Date.parse(s)), "must be a real date")
      .optional(),
  })
  .strict();

/** The input of `memgate replay` (docs/policy.md#replay). */
export const replayInputSchema = z
  .object({
    query: z.string().max(32_768),
    userId: z.string().min(1).max(128),
    results: z.array(candidateSchema).max(10_000),
  })
  .strict();
export type ReplayInput = z.output<typeof replayInputSchema>;

/**
 * The first `n` candidates of a backend's list, counting only the ones it found (a reply turn a backend added
 * after its question comes along with it, as the backend itself would have returned it for a fetch of `n`).
 */
export function firstCandidates<T extends { origin?: "reply" }>(list: readonly T[], n: number): T[] {
  const out: T[] = [];
  let found = 0;
  for (const c of list) {
    if (c.origin !== "reply") {
      if (found >= n) break;
      found++;
    }
    out.push(c);
  }
  return out;
}
