import { extname } from "node:path";
import { isNode, LineCounter, parseDocument } from "yaml";
import type { ZodError } from "zod";
import { type Policy, policySchema } from "./schema";

/** One problem in a policy file, precise enough to fix without reading the code. */
export interface PolicyProblem {
  file: string;
  /** 1-based line in the file when known. */
  line?: number;
  path: Array<string | number>;
  message: string;
}

export type PolicyParse = { ok: true; policy: Policy } | { ok: false; problems: PolicyProblem[] };

export class PolicyError extends Error {
  readonly problems: PolicyProblem[];
  constructor(problems: PolicyProblem[]) {
    super(problems.map(formatProblem).join("\n"));
    this.name = "PolicyError";
    this.problems = problems;
  }
}

/** `policies/a.yaml:4: retrieval.topK: must be an integer from 1 to 20 (got 50)` */
export function formatProblem(p: PolicyProblem): string {
  const where = p.line === undefined ? p.file : `${p.file}:${p.line}`;
  const path = p.path.length > 0 ? `${formatPath(p.path)}: ` : "";
  return `${where}: ${path}${p.message}`;
}

export function formatPath(path: ReadonlyArray<PropertyKey>): string {
  return path
    .map((seg, i) => (typeof seg === "number" ? `[${seg}]` : `${i === 0 ? "" : "."}${String(seg)}`))
    .join("");
}

/** Turns zod issues into problems, with the offending value and (for YAML) the line. */
export function problemsFromZod(
  file: string,
  error: ZodError,
  lineOf: (path: Array<string | number>) => number | undefined = () => undefined,
  input?: unknown,
): PolicyProblem[] {
  return error.issues.map((issue) => {
    const path = issue.path.filter((s): s is string | number => typeof s !== "symbol");
    let message = issue.message;
    if (issue.code === "unrecognized_keys") {
      const keys = issue.keys;
      const first = keys[0];
      const line = first === undefined ? undefined : lineOf([...path, first]);
      return {
        file,
        line: line ?? lineOf(path),
        path,
        message: `unknown key(s) ${keys.map((k) => `"${k}"`).join(", ")}`,
      };
    }
    const got = valueAt(input, path);
    if (issue.code === "invalid_type" && got === undefined && input !== undefined) message = "is required";
    if (
      got !== undefined &&
      (typeof got === "number" || typeof got === "string" || typeof got === "boolean")
    ) {
      message += ` (got ${JSON.stringify(got)})`;
    }
    return { file, line: lineOf(path), path, message };
  });
}

function valueAt(root: unknown, path: Array<string | number>): unknown {
  let cur: unknown = root;
  for (const seg of path) {
    if (cur === null || typeof cur !== "object") return undefined;
    if (!Object.hasOwn(cur, seg)) return undefined;
    cur = (cur as Record<string | number, unknown>)[seg];
  }
  return cur;
}

/** Parses YAML or JSON text (JSON is YAML) and validates it. Never throws. */
export function parsePolicyText(text: string, file: string): PolicyParse {
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { lineCounter, uniqueKeys: true, prettyErrors: false });
  if (doc.errors.length > 0) {
    return {
      ok: false,
      problems: doc.errors.map((e) => ({
        file,
        line: lineCounter.linePos(e.pos[0]).line,
        path: [],
        message: `not valid ${extname(file) === ".json" ? "JSON" : "YAML"}: ${e.message.split("\n")[0]}`,
      })),
    };
  }
  let data: unknown;
  try {
    // Throws on an alias without its anchor (`*x`) and on alias bombs (test/fuzz/policy.fuzz.test.ts).
    data = doc.toJS({ maxAliasCount: 50 });
  } catch (err) {
    const reason = err instanceof Error ? err.message.split("\n")[0] : "cannot be read";
    return { ok: false, problems: [{ file, line: 1, path: [], message: `not valid YAML: ${reason}` }] };
  }
  if (data === null || typeof data !== "object" || Array.isArray(data)) {
    return {
      ok: false,
      problems: [{ file, line: 1, path: [], message: "must be a mapping (an object) of policy fields" }],
    };
  }
  /** The line of the deepest node of `path` that exists in the document. */
  const lineOf = (path: Array<string | number>): number | undefined => {
    for (let n = path.length; n >= 0; n--) {
      const node = doc.getIn(path.slice(0, n), true);
      if (isNode(node) && node.range) return lineCounter.linePos(node.range[0]).line;
    }
    return undefined;
  };
  return validatePolicyObject(data, file, lineOf);
}

export function validatePolicyObject(
  data: unknown,
  file: string,
  lineOf?: (path: Array<string | number>) => number | undefined,
): PolicyParse {
  const parsed = policySchema.safeParse(data);
  if (!parsed.success) {
    const problems = problemsFromZod(file, parsed.error, lineOf, data);
    // In file order, so an ops team reads them top to bottom (stable for problems without a line).
    problems.sort((a, b) => (a.line ?? 0) - (b.line ?? 0));
    return { ok: false, problems };
  }
  return { ok: true, policy: parsed.data };
}

/** Problems found after parsing (e.g. an RE2 pattern) come without a line: find it in the file's text. */
export function addLines(problems: readonly PolicyProblem[], text: string): PolicyProblem[] {
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { lineCounter });
  return problems.map((p) => {
    if (p.line !== undefined) return p;
    for (let n = p.path.length; n > 0; n--) {
      const node = doc.getIn(p.path.slice(0, n), true);
      if (isNode(node) && node.range) return { ...p, line: lineCounter.linePos(node.range[0]).line };
    }
    return p;
  });
}
