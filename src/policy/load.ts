import { suggestKey } from "../config/suggest";
import { type ConfigProblem, formatProblem, type LineOf, parseYaml, problemsFromZod } from "../config/yaml";
import { type Policy, policySchema } from "./schema";

/** One problem in a policy file, precise enough to fix without reading the code. */
export type PolicyProblem = ConfigProblem;

export type PolicyParse = { ok: true; policy: Policy } | { ok: false; problems: PolicyProblem[] };

export class PolicyError extends Error {
  readonly problems: PolicyProblem[];
  constructor(problems: PolicyProblem[]) {
    super(problems.map(formatProblem).join("\n"));
    this.name = "PolicyError";
    this.problems = problems;
  }
}

/** Parses YAML or JSON text (JSON is YAML) and validates it. Never throws. */
export function parsePolicyText(text: string, file: string): PolicyParse {
  const parsed = parseYaml(text, file);
  if (!parsed.ok) return parsed;
  const data = parsed.value;
  if (data === null || typeof data !== "object" || Array.isArray(data)) {
    return {
      ok: false,
      problems: [{ file, line: 1, path: [], message: "must be a mapping (an object) of policy fields" }],
    };
  }
  return validatePolicyObject(data, file, parsed.lineOf);
}

/** Validates a parsed policy; problems echo the offending value (`(got 50)`): a policy file holds no secrets. */
export function validatePolicyObject(data: unknown, file: string, lineOf?: LineOf): PolicyParse {
  const parsed = policySchema.safeParse(data);
  if (!parsed.success) {
    return {
      ok: false,
      problems: problemsFromZod(file, parsed.error, {
        lineOf,
        input: data,
        echoValues: true,
        suggest: (parent, key) => suggestKey(policySchema, parent, key),
      }),
    };
  }
  return { ok: true, policy: parsed.data };
}
