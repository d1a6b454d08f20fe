/**
 * The tenants file (CONTRACT §8): its zod schema and loader. Structure is checked by the schema (strict objects:
 * an unknown key is a typo, or an inline secret); cross-field rules and environment variables are checked after
 * it. Every problem is reported, one line each, as `file:line: path: message`.
 *
 * Values are never echoed in messages: a misplaced secret (a plaintext key in `sha256`, a token in `apiKeyEnv`)
 * must not reach a log through an error about it.
 */
import { readFile } from "node:fs/promises";
import { isNode, LineCounter, parseDocument } from "yaml";
import { z } from "zod";
import { formatPath, formatProblem, type PolicyProblem } from "../policy/load";
import { BACKEND_NAMES } from "../policy/schema";
import { ANY_POLICY, createDirectory, resolveTenants, urlProblem } from "./directory";
import { EXAMPLE_KEY_HASHES, keyIdOf } from "./keys";
import { SCOPES, type TenantDirectory } from "./types";

export type TenantsProblem = PolicyProblem;

/** Thrown by `loadTenantsFile`: every problem found, one line each in `message`. */
export class TenantsFileError extends Error {
  readonly problems: TenantsProblem[];
  constructor(problems: TenantsProblem[]) {
    super(problems.map(formatProblem).join("\n"));
    this.name = "TenantsFileError";
    this.problems = problems;
  }
}

const id = z
  .string()
  .regex(/^[a-z0-9][a-z0-9_-]{0,63}$/, "1–64 of a-z, 0-9, _ - (starting with a letter or digit)");
const keyName = z
  .string()
  .regex(
    /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/,
    "1–64 of A-Z, a-z, 0-9, _ . - (starting with a letter or digit)",
  );
const policyName = z.string().regex(/^[a-z0-9][a-z0-9_.-]{0,63}$/, "a policy name (1–64 of a-z, 0-9, _ . -)");
const envName = z
  .string()
  .regex(
    /^[A-Za-z_][A-Za-z0-9_]{0,127}$/,
    "must be the NAME of an environment variable, e.g. ACME_ZEP_API_KEY",
  );

const url = (mustEndWith?: string) =>
  z.string().superRefine((v, ctx) => {
    const problem = urlProblem(v, mustEndWith);
    if (problem !== undefined) ctx.addIssue({ code: "custom", message: problem });
  });

const keySchema = z
  .object({
    /** For humans and logs. Unique within the tenant. */
    name: keyName,
    sha256: z
      .string()
      .regex(/^[0-9a-f]{64}$/, "must be 64 lowercase hex characters (`memgate keys hash` prints it)"),
    scopes: z.array(z.enum(SCOPES)).min(1, "at least one of retrieve, admin, proxy"),
    /** Requests this key may make per window (429 beyond); default MEMGATE_KEY_RATE_LIMIT. */
    rateLimit: z
      .object({
        points: z.number().int().min(1).max(1_000_000),
        durationSeconds: z.number().int().min(1).max(86_400),
      })
      .strict()
      .optional(),
  })
  .strict();

const backendsSchema = z
  .object({
    zep: z
      .object({ apiKeyEnv: envName, baseUrl: url("/api/v2").optional() })
      .strict()
      .optional(),
    openmemory: z
      .object({
        url: url().optional(),
        urlEnv: envName.optional(),
        apiKeyEnv: envName.optional(),
        userScoping: z.enum(["user_id", "api_key"]),
      })
      .strict()
      .optional(),
    local: z
      .object({ dataFile: z.string().min(1) })
      .strict()
      .optional(),
  })
  .strict();

const tenantSchema = z
  .object({
    id,
    description: z.string().max(2000).optional(),
    keys: z.array(keySchema).min(1, "a tenant needs at least one key"),
    policies: z
      .object({ allowed: z.array(z.union([z.literal(ANY_POLICY), policyName])).min(1), default: policyName })
      .strict()
      .default({ allowed: ["default"], default: "default" }),
    /** Optional when the tenant has exactly one backend. */
    defaultBackend: z.enum(BACKEND_NAMES).optional(),
    backends: backendsSchema,
  })
  .strict();

export const tenantsFileSchema = z
  .object({
    tenants: z.array(tenantSchema).min(1, "at least one tenant (without a file, memgate runs in dev mode)"),
  })
  .strict();
export type TenantsFile = z.output<typeof tenantsFileSchema>;
export type TenantEntry = TenantsFile["tenants"][number];

export type Path = Array<string | number>;
type LineOf = (path: Path) => number | undefined;

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

function problemsFromZod(file: string, error: z.ZodError, lineOf: LineOf): TenantsProblem[] {
  const problems: TenantsProblem[] = [];
  for (const issue of error.issues) {
    const path = issue.path.filter((s): s is string | number => typeof s !== "symbol");
    if (issue.code === "unrecognized_keys") {
      for (const key of issue.keys) {
        const at = [...path, key];
        problems.push({ file, line: lineOf(at), path: at, message: unknownKeyMessage(path, key) });
      }
      continue;
    }
    const missing = issue.code === "invalid_type" && /received undefined/.test(issue.message);
    problems.push({ file, line: lineOf(path), path, message: missing ? "is required" : issue.message });
  }
  return problems;
}

export interface ParsedTenantsFile {
  data: TenantsFile;
  lineOf: LineOf;
}

/** Parses and validates the structure (not the cross-field rules). Throws TenantsFileError. */
export function parseTenantsText(text: string, file: string): ParsedTenantsFile {
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { lineCounter, uniqueKeys: true, prettyErrors: false });
  if (doc.errors.length > 0) {
    throw new TenantsFileError(
      doc.errors.map((e) => ({
        file,
        line: lineCounter.linePos(e.pos[0]).line,
        path: [],
        message: `not valid YAML: ${e.message.split("\n")[0]}`,
      })),
    );
  }
  const lineOf: LineOf = (path) => {
    for (let n = path.length; n >= 0; n--) {
      const node = doc.getIn(path.slice(0, n), true);
      if (isNode(node) && node.range) return lineCounter.linePos(node.range[0]).line;
    }
    return undefined;
  };
  const raw: unknown = doc.toJS({ maxAliasCount: 50 });
  const parsed = tenantsFileSchema.safeParse(raw ?? {});
  if (!parsed.success) {
    const problems = problemsFromZod(file, parsed.error, lineOf);
    problems.sort((a, b) => (a.line ?? 0) - (b.line ?? 0));
    throw new TenantsFileError(problems);
  }
  return { data: parsed.data, lineOf };
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
  let text: string;
  try {
    text = await readFile(file, "utf8");
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? "unreadable";
    throw new TenantsFileError([{ file, path: [], message: `cannot read the file (${code})` }]);
  }
  return tenantsFromText(text, file, env, opts);
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

/** Reports a problem at a path of the file. */
export type At = (path: Path, message: string) => void;

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
