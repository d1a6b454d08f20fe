import type { Candidate } from "../../pipeline/types";
import {
  type Backend,
  BackendError,
  type CallOptions,
  type MemoryLookup,
  type NativeAnswer,
  type NativeSearchRequest,
  type NeighbourRequest,
  type Neighbours,
  type SearchRequest,
} from "../types";
import { toCandidate } from "./candidate";
import { loadMemoriesFile, validateRecords } from "./load";
import { localSurface } from "./openmemory";
import type { MemoryRecord } from "./schema";
import { MemoryStore, type StoreOptions } from "./store";

/**
 * The embedded local backend (the default: `npm start` serves `config/demo-memories.jsonl` with no external
 * service). An in-process store of JSONL-loaded memories with one MiniSearch (BM25+) index per user;
 * terms (stemmed per language) in pipeline/text/relevance.ts, search modes in user-index.ts, score normalization in score.ts.
 *
 * Failures: the store is in-process, so the only backend errors are an already-aborted call and an internal
 * index failure; both become `BackendError` kind `unavailable` (fallback LOCAL_UNAVAILABLE), and nothing
 * else escapes. An unknown user is not an error: `userExists` is false and a search returns no candidates.
 */
export class LocalBackend extends MemoryStore implements Backend {
  readonly name = "local" as const;

  /**
   * The user's best memories. With the policy's `retrieval.replies`, each hit that asks a question (by
   * `retrieval.questionAt`) is followed by
   * the next turn of its session (`replyTo`, scored as its question) unless that turn is a hit itself; replies
   * come on top of `limit`. With `retrieval.following`, each of the first `top` hits is followed by the next
   * `turns` turns of its session the same way (after its reply; no `replyTo`).
   */
  async search(req: SearchRequest): Promise<Candidate[]> {
    return guard(req.signal, "search", () => {
      const hits = this.searchUser(req.userId, req.query, req.searchType, req.limit);
      const { replies: withReplies, following } = req.policy.retrieval;
      if (withReplies !== true && following === undefined)
        return hits.map(({ record, score, raw }) => toCandidate(record, score, raw));
      // Each hit that asks a question is followed by its reply: added (`origin: reply`) when the search did not
      // find it, moved up when it found it lower; a reply ranked above its question stays and learns what it
      // answers. So the first n hits and their replies are the same whatever the fetch size.
      // With `retrieval.following`, each of the first `top` hits is followed the same way by the next turns of its
      // session (after its reply), scored as it, without `replyTo`: they follow it, they do not answer it.
      const rankOf = new Map(hits.map((h, i) => [h.record.id, i]));
      const at = req.policy.retrieval.questionAt;
      const replies = hits.map((h) => (withReplies === true ? this.replyTo(h.record, at) : undefined));
      const placed = new Set<string>();
      const out: Candidate[] = [];
      /** `turn` added after hit i (scored as it) unless placed already or found above it. */
      const bring = (turn: MemoryRecord, i: number, score: number, replyTo?: string) => {
        if (placed.has(turn.id) || (rankOf.get(turn.id) ?? hits.length) < i) return;
        placed.add(turn.id);
        // The index gave it no number of its own (NaN: no backendScore).
        const candidate: Candidate = { ...toCandidate(turn, score, Number.NaN), origin: "reply" };
        if (replyTo !== undefined) candidate.replyTo = replyTo;
        out.push(candidate);
      };
      hits.forEach(({ record, score, raw }, i) => {
        if (placed.has(record.id)) return;
        placed.add(record.id);
        const self = toCandidate(record, score, raw);
        const asker = hits.findIndex((_, j) => j > i && replies[j]?.id === record.id);
        if (asker >= 0) self.replyTo = hits[asker]?.record.id;
        out.push(self);
        const reply = replies[i];
        if (reply !== undefined) bring(reply, i, score, record.id);
        if (following !== undefined && i < following.top) {
          for (const turn of this.sessionAround(record, 0, following.turns).after) {
            if (placed.has(turn.id)) continue;
            bring(turn, i, score);
            // A following turn that asks a question brings its reply too, as it would have as a hit.
            const itsReply = withReplies === true ? this.replyTo(turn, at) : undefined;
            if (itsReply !== undefined) bring(itsReply, i, score, turn.id);
          }
        }
      });
      return out;
    });
  }

  /** The OpenMemory door's `/memory/query` over this store, in OpenMemory's wire format (./openmemory.ts). */
  async searchNative(req: NativeSearchRequest): Promise<NativeAnswer> {
    const { searchType } = req.policy.retrieval;
    return guard(req.signal, "search", () =>
      localSurface(this).query(req.native, { limit: req.limit, searchType }),
    );
  }

  /** Progressive disclosure, layer 3: the user's records among `ids` (another user's id is absent). */
  async getMemories(req: MemoryLookup): Promise<Candidate[]> {
    return guard(req.signal, "lookup", () =>
      req.ids.flatMap((id) => {
        const record = this.userRecord(req.userId, id);
        return record === undefined ? [] : [toCandidate(record, 1, Number.NaN)];
      }),
    );
  }

  /** Progressive disclosure, layer 2: the turns before and after a record in its session's order. */
  async neighbours(req: NeighbourRequest): Promise<Neighbours | undefined> {
    return guard(req.signal, "timeline", () => {
      const record = this.userRecord(req.userId, req.id);
      if (record === undefined) return undefined;
      const around = this.sessionAround(record, req.before, req.after);
      const candidate = (r: typeof record) => toCandidate(r, 1, Number.NaN);
      return {
        anchor: candidate(record),
        before: around.before.map(candidate),
        after: around.after.map(candidate),
      };
    });
  }

  async userExists(userId: string, opts: CallOptions): Promise<boolean> {
    return guard(opts.signal, "user lookup", () => this.hasUser(userId));
  }

  async ping(opts: CallOptions): Promise<void> {
    return guard(opts.signal, "ping", () => undefined);
  }
}

function guard<T>(signal: AbortSignal, what: string, run: () => T): T {
  if (signal.aborted) {
    throw new BackendError({
      kind: "unavailable",
      backend: "local",
      message: `local ${what} aborted before it started`,
      cause: signal.reason,
    });
  }
  try {
    return run();
  } catch (err) {
    throw new BackendError({
      kind: "unavailable",
      backend: "local",
      message: `local ${what} failed: internal index error`,
      cause: err,
    });
  }
}

export interface LocalBackendConfig {
  /** JSONL file of memories (MEMGATE_LOCAL_DATA). */
  dataFile: string;
}

/** Loads `cfg.dataFile` and serves it. Rejects with `LocalDataError` naming the file, line and field. */
export async function createLocalBackend(
  cfg: LocalBackendConfig,
  opts: StoreOptions = {},
): Promise<LocalBackend> {
  return new LocalBackend(await loadMemoriesFile(cfg.dataFile), opts);
}

/** A backend over records given in code (tests, fixtures), validated like file lines. */
export function createLocalBackendFromRecords(
  records: readonly unknown[],
  opts: StoreOptions = {},
): LocalBackend {
  return new LocalBackend(validateRecords(records), opts);
}

export { toCandidate } from "./candidate";
export { LocalDataError, type LocalDataErrorCode, loadMemoriesFile, parseMemoriesJsonl } from "./load";
export type { MemoryRecord, MemoryRecordInput, NewMemory } from "./schema";
export { type ListOptions, type ListPage, type LocalStore, MemoryStore, type StoreOptions } from "./store";
