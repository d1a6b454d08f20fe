/**
 * The JSON the playground's API answers (src/http/routes/playground.ts), as the page reads it. The server's types
 * (src/retrieval/playground.ts, src/pipeline/types.ts) must stay assignable to these: test/http/playground.test.ts
 * checks it at compile time. No imports: this file is compiled for the browser.
 */

export interface PlaygroundInfo {
  tenant: string;
  backends: string[];
  defaultBackend: string;
  policies: Array<{ name: string; version: number; hash: string }>;
  defaultPolicy: string;
  editorFile: string;
  /** Whether a golden set is configured and its size; never its file or users (any tenant's admin reads this). */
  golden: { questions: number } | null;
  /** Dev mode (no tenants file): any key works. */
  devMode: boolean;
  /** In dev mode, the users of the local store (sorted); otherwise empty. */
  users: string[];
}

/** One line of the eval's NDJSON answer (`Accept: application/x-ndjson`). */
export type EvalLine =
  | { progress: { done: number; total: number } }
  | { result: EvalAnswer }
  | { problem: Problem };

export interface Validation {
  ok: boolean;
  lines: string[];
}

export interface KeptSentence {
  sentence: number;
  why: "match" | "context" | "leading";
  score: number;
  terms?: string[];
  answer?: number;
}

export interface TraceChange {
  id: string;
  reason: string;
  sentences?: { total: number; kept: KeptSentence[] };
}

export interface StageTrace {
  stage: string;
  in: number;
  out: number;
  changes: TraceChange[];
  detail?: Record<string, string | number | boolean>;
  /** The rank stage: each memory's relevance, rank and signals, best first. */
  ranking?: Array<{ id: string; rank: number; relevance: number; signals: Record<string, number> }>;
}

export interface Memory {
  id: string;
  content: string;
  score: number;
  flags?: string[];
  provenance: { wasRedacted: boolean; originalLength: number };
}

export interface Payload {
  memories: Memory[];
  systemPrompt: string;
  metadata: {
    totalTokens: number;
    policy: { name: string; version: number; hash: string };
    fallback: { code: string; action: string; message: string } | null;
    sufficiency?: {
      completeness: number;
      redundancy: number;
      missing: string[];
      verdict: string;
      expanded: boolean;
    };
    reinforcement?: { available: boolean };
  };
  trace?: StageTrace[];
}

export interface RunCandidate {
  id: string;
  content: string;
  score: number;
  timestamp: string;
  type: string;
  tokens: number;
}

export interface Run {
  label: string;
  source: "registry" | "editor";
  maxTokens: number;
  tokenizer: string;
  candidates: RunCandidate[];
  payload: Payload;
  tokens: Array<{ id: string; tokens: number }>;
}

export interface Comparison {
  tenant: string;
  userId: string;
  query: string;
  backend: string;
  fetched: number;
  fallback: { code: string; message: string } | null;
  runs: Run[];
}

export interface EvalAnswer {
  questions: number;
  users: number;
  failed: number;
  backend: string;
  table: { header: string[]; rows: string[][] };
  /** With `budgets`: each policy × budget's overall figures, and the SVG chart `memgate eval --chart` writes. */
  sweepTable?: { header: string[]; rows: string[][] };
  chart?: string;
}

/** An error answer (problem+json). */
export interface Problem {
  code: string;
  detail: string;
}

/** GET /v1/playground/shadow (src/rollout/shadow.ts `ShadowReport`). */
export interface ShadowReport {
  tenant: string;
  rule: { policy: string; sample: number } | null;
  runs: number;
  window: number;
  counts: { ran: number; dropped: number; error: number };
  tokens: { primaryMean: number; shadowMean: number; deltaMean: number; deltaMedian: number } | null;
  overlap: { mean: number; median: number; min: number } | null;
  drops: {
    primary: Array<{ reason: string; count: number }>;
    shadow: Array<{ reason: string; count: number }>;
  };
  recent: Array<{
    at: string;
    policy: string;
    shadow: string;
    primaryTokens: number;
    shadowTokens: number;
    overlap: number;
    primaryOnly: number;
    shadowOnly: number;
  }>;
}
