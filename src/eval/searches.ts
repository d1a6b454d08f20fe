import { BackendError } from "../backends/types";
import { firstCandidates } from "../pipeline/candidate";
import type { Candidate } from "../pipeline/types";
import type { RecordedCandidates, RecordedSearch } from "./candidates";
import { GoldenSetError } from "./golden";

/**
 * The expansion round's second searches in `memgate eval` (policy `sufficiency.expandWith: missing`,
 * src/pipeline/expansion.ts). A replay of the recorded candidates cannot answer a new query, so a question's
 * second search is answered:
 *
 * 1. from its recorded line's `expansions` (a search with the same query and at least as many candidates: its
 *    first `limit`, as a fetch of `limit` would have returned them);
 * 2. else, when the run has a live backend (`fetch`), by searching it once for the question's user — one search per
 *    question, query and limit, shared by every policy and budget of the run — and kept, so that `--record` writes
 *    it beside the first search (`recordedLines`);
 * 3. else it cannot be emulated: a `GoldenSetError` names the question and asks for the candidates to be recorded
 *    again with the policy (exit 2), rather than a figure for a round that did not happen.
 *
 * A failed search (recorded with its `error`, or failing now) answers `undefined`: the first answer stays, as in
 * the core.
 */
export type SearchAgain = (
  line: RecordedCandidates,
  query: string,
  limit: number,
) => Promise<Candidate[] | undefined>;

/** One live search for a question's user (the CLI's backend, the playground's core search). */
export type FetchAgain = (line: RecordedCandidates, query: string, limit: number) => Promise<Candidate[]>;

export class ExpansionSearches {
  /** Searches fetched in this run, per recorded line, by query and limit. */
  private readonly fetched = new Map<RecordedCandidates, Map<string, Promise<RecordedSearch>>>();
  /** Searches sent to the backend in this run (their time is not counted: they wait behind the shaping). */
  readonly sent = { count: 0 };

  constructor(private readonly fetch?: FetchAgain) {}

  /** The `SearchAgain` of this run. */
  readonly search: SearchAgain = async (line, query, limit) => {
    const stored = line.expansions?.find((e) => e.query === query && e.limit >= limit);
    const found = stored ?? (await this.fetchOnce(line, query, limit));
    return found.error === undefined ? firstCandidates(found.results, limit) : undefined;
  };

  private fetchOnce(line: RecordedCandidates, query: string, limit: number): Promise<RecordedSearch> {
    const fetch = this.fetch;
    if (fetch === undefined) {
      throw new GoldenSetError(
        `question "${line.id}": its expansion search for ${JSON.stringify(query)} (${limit} candidates) is not among the recorded candidates; record them again with this policy (memgate eval --record)`,
      );
    }
    let mine = this.fetched.get(line);
    if (mine === undefined) {
      mine = new Map();
      this.fetched.set(line, mine);
    }
    const key = `${limit}\u0000${query}`;
    let found = mine.get(key);
    if (found === undefined) {
      this.sent.count++;
      found = fetch(line, query, limit).then(
        (results): RecordedSearch => ({ query, limit, results }),
        (err: unknown): RecordedSearch => ({ query, limit, results: [], error: describe(err) }),
      );
      mine.set(key, found);
    }
    return found;
  }

  /** The lines with the searches fetched in this run added to their `expansions` (for `--record`). */
  async recordedLines(lines: readonly RecordedCandidates[]): Promise<RecordedCandidates[]> {
    return Promise.all(
      lines.map(async (line) => {
        const mine = this.fetched.get(line);
        if (mine === undefined) return line;
        const added = await Promise.all(mine.values());
        return { ...line, expansions: [...(line.expansions ?? []), ...added] };
      }),
    );
  }
}

function describe(err: unknown): string {
  return err instanceof BackendError
    ? `${err.kind}: ${err.message}`.slice(0, 500)
    : `unexpected: ${err instanceof Error ? err.name : "error"}`;
}
