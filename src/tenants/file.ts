/**
 * The tenants file (docs/configuration.md#tenants-file): its loader. Structure is checked by the schema (schema.ts: strict objects, an
 * unknown key is a typo or an inline secret); cross-field rules and environment variables are checked after it.
 * Every problem is reported, one line each, as `file:line: path: message` (src/config/yaml.ts).
 *
 * Values are never echoed in messages: a misplaced secret (a plaintext key in `sha256`, a token in `apiKeyEnv`)
 * must not reach a log through an error about it.
 */
import { readFile } from "node:fs/promises";
import { suggestKey } from "../config/suggest";
import {
  type At,
  type ConfigProblem,
  formatPath,
  formatProblem,
  type LineOf,
  type Path,
  parseYaml,
  problemsFromZod,
} from "../config/yaml";
import { BACKEND_NAMES } from "../policy/schema";
import { createDirectory, resolveTenants } from "./directory";
import { EXAMPLE_KEY_HASHES, keyIdOf } from "./keys";
import { type TenantEntry, type TenantsFile, tenantsFileSchema } from "./schema";
import { ANY_POLICY, type TenantDirectory } from "./types";

export type TenantsProblem = ConfigProblem;

/** Thrown by `loadTenantsFile`: every problem found, one line each in `message`. */
export class TenantsFileError extends Error {
  readonly problems: TenantsProblem[];
  constructor(problems: TenantsProblem[]) {
    super(problems.map(formatProblem).join("\n"));
    this.name = "TenantsFileError";
    this.problems = problems;
  }
}

/** Names that look like an inline secret, with what to write instead. */
function unknownKeyMessage(path: Path, key: string): string {
  const secretLike = /api[_-]?key|secret|token|password|passwd|credential|^key$|plaintext/i.test(key);
  if (secretLike && path.includes("keys")) {
    return `unknown key; plaintext keys are never stored: write the key's SHA-256 in "sha256" (memgate keys hash)`;
  }
  if (secretLike)
    return `unknown key; inline secrets are not allowed: name an environment variable with "apiKeyEnv"`;
  if (path.at(-1) === "backends") return `unknown backend (expected ${BACKEND_NAMES.join(", ")})`;
  return "unknown key";
}

export interface ParsedTenantsFile {
  data: TenantsFile;
  lineOf: LineOf;
}

/** Parses and validates the structure (not the cross-field rules). Throws TenantsFileError. */
export function parseTenantsText(text: string, file: string): ParsedTenantsFile {
  const parsed = parseYaml(text, file);
  if (!parsed.ok) throw new TenantsFileError(parsed.problems);
  const { lineOf } = parsed;
  const raw = parsed.value ?? {};
  const result = tenantsFileSchema.safeParse(raw);
  if (!result.success) {
    // No `echoValues`: see above.
    throw new TenantsFileError(
      problemsFromZod(file, result.error, {
        lineOf,
        input: raw,
        unknownKey: unknownKeyMessage,
        suggest: (parent, key) => suggestKey(tenantsFileSchema, parent, key),
      }),
    );
  }
  return { data: result.data, lineOf };
}

export interface LoadOptions {
  /** Accept the documented example keys (only for loading config/tenants.example.yaml in tests and demos). */
  allowExampleKeys?: boolean;
}

/**
 * Reads, validates and resolves the tenants file into a directory. `env` supplies the variables the file names
 * (a named variable that is unset or blank is an error). Throws TenantsFileError with one line per problem.
 */
export async function loadTenantsFile(
  file: string,
  env: NodeJS.ProcessEnv,
  opts: LoadOptions = {},
): Promise<TenantDirectory> {
  return tenantsFromText(await readTenantsText(file), file, env, opts);
}

/** The tenants file's text; a file that cannot be read throws TenantsFileError (`cannot read the file (ENOENT)`). */
export async function readTenantsText(file: string): Promise<string> {
  try {
    return await readFile(file, "utf8");
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? "unreadable";
    throw new TenantsFileError([{ file, path: [], message: `cannot read the file (${code})` }]);
  }
}

/** `loadTenantsFile` without the read (the file name is used in messages only). */
export function tenantsFromText(
  text: string,
  file: string,
  env: NodeJS.ProcessEnv,
  opts: LoadOptions = {},
): TenantDirectory {
  const { data, lineOf } = parseTenantsText(text, file);
  const problems: TenantsProblem[] = [];
  const at = (path: Path, message: string) => {
    problems.push({ file, line: lineOf(path), path, message });
  };
  checkTenants(data, at, opts.allowExampleKeys === true);
  if (problems.length > 0) throw new TenantsFileError(problems);
  const { tenants, grants } = resolveTenants(data, env, at);
  if (problems.length > 0) throw new TenantsFileError(problems);
  return createDirectory(tenants, grants);
}

/** The rules the schema cannot state: uniqueness across the file and references between fields. */
function checkTenants(data: TenantsFile, at: At, allowExampleKeys: boolean): void {
  const tenantAt = new Map<string, number>();
  const hashAt = new Map<string, string>();
  const keyIdAt = new Map<string, string>();
  data.tenants.forEach((t, ti) => {
    const base: Path = ["tenants", ti];
    const first = tenantAt.get(t.id);
    if (first !== undefined) at([...base, "id"], `tenant "${t.id}" is already defined at tenants[${first}]`);
    else tenantAt.set(t.id, ti);

    const names = new Set<string>();
    t.keys.forEach((k, ki) => {
      const path: Path = [...base, "keys", ki];
      const where = `${formatPath(path)} (${t.id}/${k.name})`;
      if (names.has(k.name)) at([...path, "name"], `key name "${k.name}" is used twice in tenant "${t.id}"`);
      names.add(k.name);
      if (!allowExampleKeys && EXAMPLE_KEY_HASHES.has(k.sha256)) {
        at(
          [...path, "sha256"],
          "is a documented example key that anyone can read: generate one with `memgate keys new`",
        );
      }
      const other = hashAt.get(k.sha256);
      if (other !== undefined) {
        at([...path, "sha256"], `the same key hash is also used by ${other}: every key must be unique`);
        return;
      }
      hashAt.set(k.sha256, where);
      const keyId = keyIdOf(k.sha256);
      const sameId = keyIdAt.get(keyId);
      if (sameId !== undefined) {
        at(
          [...path, "sha256"],
          `starts like ${sameId} (key id ${keyId}, used in logs and limits): replace one key`,
        );
      }
      keyIdAt.set(keyId, where);
    });

    const { allowed, default: def } = t.policies;
    if (!allowed.includes(ANY_POLICY) && !allowed.includes(def)) {
      at(
        [...base, "policies", "default"],
        `"${def}" must be one of policies.allowed (${allowed.join(", ")})`,
      );
    }
    checkRollouts(t.policies, [...base, "policies"], at);
    const configured = BACKEND_NAMES.filter((b) => t.backends[b] !== undefined);
    if (configured.length === 0) {
      at([...base, "backends"], `configure at least one backend (${BACKEND_NAMES.join(", ")})`);
    } else if (t.defaultBackend === undefined && configured.length > 1) {
      at(
        [...base, "defaultBackend"],
        `is required when a tenant has several backends (${configured.join(", ")})`,
      );
    } else if (t.defaultBackend !== undefined && !configured.includes(t.defaultBackend)) {
      at(
        [...base, "defaultBackend"],
        `"${t.defaultBackend}" is not configured in backends (tenant "${t.id}" has ${configured.join(", ")})`,
      );
    }
    const om = t.backends.openmemory;
    if (om !== undefined && (om.url === undefined) === (om.urlEnv === undefined)) {
      at([...base, "backends", "openmemory"], "give exactly one of url and urlEnv");
    }
    if (om?.userScoping === "api_key" && om.apiKeyEnv === undefined) {
      at([...base, "backends", "openmemory", "apiKeyEnv"], "is required with userScoping api_key");
    }
  });
}

/**
 * `policies.shadow` and `policies.canary` (docs/rollouts.md): each names another policy than the default, one the
 * tenant may use. Whether it is loaded is checked at boot, with the policy directory (src/server/services.ts).
 */
function checkRollouts(policies: TenantEntry["policies"], base: Path, at: At): void {
  const { allowed, default: def } = policies;
  for (const kind of ["shadow", "canary"] as const) {
    const rule = policies[kind];
    if (rule === undefined) continue;
    const path: Path = [...base, kind, "policy"];
    if (rule.policy === def) {
      at(path, `"${rule.policy}" is the default policy: a ${kind} names another policy`);
    } else if (!allowed.includes(ANY_POLICY) && !allowed.includes(rule.policy)) {
      at(path, `"${rule.policy}" must be one of policies.allowed (${allowed.join(", ")})`);
    }
  }
}
