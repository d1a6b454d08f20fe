import { readFile } from "node:fs/promises";
import { z } from "zod";
import { addLines, formatProblem } from "../config/yaml";
import { compilePolicyFile, validLine } from "../policy/compile";
import type { PolicyProblem } from "../policy/load";
import { policySchema } from "../policy/schema";
import { type CliIo, EXIT_INVALID, EXIT_OK } from "./io";

/** `memgate policy validate <files…>`: exit 0, or 2 with one line per problem on stderr. */
export async function validateCommand(files: string[], io: CliIo): Promise<number> {
  const problems: PolicyProblem[] = [];
  const seen = new Map<string, string>();
  for (const file of files) {
    const result = await compilePolicyFile(file);
    if (!result.ok) {
      problems.push(...result.problems);
      continue;
    }
    const { policy } = result.compiled;
    const other = seen.get(policy.name);
    if (other !== undefined) {
      const duplicate = {
        file,
        path: ["name"],
        message: `policy "${policy.name}" is also defined in ${other}`,
      };
      // The line of `name:` in this file (read again: only the rare duplicate pays for it).
      problems.push(...addLines([duplicate], await readFile(file, "utf8").catch(() => "")));
      continue;
    }
    seen.set(policy.name, file);
    io.out(validLine(file, result.compiled));
  }
  for (const p of problems) io.err(formatProblem(p));
  return problems.length > 0 ? EXIT_INVALID : EXIT_OK;
}

/** The JSON Schema of a policy file as written (defaults optional), for editors. */
export function policyJsonSchema(): Record<string, unknown> {
  const schema = z.toJSONSchema(policySchema, { io: "input", target: "draft-2020-12" });
  return {
    ...schema,
    $id: "https://memgate.dev/schemas/policy.json",
    title: "memgate retrieval policy",
    description:
      "One memgate retrieval policy (docs/policy.md#fields). Ranges are seed 000's AdminMemorySettings.",
  };
}

export function schemaCommand(io: CliIo): number {
  io.out(JSON.stringify(policyJsonSchema(), null, 2));
  return EXIT_OK;
}
