import { readFile, stat } from "node:fs/promises";
import { join } from "node:path";
import { z } from "zod";
import { addLines, formatProblem } from "../config/yaml";
import { type CompiledPolicy, compilePolicyFile, validLine } from "../policy/compile";
import type { PolicyProblem } from "../policy/load";
import { policySchema } from "../policy/schema";
import { byCodeUnits, listPolicyFiles } from "../policy/watch";
import { type CliIo, EXIT_INVALID, EXIT_OK, type ProblemJson, problemJson } from "./io";

/** `memgate policy diff`: the policies differ (diff(1)'s 1). */
const EXIT_DIFFERENT = 1;

/** One file's result, as `--json` prints it. */
interface FileReport {
  file: string;
  ok: boolean;
  policy?: { name: string; version: number; hash: string };
  problems?: ProblemJson[];
}

/**
 * The files to validate: each argument as given, a directory as every policy file in it (`*.yaml`, `*.yml`,
 * `*.json`, not recursive, sorted as the server reads them). An empty or unreadable directory is a problem.
 */
async function expand(paths: string[]): Promise<{ files: string[]; problems: PolicyProblem[] }> {
  const files: string[] = [];
  const problems: PolicyProblem[] = [];
  for (const path of paths) {
    const isDir = await stat(path).then(
      (s) => s.isDirectory(),
      () => false,
    );
    if (!isDir) {
      files.push(path);
      continue;
    }
    try {
      const names = await listPolicyFiles(path);
      if (names.length === 0)
        problems.push({
          file: path,
          path: [],
          message: "no policy files (*.yaml, *.yml, *.json) in this directory",
        });
      files.push(...names.map((n) => join(path, n)));
    } catch (err) {
      problems.push({ file: path, path: [], message: err instanceof Error ? err.message : String(err) });
    }
  }
  return { files, problems };
}

/**
 * `memgate policy validate <files or directories…> [--json]`: one line per valid file (`file: ok (name vN, hash …)`)
 * on stdout, one `file:line: path: message` line per problem on stderr; exit 0, or 2 when any file is invalid. With
 * `--json`, one JSON document on stdout: `{ok, files: [{file, ok, policy | problems}]}`.
 */
export async function validateCommand(
  paths: string[],
  io: CliIo,
  opts: { json?: boolean } = {},
): Promise<number> {
  const expanded = await expand(paths);
  const problems: PolicyProblem[] = [...expanded.problems];
  const reports: FileReport[] = expanded.problems.map((p) => report(p.file, [p]));
  const seen = new Map<string, string>();
  for (const file of expanded.files) {
    const result = await compilePolicyFile(file);
    if (!result.ok) {
      problems.push(...result.problems);
      reports.push(report(file, result.problems));
      continue;
    }
    const { policy, hash } = result.compiled;
    const other = seen.get(policy.name);
    if (other !== undefined) {
      const duplicate = {
        file,
        path: ["name"],
        message: `policy "${policy.name}" is also defined in ${other}`,
      };
      // The line of `name:` in this file (read again: only the rare duplicate pays for it).
      const located = addLines([duplicate], await readFile(file, "utf8").catch(() => ""));
      problems.push(...located);
      reports.push(report(file, located));
      continue;
    }
    seen.set(policy.name, file);
    reports.push({ file, ok: true, policy: { name: policy.name, version: policy.version, hash } });
    if (!opts.json) io.out(validLine(file, result.compiled));
  }
  if (opts.json) io.out(JSON.stringify({ ok: problems.length === 0, files: reports }, null, 2));
  else for (const p of problems) io.err(formatProblem(p));
  return problems.length > 0 ? EXIT_INVALID : EXIT_OK;
}

function report(file: string, problems: PolicyProblem[]): FileReport {
  return {
    file,
    ok: false,
    problems: problems.map(problemJson),
  };
}

type Flat = Map<string, string>;

/** Dotted paths to JSON values (`retrieval.topK` → `8`); arrays are one value. */
function flatten(value: unknown, prefix: string, out: Flat): Flat {
  if (value !== null && typeof value === "object" && !Array.isArray(value)) {
    for (const key of Object.keys(value).sort()) {
      const v = (value as Record<string, unknown>)[key];
      if (v !== undefined) flatten(v, prefix === "" ? key : `${prefix}.${key}`, out);
    }
    return out;
  }
  out.set(prefix, JSON.stringify(value));
  return out;
}

/** One side of `policy diff --json`. */
const sideJson = (file: string, c: CompiledPolicy) => ({
  file,
  name: c.policy.name,
  version: c.policy.version,
  hash: c.hash,
});

/**
 * `memgate policy diff a.yaml b.yaml [--json]`: the difference between the two policies as they run (compiled, every
 * default filled in), one `path: old → new` line per dotted path that differs (`(absent)` for a side without it).
 * Like diff(1): exit 0 when the same, 1 when they differ, 2 when a file is invalid. `--json`: one document on stdout,
 * `{same, a: {file, name, version, hash}, b, changes: [{path, old?, new?}]}` (a side without the path has no key), or
 * `{ok: false, problems: [{file, line, path, message}]}` for an invalid file (exit 2).
 */
export async function diffCommand(
  a: string,
  b: string,
  io: CliIo,
  opts: { json?: boolean } = {},
): Promise<number> {
  const [left, right] = await Promise.all([compilePolicyFile(a), compilePolicyFile(b)]);
  if (!left.ok || !right.ok) {
    const problems = [...(left.ok ? [] : left.problems), ...(right.ok ? [] : right.problems)];
    if (opts.json) {
      const problemsJson = problems.map((p) => ({ file: p.file, ...problemJson(p) }));
      io.out(JSON.stringify({ ok: false, problems: problemsJson }, null, 2));
    } else for (const p of problems) io.err(formatProblem(p));
    return EXIT_INVALID;
  }
  const before = flatten(left.compiled.policy, "", new Map());
  const after = flatten(right.compiled.policy, "", new Map());
  const paths = [...new Set([...before.keys(), ...after.keys()])].sort(byCodeUnits);
  const changes = paths.flatMap((path) => {
    const x = before.get(path);
    const y = after.get(path);
    return x === y ? [] : [{ path, old: x, new: y }];
  });
  if (opts.json) {
    const parse = (v: string | undefined) => (v === undefined ? undefined : (JSON.parse(v) as unknown));
    const document = {
      same: changes.length === 0,
      a: sideJson(a, left.compiled),
      b: sideJson(b, right.compiled),
      changes: changes.map((c) => ({ path: c.path, old: parse(c.old), new: parse(c.new) })),
    };
    io.out(JSON.stringify(document, null, 2));
    return changes.length === 0 ? EXIT_OK : EXIT_DIFFERENT;
  }
  if (changes.length === 0) {
    io.out(`same effective policy (hash ${left.compiled.hash.slice(0, 12)})`);
    return EXIT_OK;
  }
  io.out(`--- ${a} (${idOf(left.compiled)})`);
  io.out(`+++ ${b} (${idOf(right.compiled)})`);
  for (const c of changes) io.out(`${c.path}: ${c.old ?? "(absent)"} → ${c.new ?? "(absent)"}`);
  return EXIT_DIFFERENT;
}

const idOf = (c: CompiledPolicy): string =>
  `${c.policy.name} v${c.policy.version}, hash ${c.hash.slice(0, 12)}`;

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
