import { z } from "zod";
import { MEMORY_TYPES, ROLES } from "../../pipeline/types";

/**
 * One memory of the embedded local backend: a line of the JSONL data file (MEMGATE_LOCAL_DATA) or an
 * argument to `LocalStore.add`. Objects are strict: a misspelt key ("sesionId") is an error, not a silently
 * dropped field.
 */

/** The user-id pattern of the retrieval API (docs/api.md#the-retrieval-request): a user outside it could never be asked for. */
const USER_ID = /^[A-Za-z0-9_.:@-]{1,128}$/;

const nonBlank = (max: number) =>
  z
    .string()
    .max(max)
    .refine((s) => s.trim().length > 0, "must not be blank");

/**
 * ISO 8601 date-time with seconds and an explicit offset (`Z` or `+02:00`): without a zone the instant would
 * depend on the host's time zone. Stored re-serialized in UTC (`toISOString`).
 */
const timestamp = z
  .string({ error: "invalid ISO 8601 (expected a string such as 2026-03-01T09:00:00Z)" })
  .refine((s) => z.iso.datetime({ offset: true }).safeParse(s).success, {
    error: "invalid ISO 8601 (expected e.g. 2026-03-01T09:00:00Z, with seconds and a time zone)",
  })
  .transform((s) => new Date(s).toISOString());

const fields = {
  userId: z.string().regex(USER_ID, "1–128 characters of A-Z a-z 0-9 _ . : @ -"),
  content: nonBlank(100_000),
  type: z.enum(MEMORY_TYPES),
  timestamp,
  sessionId: nonBlank(256),
  role: z.enum(ROLES).optional(),
  messageId: nonBlank(256).optional(),
  tags: z.array(nonBlank(64)).max(64).optional(),
};

const id = nonBlank(256);

/** A record as stored: every field validated, timestamp in UTC. */
export const memoryRecordSchema = z.strictObject({ id, ...fields });
/** A record to add: `id` may be left out (the store assigns one), and so may `timestamp` (defaults to now). */
export const newMemorySchema = z.strictObject({
  id: id.optional(),
  ...fields,
  timestamp: timestamp.optional(),
});

type RecordOutput = z.output<typeof memoryRecordSchema>;
/** A stored memory. The store hands out frozen objects: change them through the store, never in place. */
export type MemoryRecord = Readonly<Omit<RecordOutput, "tags">> & { readonly tags?: readonly string[] };
export type MemoryRecordInput = z.input<typeof memoryRecordSchema>;
export type NewMemory = z.input<typeof newMemorySchema>;

/** `tags[2]`, `timestamp`, or `(record)` for the object itself. */
export function formatPath(path: readonly PropertyKey[]): string {
  let out = "";
  for (const key of path) {
    if (typeof key === "number") out += `[${key}]`;
    else out += out === "" ? String(key) : `.${String(key)}`;
  }
  return out === "" ? "(record)" : out;
}

/** One entry per issue: `timestamp: invalid ISO 8601 …`, joined with "; ". Never echoes the value. */
export function formatIssues(error: z.ZodError): string {
  return error.issues
    .map((i) =>
      i.code === "unrecognized_keys"
        ? `${i.keys.map((k) => formatPath([...i.path, k])).join(", ")}: unknown field`
        : `${formatPath(i.path)}: ${i.message}`,
    )
    .join("; ");
}
