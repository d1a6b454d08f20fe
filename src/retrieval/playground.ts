/**
 * What the policy playground asks of the retrieval core (./service.ts `compare`, `evaluate`): one or two policies —
 * registry names or a policy text being edited — run on the SAME candidates, each with its explain trace. The
 * candidates are fetched once by the core's own search step; this module resolves the policies and assembles the
 * answer. Types only reach the browser (src/ui) through the JSON the door sends.
 */
import type { GoldenQuestion } from "../eval/golden";
import type { PolicyReport } from "../eval/run";
import type { Sweep } from "../eval/sweep";
import { refLabel } from "../pipeline/citations";
import type { Candidate, MemoryEntry } from "../pipeline/types";
import { type CompiledPolicy, checkPolicyText } from "../policy/compile";
import type { BackendName } from "../policy/schema";
import { ANY_POLICY, type Principal } from "../tenants/types";
import type { Refusal } from "./outcome";
import type { RetrievalPayload } from "./payload";
import { type PolicyDeps, requireAdmin, resolvePolicy } from "./policy";

/** The file name a policy text from the playground's editor is reported under (`playground.yaml:4: …`). */
export const EDITOR_FILE = "playground.yaml";

/** One policy to run: a registry policy by name, or a policy file's text (YAML or JSON). Exactly one of them. */
export interface PolicyChoice {
  name?: string | undefined;
  text?: string | undefined;
}

export interface ComparisonRequest {
  principal: Principal;
  userId: string;
  query: string;
  backend?: BackendName | undefined;
  /** One or two policies. */
  policies: readonly PolicyChoice[];
  signal?: AbortSignal | undefined;
}

/** One candidate as a policy's pipeline took it: its content redacted by that policy's redaction settings. */
export interface RunCandidate {
  id: string;
  content: string;
  score: number;
  timestamp: string;
  type: Candidate["type"];
  /** Tokens of the (redacted) content under the policy's tokenizer. */
  tokens: number;
}

export interface ComparisonRun {
  /** The policy's name, or `name (editor)` for a policy text. */
  label: string;
  source: "registry" | "editor";
  /** The budget the run was packed into: `retrieval.maxTokens`, or less with `budget.relative` (the stage's). */
  maxTokens: number;
  tokenizer: string;
  /** The first `topK × overfetch` candidates, what this policy's pipeline started from. */
  candidates: RunCandidate[];
  /** The payload /v1/retrieve would answer with `explain: true` (memories, metadata, systemPrompt, trace). */
  payload: RetrievalPayload;
  /** Tokens of each kept memory (their sum is `metadata.totalTokens`). */
  tokens: Array<{ id: string; tokens: number }>;
}

export interface Comparison {
  tenant: string;
  userId: string;
  query: string;
  backend: BackendName;
  /** How many candidates the backend returned (the most any of the policies takes). */
  fetched: number;
  /** The backend's failure as its declared fallback code; each run then holds its policy's fallback payload. */
  fallback: { code: string; message: string } | null;
  runs: ComparisonRun[];
}

export type ComparisonOutcome = { kind: "compared"; comparison: Comparison } | Refusal;

export interface EvaluationRequest {
  principal: Principal;
  backend?: BackendName | undefined;
  policies: readonly PolicyChoice[];
  questions: readonly GoldenQuestion[];
  /**
   * Quality against tokens (`memgate eval --budgets`): each policy measured again at each of these
   * `retrieval.maxTokens`, on the same candidates. Checked as the policy field before any search goes out.
   */
  budgets?: readonly number[] | undefined;
  /** The caller's request closed (a closed tab): no more searches go out. */
  signal?: AbortSignal | undefined;
  /** After each question's search (done or failed): how many of the questions are done. */
  onProgress?: ((done: number, total: number) => void) | undefined;
}

export interface Evaluation {
  tenant: string;
  backend: BackendName;
  questions: number;
  users: number;
  /** Questions whose search failed (their candidates are empty). */
  failed: number;
  /** Each policy's report (src/eval/run.ts), without the per-question outcomes. */
  reports: Array<Omit<PolicyReport, "outcomes">>;
  /** With `budgets`: every policy at every budget (src/eval/sweep.ts). */
  sweep?: Sweep;
}

export type EvaluationOutcome = { kind: "evaluated"; evaluation: Evaluation } | Refusal;

export interface ResolvedChoice {
  label: string;
  source: ComparisonRun["source"];
  compiled: CompiledPolicy;
}

/**
 * The policies of a playground request, or why the caller may not run them (admin only; names allowed for the
 * tenant; a text only for a tenant allowed every policy, and it must validate — its problems are
 * `memgate policy validate`'s lines, naming the field).
 */
export function resolveChoices(
  deps: PolicyDeps,
  principal: Principal,
  choices: readonly PolicyChoice[],
): ResolvedChoice[] | Refusal {
  const refused = requireAdmin(principal, "playground");
  if (refused) return refused;
  const resolved: ResolvedChoice[] = [];
  for (const [i, choice] of choices.entries()) {
    const field = `policies[${i}]`;
    if ((choice.name === undefined) === (choice.text === undefined)) {
      return { kind: "refused", code: "VALIDATION_FAILED", detail: `${field}: give either name or text` };
    }
    if (choice.text !== undefined) {
      // A text can be any policy: only for a tenant allowed every policy (tenants file `policies.allowed: ["*"]`).
      if (!principal.tenant.policies.allowed.includes(ANY_POLICY)) {
        return {
          kind: "refused",
          code: "FORBIDDEN",
          detail: `${field}.text: a policy text is only allowed for a tenant allowed every policy (policies.allowed: ["${ANY_POLICY}"]); pick a policy by name`,
        };
      }
      const checked = checkPolicyText(choice.text, EDITOR_FILE);
      if (!checked.ok) {
        return {
          kind: "refused",
          code: "VALIDATION_FAILED",
          detail: `${field}.text: ${checked.lines.join("; ")}`,
        };
      }
      const { name } = checked.compiled.policy;
      resolved.push({ label: `${name} (editor)`, source: "editor", compiled: checked.compiled });
      continue;
    }
    const compiled = resolvePolicy(deps, principal, {
      name: choice.name,
      field: `${field}.name`,
      overrides: undefined,
      topK: undefined,
    });
    if ("kind" in compiled) return compiled;
    resolved.push({ label: compiled.policy.name, source: "registry", compiled });
  }
  return resolved;
}

/** How many candidates a policy takes from a list ranked best first (as `memgate eval` does). */
export function takeOf(compiled: CompiledPolicy): number {
  const { topK, overfetch } = compiled.policy.retrieval;
  return topK * overfetch;
}

/** A policy's view of its candidates: redacted as its redaction stage would, counted by its tokenizer. */
export function runCandidates(candidates: readonly Candidate[], compiled: CompiledPolicy): RunCandidate[] {
  const { redactor, tokenizer } = compiled.ctx;
  return candidates.map((c) => {
    const content = redactor.enabled ? redactor.redact(c.content).text : c.content;
    return {
      id: c.id,
      content,
      score: c.score,
      timestamp: c.timestamp,
      type: c.type,
      tokens: tokenizer.count(content),
    };
  });
}

/**
 * Tokens of each kept memory under the policy's tokenizer, its ref label's included (`format.citations: on`):
 * what the budget stage counted for it.
 */
export function memoryTokens(
  memories: readonly MemoryEntry[],
  compiled: CompiledPolicy,
): ComparisonRun["tokens"] {
  const { tokenizer } = compiled.ctx;
  return memories.map((m) => ({
    id: m.id,
    tokens: tokenizer.count(m.content) + (m.ref === undefined ? 0 : tokenizer.count(refLabel(m.ref))),
  }));
}
