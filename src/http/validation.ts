import type { ZodError } from "zod";
import { formatPath } from "../config/yaml";

/** `userId: must be 1–128 of [A-Za-z0-9_.:@-]; foo: unknown field` — every problem, each naming its field path. */
export function describeZodError(error: ZodError, root = "body"): string {
  return error.issues
    .map((issue) => {
      const path = issue.path.filter((s): s is string | number => typeof s !== "symbol");
      if (issue.code === "unrecognized_keys") {
        return issue.keys.map((k) => `${formatPath([...path, k])}: unknown field`).join("; ");
      }
      if (issue.code === "invalid_type" && path.length === 0) return `${root}: must be a JSON object`;
      return `${path.length > 0 ? formatPath(path) : root}: ${issue.message}`;
    })
    .join("; ");
}
