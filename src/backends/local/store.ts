import { randomUUID } from "node:crypto";
import { asksQuestion, type QuestionAt } from "../question";
import { LocalDataError } from "./load";
import { queryTerms } from "./query";
import { formatIssues, type MemoryRecord, type NewMemory, newMemorySchema } from "./schema";
import { type SearchType, UserIndex } from "./user-index";

/**
 * The in-memory store behind the local backend: records by id (ids are unique in the whole store) and one
 * MiniSearch index per user, kept in sync on every add and delete. Records are frozen, so what a caller
 * holds can never drift from what is indexed.
 */

export interface ListOptions {
  /** Page size, 0–1000 (default 100). */
  limit?: number;
  /** Records to skip (default 0). */
  offset?: number;
}

export interface ListPage {
  /** Newest first (timestamp descending, then id ascending). */
  items: MemoryRecord[];
  /** How many records match in all (for paging). */
  total: number;
}

export interface ScoredRecord {
  record: MemoryRecord;
  /** Normalized relevance in [0, 1), see score.ts. */
  score: number;
  /** MiniSearch's raw BM25+ score (the candidate's `backendScore`). */
  raw: number;
}

/** The store operations the OpenMemory-compatible API (and tests) use besides `Backend`. */
export interface LocalStore {
  /** Validates and stores a memory; assigns an id (UUID) and a timestamp (now) when they are missing. */
  add(memory: NewMemory): MemoryRecord;
  get(id: string): MemoryRecord | undefined;
  /** Removes a memory; false when there was none with that id. */
  delete(id: string): boolean;
  /** One user's memories, or everyone's when `userId` is undefined. */
  list(userId?: string, opts?: ListOptions): ListPage;
  /** Whether the user has at least one memory. */
  hasUser(userId: string): boolean;
  /** Number of memories of all users. */
  readonly size: number;
}

export interface StoreOptions {
  /** Clock for `add` without a timestamp. */
  now?: () => Date;
  /** Id generator for `add` without an id. */
  newId?: () => string;
}

const byNewest = (a: MemoryRecord, b: MemoryRecord) =>
  Date.parse(b.timestamp) - Date.parse(a.timestamp) || compareIds(a.id, b.id);

/** Code-unit order: the same on every host and locale (never `localeCompare`). */
export function compareIds(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** A frozen copy (tags included), so nobody can change a record behind the index's back. */
function frozenCopy(record: MemoryRecord): MemoryRecord {
  const tags = record.tags === undefined ? {} : { tags: Object.freeze([...record.tags]) };
  return Object.freeze({ ...record, ...tags });
}

/** Within a session: oldest first, then id. */
const inSessionOrder = (a: MemoryRecord, b: MemoryRecord) =>
  Date.parse(a.timestamp) - Date.parse(b.timestamp) || compareIds(a.id, b.id);

/** A turn whose last sentence asks something: its reply is the next turn of the session. */

export class MemoryStore implements LocalStore {
  private readonly records = new Map<string, MemoryRecord>();
  private readonly indexes = new Map<string, UserIndex>();
  /** Each session's turns in order, by `userId` + NUL + `sessionId`. */
  private readonly sessions = new Map<string, MemoryRecord[]>();
  private readonly now: () => Date;
  private readonly newId: () => string;

  /** `records` must already be validated (see load.ts); ids must be unique. */
  constructor(records: Iterable<MemoryRecord> = [], opts: StoreOptions = {}) {
    this.now = opts.now ?? (() => new Date());
    this.newId = opts.newId ?? randomUUID;
    for (const record of records) this.insert(record);
  }

  get size(): number {
    return this.records.size;
  }

  add(memory: NewMemory): MemoryRecord {
    const parsed = newMemorySchema.safeParse(memory);
    if (!parsed.success) {
      throw new LocalDataError(`add: ${formatIssues(parsed.error)}`, {
        source: "add",
        code: "invalid_record",
      });
    }
    const { id, timestamp, ...rest } = parsed.data;
    const record: MemoryRecord = {
      ...rest,
      id: id ?? this.newId(),
      timestamp: timestamp ?? this.now().toISOString(),
    };
    return this.insert(record);
  }

  get(id: string): MemoryRecord | undefined {
    return this.records.get(id);
  }

  delete(id: string): boolean {
    const record = this.records.get(id);
    if (record === undefined) return false;
    const index = this.indexes.get(record.userId);
    index?.remove(record);
    this.records.delete(id);
    const key = sessionKey(record);
    const turns = this.sessions.get(key);
    if (turns !== undefined) {
      const at = turns.indexOf(record);
      if (at >= 0) turns.splice(at, 1);
      if (turns.length === 0) this.sessions.delete(key);
    }
    if (index !== undefined && index.size === 0) this.indexes.delete(record.userId);
    return true;
  }

  list(userId?: string, opts: ListOptions = {}): ListPage {
    const limit = clampInt(opts.limit ?? 100, 0, 1000);
    const offset = clampInt(opts.offset ?? 0, 0, Number.MAX_SAFE_INTEGER);
    const all = [...this.records.values()].filter((r) => userId === undefined || r.userId === userId);
    all.sort(byNewest);
    return { items: all.slice(offset, offset + limit), total: all.length };
  }

  hasUser(userId: string): boolean {
    return this.indexes.has(userId);
  }

  /** The users with at least one memory, sorted (the playground lists them in dev mode). */
  users(): string[] {
    const out: string[] = [];
    for (const [userId, index] of this.indexes) if (index.size > 0) out.push(userId);
    return out.sort(compareIds);
  }

  /**
   * The user's best memories for `query`: score descending, then id ascending, at most `limit`.
   * A user without memories gets an empty list.
   */
  searchUser(userId: string, query: string, searchType: SearchType, limit: number): ScoredRecord[] {
    const index = this.indexes.get(userId);
    const max = clampInt(limit, 0, Number.MAX_SAFE_INTEGER);
    if (index === undefined || max === 0) return [];
    const scored: ScoredRecord[] = [];
    for (const hit of index.search(queryTerms(query), searchType)) {
      const record = this.records.get(hit.id);
      if (record !== undefined) scored.push({ record, score: hit.score, raw: hit.raw });
    }
    scored.sort((a, b) => b.score - a.score || compareIds(a.record.id, b.record.id));
    return scored.slice(0, max);
  }

  /**
   * The turn right after `record` in its session when `record` asks a question (its text ends with "?", or with
   * `questionAt` "anywhere" has one in any sentence), else undefined: the reply that holds the answer to "what did you
   * name the puppy?".
   */
  replyTo(record: MemoryRecord, questionAt?: QuestionAt): MemoryRecord | undefined {
    if (!asksQuestion(record.content, questionAt)) return undefined;
    const turns = this.sessions.get(sessionKey(record));
    if (turns === undefined) return undefined;
    const at = turns.indexOf(record);
    return at >= 0 ? turns[at + 1] : undefined;
  }

  /** The user's record with this id (undefined: unknown, or another user's: the two are not told apart). */
  userRecord(userId: string, id: string): MemoryRecord | undefined {
    const record = this.records.get(id);
    return record?.userId === userId ? record : undefined;
  }

  /** Up to `before` turns before `record` and `after` turns after it in its session, oldest first. */
  sessionAround(
    record: MemoryRecord,
    before: number,
    after: number,
  ): { before: MemoryRecord[]; after: MemoryRecord[] } {
    const turns = this.sessions.get(sessionKey(record)) ?? [];
    const at = turns.indexOf(record);
    if (at < 0) return { before: [], after: [] };
    return {
      before: turns.slice(Math.max(0, at - clampInt(before, 0, turns.length)), at),
      after: turns.slice(at + 1, at + 1 + clampInt(after, 0, turns.length)),
    };
  }

  private insert(record: MemoryRecord): MemoryRecord {
    if (this.records.has(record.id)) {
      throw new LocalDataError(`add: id: duplicate id ${JSON.stringify(record.id)}`, {
        source: "add",
        code: "duplicate_id",
      });
    }
    const frozen = frozenCopy(record);
    let index = this.indexes.get(frozen.userId);
    if (index === undefined) {
      index = new UserIndex();
      this.indexes.set(frozen.userId, index);
    }
    index.add(frozen);
    this.records.set(frozen.id, frozen);
    const key = sessionKey(frozen);
    const turns = this.sessions.get(key);
    if (turns === undefined) this.sessions.set(key, [frozen]);
    else {
      let at = turns.length;
      while (at > 0 && inSessionOrder(turns[at - 1] as MemoryRecord, frozen) > 0) at--;
      turns.splice(at, 0, frozen);
    }
    return frozen;
  }
}

function sessionKey(record: MemoryRecord): string {
  return `${record.userId}\u0000${record.sessionId}`;
}

function clampInt(n: number, min: number, max: number): number {
  if (!Number.isFinite(n)) return n > 0 ? max : min;
  return Math.min(max, Math.max(min, Math.trunc(n)));
}
