import { join } from "node:path";
import { type ConfigProblem, formatProblem } from "../config/yaml";
import { compilePolicyFile } from "../policy/compile";
import { listPolicyFiles } from "../policy/watch";
import { parseTenantsText, readTenantsText, TenantsFileError, tenantsFromText } from "../tenants/file";
import { ANY_POLICY } from "../tenants/types";
import { type CliIo, EXIT_INVALID, EXIT_OK, problemJson } from "./io";

/** The names of the valid policies of a directory, as the server would load them (invalid files are skipped). */
async function policyNames(dir: string): Promise<Set<string>> {
  const names = new Set<string>();
  for (const file of await listPolicyFiles(dir)) {
    const result = await compilePolicyFile(join(dir, file));
    if (result.ok) names.add(result.compiled.policy.name);
  }
  return names;
}

/**
 * `memgate tenants validate <file> [--policy-dir <dir>]`: the boot check of the tenants file, without booting —
 * structure, cross-field rules, and the environment variables it names (from this shell's environment); with
 * `--policy-dir`, also that every tenant's default and allowed policies are in that directory. Exit 0 with one
 * `file: ok (…)` line, or 2 with one `file:line: path: message` line per problem on stderr. `--json`: one document on
 * stdout instead, `{ok, file, tenants: [ids], problems: [{line, path, message}]}`.
 */
export async function tenantsValidateCommand(
  file: string,
  io: CliIo,
  opts: { policyDir?: string; env?: NodeJS.ProcessEnv; json?: boolean } = {},
): Promise<number> {
  const problems: ConfigProblem[] = [];
  let text = "";
  try {
    text = await readTenantsText(file);
  } catch (err) {
    if (!(err instanceof TenantsFileError)) throw err;
    problems.push(...err.problems);
  }
  let tenantIds: string[] = [];
  if (problems.length === 0) {
    try {
      tenantIds = tenantsFromText(text, file, opts.env ?? process.env)
        .tenants()
        .map((t) => t.id);
    } catch (err) {
      if (!(err instanceof TenantsFileError)) throw err;
      problems.push(...err.problems);
    }
  }
  if (problems.length === 0 && opts.policyDir !== undefined) {
    let names: Set<string>;
    try {
      names = await policyNames(opts.policyDir);
    } catch (err) {
      io.err(`memgate: --policy-dir: ${err instanceof Error ? err.message : String(err)}`);
      return EXIT_INVALID;
    }
    const { data, lineOf } = parseTenantsText(text, file);
    data.tenants.forEach((t, ti) => {
      const at = (path: Array<string | number>, message: string) =>
        problems.push({ file, line: lineOf(path), path, message });
      if (!names.has(t.policies.default))
        at(
          ["tenants", ti, "policies", "default"],
          `policy "${t.policies.default}" is not in ${opts.policyDir} (tenant "${t.id}")`,
        );
      t.policies.allowed.forEach((name, pi) => {
        if (name !== ANY_POLICY && !names.has(name))
          at(["tenants", ti, "policies", "allowed", pi], `policy "${name}" is not in ${opts.policyDir}`);
      });
    });
  }
  if (opts.json) {
    const ok = problems.length === 0;
    const document = { ok, file, tenants: ok ? tenantIds : [], problems: problems.map(problemJson) };
    io.out(JSON.stringify(document, null, 2));
    return ok ? EXIT_OK : EXIT_INVALID;
  }
  if (problems.length > 0) {
    for (const p of problems) io.err(formatProblem(p));
    return EXIT_INVALID;
  }
  const n = tenantIds.length;
  io.out(`${file}: ok (${n} tenant${n === 1 ? "" : "s"}: ${tenantIds.join(", ")})`);
  return EXIT_OK;
}
