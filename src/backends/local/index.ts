import type { Candidate } from "../../pipeline/types";
import {
  type Backend,
  BackendError,
  type CallOptions,
  type NativeAnswer,
  type NativeSearchRequest,
  type SearchRequest,
} from "../types";
import { toCandidate } from "./candidate";
import { loadMemoriesFile, validateRecords } from "./load";
import { localSurface } from "./openmemory";
import { MemoryStore, type StoreOptions } from "./store";

/**
 * The embedded local backend (the default: `npm start` serves `config/demo-memories.jsonl` with no external
 * service). An in-process store of JSONL-loaded memories with one MiniSearch (BM25+) index per user;
 * tokenization in pipeline/text/terms.ts, search modes in user-index.ts, score normalization in score.ts.
 *
 * Failures: the store is in-process, so the only backend errors are an already-aborted call and an internal
 * index failure; both become `BackendError` kind `unavailable` (fallback LOCAL_UNAVAILABLE), and nothing
 * else escapes. An unknown user is not an error: `userExists` is false and a search returns no candidates.
 */
export class LocalBackend extends MemoryStore implements Backend {
  readonly name = "local" as const;

  async search(req: SearchRequest): Promise<Candidate[]> {
    return guard(req.signal, "search", () =>
      this.searchUser(req.userId, req.query, req.searchType, req.limit).map(({ record, score, raw }) =>
        toCandidate(record, score, raw),
      ),
    );
  }

  /** The OpenMemory door's `/memory/query` over this store, in OpenMemory's wire format (./openmemory.ts). */
  async searchNative(req: NativeSearchRequest): Promise<NativeAnswer> {
    const { searchType } = req.policy.retrieval;
    return guard(req.signal, "search", () =>
      localSurface(this).query(req.native, { limit: req.limit, searchType }),
    );
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
