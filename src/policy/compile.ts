import { readFile, stat } from "node:fs/promises";
import { addLines, formatProblem, problemsFromZod } from "../config/yaml";
import { compileRedactor, RedactionPatternError } from "../pipeline/redaction";
import { compileScreener } from "../pipeline/screen";
import { getTokenizer } from "../pipeline/tokenizers";
import type { StageContext } from "../pipeline/types";
import { canonicalJson, sha256Hex } from "./canonical";
import { PolicyError, type PolicyProblem, parsePolicyText } from "./load";
import { type Overrides, overridesSchema, type Policy, type PolicyInput, policySchema } from "./schema";

/** A validated policy with everything its stages need built once: the redactor, the tokenizer, its hash. */
export interface CompiledPolicy {
  readonly policy: Policy;
  /** SHA-256 (hex) of the canonical JSON of the validated policy, defaults included. */
  readonly hash: string;
  readonly ctx: StageContext;
}

export function policyHash(policy: Policy): string {
  return sha256Hex(canonicalJson(policy));
}

/** Builds the stage context. Throws PolicyError (naming the field) when a custom pattern does not compile. */
export function compilePolicy(policy: Policy, file = `policy:${policy.name}`): CompiledPolicy {
  try {
    return {
      policy,
      hash: policyHash(policy),
      ctx: {
        redactor: compileRedactor(policy.redaction),
        screener: compileScreener(policy.injection),
        tokenizer: getTokenizer(policy.tokenizer),
      },
    };
  } catch (err) {
    if (err instanceof RedactionPatternError) {
      throw new PolicyError([{ file, path: [...err.path], message: err.message }]);
    }
    throw err;
  }
}

export type PolicyCompile = { ok: true; compiled: CompiledPolicy } | { ok: false; problems: PolicyProblem[] };

/** Parses, validates and compiles a policy file's text. Never throws; every problem carries its line. */
export function compilePolicyText(text: string, file: string): PolicyCompile {
  const parsed = parsePolicyText(text, file);
  if (!parsed.ok) return parsed;
  try {
    return { ok: true, compiled: compilePolicy(parsed.policy, file) };
  } catch (err) {
    if (err instanceof PolicyError) return { ok: false, problems: addLines(err.problems, text) };
    const reason = err instanceof Error ? err.message : String(err);
    return { ok: false, problems: [{ file, path: [], message: `cannot compile the policy (${reason})` }] };
  }
}

export type PolicyTextCheck =
  | { ok: true; compiled: CompiledPolicy; line: string }
  | { ok: false; lines: string[] };

/**
 * A policy file's text checked as `memgate policy validate` checks a file (src/cli/policy.ts) — the playground's
 * editor uses it (src/retrieval/playground.ts): the same compile and the same lines, `… ok (name vN, hash …)` or
 * one `file:line: path: message` per problem.
 */
export function checkPolicyText(text: string, file: string): PolicyTextCheck {
  const result = compilePolicyText(text, file);
  if (!result.ok) return { ok: false, lines: result.problems.map(formatProblem) };
  return { ok: true, compiled: result.compiled, line: validLine(file, result.compiled) };
}

/** `policies/a.yaml: ok (a v1, hash 0123456789ab)`: what `memgate policy validate` prints for a valid file. */
export function validLine(file: string, compiled: CompiledPolicy): string {
  const { policy, hash } = compiled;
  return `${file}: ok (${policy.name} v${policy.version}, hash ${hash.slice(0, 12)})`;
}

/** A policy file is at most this many bytes: a larger one is refused unread (issue 26, finding 13). */
export const MAX_POLICY_FILE_BYTES = 1024 * 1024;
export const TOO_LARGE_MESSAGE = "larger than 1 MiB (1,048,576 bytes): not read";

/** A policy file over `MAX_POLICY_FILE_BYTES`. */
export class PolicyFileTooLarge extends Error {
  readonly code = "ETOOLARGE";
  constructor() {
    super(TOO_LARGE_MESSAGE);
    this.name = "PolicyFileTooLarge";
  }
}

/**
 * The text of a policy file: throws PolicyFileTooLarge when its size is over `MAX_POLICY_FILE_BYTES` (checked
 * before reading, and again on what was read, in case it grew meanwhile), the file system's error otherwise.
 */
export async function readPolicyText(file: string): Promise<string> {
  if ((await stat(file)).size > MAX_POLICY_FILE_BYTES) throw new PolicyFileTooLarge();
  const text = await readFile(file, "utf8");
  if (Buffer.byteLength(text, "utf8") > MAX_POLICY_FILE_BYTES) throw new PolicyFileTooLarge();
  return text;
}

export async function compilePolicyFile(file: string): Promise<PolicyCompile> {
  let text: string;
  try {
    text = await readPolicyText(file);
  } catch (err) {
    const message =
      err instanceof PolicyFileTooLarge
        ? TOO_LARGE_MESSAGE
        : `cannot read the file (${(err as NodeJS.ErrnoException).code ?? "unreadable"})`;
    return { ok: false, problems: [{ file, path: [], message }] };
  }
  return compilePolicyText(text, file);
}

/** Maps request overrides (seed 000's flat AdminMemorySettings subset) onto the policy-file shape. */
export function overridesToPolicyInput(base: Policy, o: Overrides): PolicyInput {
  const retrieval = { ...base.retrieval };
  if (o.topK !== undefined) retrieval.topK = o.topK;
  if (o.clipSentences !== undefined) retrieval.clipSentences = o.clipSentences;
  if (o.maxTokens !== undefined) retrieval.maxTokens = o.maxTokens;
  if (o.searchType !== undefined) retrieval.searchType = o.searchType;
  if (o.minScore !== undefined) retrieval.minScore = o.minScore;
  const redaction = { ...base.redaction };
  if (o.enableRedaction !== undefined) redaction.enabled = o.enableRedaction;
  if (o.customRedactionPatterns !== undefined) redaction.patterns = o.customRedactionPatterns;
  const interleaving = o.interleaving ? { ...base.interleaving, ...o.interleaving } : base.interleaving;
  return {
    ...base,
    retrieval,
    redaction,
    interleaving,
    clip: o.clip ? { ...base.clip, ...stripUndefined(o.clip) } : base.clip,
    budget: o.budget ? { ...base.budget, ...stripUndefined(o.budget) } : base.budget,
    tokenizer: o.tokenizer ?? base.tokenizer,
  };
}

/**
 * Compiled policies for (base hash, overrides) pairs, so a request with overrides does not recompile RE2
 * patterns each time. Bounded: the oldest entry is evicted past `max`.
 */
export class OverrideCache {
  private readonly entries = new Map<string, CompiledPolicy>();
  constructor(private readonly max = 256) {}

  /**
   * Validates `overrides` against the same ranges as policy files and returns the compiled result.
   * Throws PolicyError whose problems name the field under `overrides`.
   */
  apply(base: CompiledPolicy, overrides: unknown): CompiledPolicy {
    const parsedOverrides = overridesSchema.safeParse(overrides);
    if (!parsedOverrides.success) {
      throw new PolicyError(
        problemsFromZod("request", prefix(parsedOverrides.error), { input: { overrides }, echoValues: true }),
      );
    }
    const key = `${base.hash}:${canonicalJson(parsedOverrides.data)}`;
    const hit = this.entries.get(key);
    if (hit) return hit;
    const merged = policySchema.safeParse(overridesToPolicyInput(base.policy, parsedOverrides.data));
    if (!merged.success) {
      const problems: PolicyProblem[] = problemsFromZod("request", merged.error).map((p) => ({
        ...p,
        path: ["overrides", ...p.path],
      }));
      throw new PolicyError(problems);
    }
    let compiled: CompiledPolicy;
    try {
      compiled = compilePolicy(merged.data, "request");
    } catch (err) {
      if (err instanceof PolicyError) {
        throw new PolicyError(
          err.problems.map((p) => ({
            ...p,
            path: ["overrides", "customRedactionPatterns", ...p.path.slice(2)],
          })),
        );
      }
      throw err;
    }
    if (this.entries.size >= this.max) {
      const oldest = this.entries.keys().next().value;
      if (oldest !== undefined) this.entries.delete(oldest);
    }
    this.entries.set(key, compiled);
    return compiled;
  }
}

function stripUndefined<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}

function prefix<E extends { issues: Array<{ path: PropertyKey[] }> }>(error: E): E {
  for (const issue of error.issues) issue.path = ["overrides", ...issue.path];
  return error;
}
