import { createWriteStream } from "node:fs";
import { z } from "zod";
import { type Backend, BackendError } from "../backends/types";
import { mapLimit } from "../concurrency";
import { candidateSchema } from "../pipeline/candidate";
import type { Candidate } from "../pipeline/types";
import type { Policy } from "../policy/schema";
import { SEARCH_TYPES } from "../policy/schema";
import { type GoldenQuestion, GoldenSetError, parseJsonl, readEvalFile } from "./golden";

/**
 * The candidates of a golden set, fetched once so that every policy is compared on identical input.
 * Recorded as JSONL, one line per question (each line is also a valid `memgate replay` input):
 *
 *   {"id": "q-017", "userId": "ana", "query": "…", "backend": "zep", "searchType": "hybrid", "limit": 40,
 *    "results": [Candidate…], "error": "…"?, "expansions": [{"query", "limit", "results", "error"?}…]?}
 *
 * `limit` is how many candidates were asked for; each policy takes the first `topK × overfetch` of them (a
 * backend ranks best first, so that is what it would have fetched itself — except rank-based scores such as
 * Zep's non-cross-encoder ones, which depend on the window; see docs/backends.md#running-against-zep-cloud).
 */
/** One more search for a question (the expansion round's: src/pipeline/expansion.ts), as recorded. */
export const recordedSearchSchema = z.strictObject({
  query: z.string().max(32_768),
  limit: z.number().int().min(1).max(1000),
  results: z.array(candidateSchema).max(1000),
  /** Set when the backend failed for this search (its results are then empty). */
  error: z.string().max(500).optional(),
});
export type RecordedSearch = z.output<typeof recordedSearchSchema>;

export const recordedLineSchema = z.strictObject({
  id: z.string().min(1).max(128),
  userId: z.string().min(1).max(128),
  query: z.string().max(32_768),
  backend: z.string().max(64),
  searchType: z.enum(SEARCH_TYPES),
  limit: z.number().int().min(1).max(1000),
  results: z.array(candidateSchema).max(1000),
  /** Set when the backend failed for this question (its results are then empty). */
  error: z.string().max(500).optional(),
  /**
   * The expansion searches the policies evaluated on this line sent with another query (`sufficiency.expandWith:
   * missing`), each once: a replay answers them from here (`ExpansionSearches`).
   */
  expansions: z.array(recordedSearchSchema).max(256).optional(),
});
export type RecordedCandidates = z.output<typeof recordedLineSchema>;

export async function loadRecordedFile(file: string): Promise<Map<string, RecordedCandidates>> {
  const text = await readEvalFile(file, "the recorded candidates");
  const out = new Map<string, RecordedCandidates>();
  for (const { data } of parseJsonl(text, file, recordedLineSchema)) out.set(data.id, data);
  return out;
}

/** The recorded candidates of every question, in golden-set order; an error names the first one missing. */
export function matchRecorded(
  questions: readonly GoldenQuestion[],
  recorded: ReadonlyMap<string, RecordedCandidates>,
  file: string,
): RecordedCandidates[] {
  return questions.map((q) => {
    const r = recorded.get(q.id);
    if (r === undefined) throw new GoldenSetError(`${file}: no candidates for question "${q.id}"`);
    if (r.userId !== q.userId || r.query !== q.query) {
      throw new GoldenSetError(
        `${file}: question "${q.id}" was recorded for another user or query (record again)`,
      );
    }
    return r;
  });
}

export interface FetchOptions {
  backend: Backend;
  /** Candidates asked for per question. */
  limit: number;
  searchType: Policy["retrieval"]["searchType"];
  /** The policy whose backend settings (Zep scopes and reranker) the search uses. */
  policy: Policy;
  timeoutMs: number;
  /** Questions fetched at once. */
  concurrency: number;
  onProgress?: (done: number, total: number) => void;
}

/**
 * Fetches the candidates of every question from a live backend, `concurrency` at a time, in golden-set order.
 * A failed search is recorded with its error and no results (never thrown): one bad question must not cost a
 * long run; the report counts them.
 */
export async function fetchCandidates(
  questions: readonly GoldenQuestion[],
  opts: FetchOptions,
): Promise<RecordedCandidates[]> {
  let done = 0;
  return mapLimit(questions, opts.concurrency, async (q): Promise<RecordedCandidates> => {
    const base = {
      id: q.id,
      userId: q.userId,
      query: q.query,
      backend: opts.backend.name,
      searchType: opts.searchType,
      limit: opts.limit,
    };
    let results: Candidate[] = [];
    let error: string | undefined;
    try {
      results = await opts.backend.search({
        userId: q.userId,
        query: q.query,
        limit: opts.limit,
        searchType: opts.searchType,
        policy: opts.policy,
        signal: AbortSignal.timeout(opts.timeoutMs),
      });
    } catch (err) {
      error =
        err instanceof BackendError
          ? `${err.kind}: ${err.message}`
          : `unexpected: ${err instanceof Error ? err.name : "error"}`;
    }
    opts.onProgress?.(++done, questions.length);
    return error === undefined ? { ...base, results } : { ...base, results, error };
  });
}

/** Writes recorded candidates as JSONL (see the top of this file). */
export async function writeRecordedFile(file: string, lines: readonly RecordedCandidates[]): Promise<void> {
  const stream = createWriteStream(file, { encoding: "utf8" });
  const finished = new Promise<void>((resolve, reject) => {
    stream.on("finish", resolve);
    stream.on("error", reject);
  });
  stream.write("// memgate eval candidates: one line per golden-set question (memgate eval --candidates)\n");
  for (const line of lines) stream.write(`${JSON.stringify(line)}\n`);
  stream.end();
  await finished;
}
