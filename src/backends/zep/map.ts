/**
 * Zep Cloud `graph.search` answers → gateway candidates.
 *
 * ## Requests
 * One `graph.search` per scope in `policy.zep.scopes` (duplicates ignored), in parallel, with the request's
 * `user_id`, `limit` L = min(request limit, 50) (Zep's maximum) and `reranker` = `policy.zep.reranker`
 * (`mmr` also sends `mmr_lambda: 0.5`, Zep requires one). `searchType` has no Zep equivalent and is not sent.
 *
 * ## Scores (per reranker): ./score.ts
 * Each scope's answer is calibrated on its own to the scale every backend shares (the table in ./score.ts):
 * `cross_encoder` keeps Zep's sigmoid relevance (clamped to [0,1]); `rrf` maps Zep's RRF value raw to
 * raw / (raw + 1) (0.5 = first of one retriever); `mmr` and `episode_mentions`, whose numbers are not a
 * relevance, score by rank, 1 / (rank + 2). Never increasing down one scope's list, so Zep's order is kept.
 * Zep's own number (`score`, else `relevance`) is kept as the candidate's `backendScore`.
 *
 * ## Merging scopes
 * Candidates of all scopes are merged; should an id repeat, its best score is kept. Order: calibrated score
 * descending, then id ascending (code units); at most L candidates. The output never increases in score.
 *
 * ## Field mapping (`id` = `sourceId` = Zep `uuid`, `backend` = "zep")
 * | scope              | type      | content   | timestamp                                                     |
 * |--------------------|-----------|-----------|---------------------------------------------------------------|
 * | `edges`            | "fact"    | `fact`    | `valid_at` ?? `created_at`                                    |
 * | `episodes`         | "message" | `content` | `created_at` (also `messageId` = uuid, `role`, see below)     |
 * | `nodes`            | "summary" | `summary` | `created_at`                                                  |
 * | `thread_summaries` | "summary" | `summary` | `last_summarized_episode_valid_at` ?? `last_summarized_at` ?? `created_at` |
 * - facts (`edges`) also carry their validity: `validAt` ← `valid_at`, `invalidAt` ← `invalid_at` ?? `expired_at`
 *   (when they are valid timestamps). The rank stage's time signal reads them (docs/policy.md#ranking): a fact
 *   invalidated before the turn loses for "now" questions; one valid during the question's time scope fits it.
 * - `role` ← `role_type`, else `role`, when it is user, assistant, system, tool or function (`norole` and
 *   speaker names such as "Ana" give no role).
 * - Items whose content is empty or blank are skipped. Timestamps are rewritten as ISO 8601 UTC
 *   (`toISOString`); one without a zone is read as UTC (never host time); Go's zero time
 *   (0001-01-01T00:00:00Z) counts as absent, so the next field in the chain is used.
 * - A 200 answer whose scope list is not an array, or has an item without a string `uuid` or without any valid
 *   timestamp, is rejected whole (the backend is reported unavailable).
 *
 * ## The user summary (policy `zep.userSummary: true`)
 * `GET /users/{userId}/node` is called beside the searches (same signal; it fails the search as a scope would,
 * except a 404: a user without a node has no summary). Its `node.summary`, when not blank, is one more candidate:
 * `type` "summary", `id` = `sourceId` = the node's `uuid`, `timestamp` its `created_at`, sessionId `user:<userId>`,
 * and score 1 — it is not a search hit but the user's own profile, so it passes any `minScore`. It comes on top of
 * L, replaces a search result with the same uuid, and takes its place in the order (score, then id).
 *
 * ## sessionId
 * - message: its `thread_id`.
 * - fact / entity summary: Zep links edges and nodes to the episodes they were extracted from (`episodes`, a
 *   list of episode uuids). The sessionId is the `thread_id` of the first listed episode whose thread is known
 *   from the episodes in the same search answer (any scope); so with the `episodes` scope, a fact usually
 *   points at the conversation it came from. (So a fact's sessionId can differ between two queries, as the
 *   episodes returned differ; it is still a pure function of Zep's answer, as determinism requires.)
 * - otherwise (no known episode, thread summaries, episodes added outside a thread): `user:<userId>`. Graph
 *   memories belong to the user's graph rather than to one conversation; the value is never empty, the same
 *   for all of a user's graph-level memories, and says where the memory lives ("" would read as "no session").
 */
import type { serialization } from "@getzep/zep-cloud";
import { compareIds } from "../../pipeline/order";
import { isIsoUtc } from "../../pipeline/text/time";
import { type Candidate, type MemoryType, ROLES, type Role } from "../../pipeline/types";
import type { Policy } from "../../policy/schema";
import { isRecord } from "../json";
import { ZepMalformedResponseError } from "./errors";
import { calibrateScores, rawScoreOf } from "./score";

export type ZepScope = Policy["zep"]["scopes"][number];
export type ZepReranker = Policy["zep"]["reranker"];

/** Zep's maximum `limit` for `graph.search`. */
export const ZEP_MAX_LIMIT = 50;

/** One scope's answer, as Zep sends it (the wire format, snake_case; typed by the SDK's serialization types). */
export interface ScopeAnswer {
  scope: ZepScope;
  results: serialization.GraphSearchResults.Raw;
}

export interface MapContext {
  userId: string;
  reranker: ZepReranker;
  /** The `limit` sent to Zep (L above). */
  limit: number;
}

/** The fields of one result item the mapper needs, whatever its scope. */
interface RawItem {
  uuid: string;
  type: MemoryType;
  content: string;
  timestamp: string;
  role?: Role;
  threadId?: string;
  episodes: string[];
  rawScore?: number;
  validAt?: string;
  invalidAt?: string;
}

const SCOPE_TYPE: Record<ZepScope, MemoryType> = {
  edges: "fact",
  episodes: "message",
  nodes: "summary",
  thread_summaries: "summary",
};

/** Go's zero `time.Time`, which Zep may send for an unset date; it and anything earlier count as absent. */
const GO_ZERO_TIME_MS = Date.parse("0001-01-01T00:00:00Z");
const MAX_TIME_MS = Date.UTC(9999, 11, 31, 23, 59, 59, 999);
const ISO_DATE_TIME = /^(\d{4}-\d{2}-\d{2})[T ](\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?)(Z|[+-]\d{2}:?\d{2})?$/i;

/**
 * `toIsoTimestamp` of a timestamp already in `toISOString`'s form with every field in range (see `isIsoUtc`)
 * and after Go's zero time: the text itself (with `.000` when it has no milliseconds), without parsing it into
 * a Date and writing it out again. Undefined when it is not such a timestamp (it then takes the general path,
 * which may still accept it).
 */
function canonicalIso(value: string): string | undefined {
  if (!isIsoUtc(value)) return undefined;
  const iso = value.length === 24 ? value : `${value.slice(0, 19)}.000Z`;
  // Fixed-width fields: text order is time order. Go's zero time and anything before it count as absent.
  return iso > "0001-01-01T00:00:00.000Z" ? iso : undefined;
}

/** ISO 8601 UTC of a Zep timestamp, or undefined when absent, invalid or Go's zero time. */
export function toIsoTimestamp(value: unknown): string | undefined {
  if (typeof value !== "string") return undefined;
  const canonical = canonicalIso(value);
  if (canonical !== undefined) return canonical;
  const m = ISO_DATE_TIME.exec(value.trim());
  if (m === null) return undefined;
  const ms = Date.parse(`${m[1]}T${m[2]}${m[3] ?? "Z"}`);
  if (Number.isNaN(ms) || ms <= GO_ZERO_TIME_MS || ms > MAX_TIME_MS) return undefined;
  return new Date(ms).toISOString();
}

/** The first of `values` that is a valid timestamp, as ISO 8601 UTC (the later ones are not converted). */
export function firstIsoTimestamp(values: readonly unknown[]): string | undefined {
  for (const value of values) {
    const iso = toIsoTimestamp(value);
    if (iso !== undefined) return iso;
  }
  return undefined;
}

function toRole(...values: unknown[]): Role | undefined {
  for (const v of values) {
    const role = ROLES.find((r) => r === v);
    if (role !== undefined) return role;
  }
  return undefined;
}

const str = (v: unknown): string => (typeof v === "string" ? v : "");
const optStr = (v: unknown): string | undefined => (typeof v === "string" && v !== "" ? v : undefined);
const strings = (v: unknown): string[] => (Array.isArray(v) ? v.filter((x) => typeof x === "string") : []);

function scopeList(
  scope: ZepScope,
  results: serialization.GraphSearchResults.Raw,
): ReadonlyArray<Record<string, unknown>> {
  if (!isRecord(results)) throw new ZepMalformedResponseError("the answer is not an object");
  const list: unknown =
    scope === "edges"
      ? results.edges
      : scope === "episodes"
        ? results.episodes
        : scope === "nodes"
          ? results.nodes
          : results.thread_summaries;
  if (list == null) return [];
  if (Array.isArray(list) && list.every(isRecord)) return list;
  throw new ZepMalformedResponseError(`${scope} is not a list of objects`);
}

function toRawItem(scope: ZepScope, item: Record<string, unknown>): RawItem {
  const uuid = item.uuid;
  if (typeof uuid !== "string" || uuid === "")
    throw new ZepMalformedResponseError(`${scope} item without uuid`);
  const times =
    scope === "edges"
      ? [item.valid_at, item.created_at]
      : scope === "thread_summaries"
        ? [item.last_summarized_episode_valid_at, item.last_summarized_at, item.created_at]
        : [item.created_at];
  const timestamp = firstIsoTimestamp(times);
  if (timestamp === undefined) throw new ZepMalformedResponseError(`${scope} item without a valid timestamp`);
  const content = str(scope === "edges" ? item.fact : scope === "episodes" ? item.content : item.summary);
  const raw: RawItem = {
    uuid,
    type: SCOPE_TYPE[scope],
    content,
    timestamp,
    episodes: strings(item.episodes),
  };
  const rawScore = rawScoreOf(item);
  if (rawScore !== undefined) raw.rawScore = rawScore;
  if (scope === "edges") {
    const validAt = toIsoTimestamp(item.valid_at);
    if (validAt !== undefined) raw.validAt = validAt;
    const invalidAt = firstIsoTimestamp([item.invalid_at, item.expired_at]);
    if (invalidAt !== undefined) raw.invalidAt = invalidAt;
  }
  if (scope === "episodes") {
    const role = toRole(item.role_type, item.role);
    if (role !== undefined) raw.role = role;
    const threadId = optStr(item.thread_id);
    if (threadId !== undefined) raw.threadId = threadId;
  }
  return raw;
}

function sessionIdOf(item: RawItem, threads: ReadonlyMap<string, string>, userId: string): string {
  if (item.threadId !== undefined) return item.threadId;
  if (item.type !== "message") {
    for (const episode of item.episodes) {
      const thread = threads.get(episode);
      if (thread !== undefined) return thread;
    }
  }
  return `user:${userId}`;
}

/** Maps every scope's answer to candidates, merged and ordered (see the top of this file). */
export function toCandidates(answers: readonly ScopeAnswer[], ctx: MapContext): Candidate[] {
  const scored = answers.flatMap(({ scope, results }) => {
    const items = scopeList(scope, results)
      .slice(0, ctx.limit)
      .map((item) => toRawItem(scope, item));
    const scores = calibrateScores(
      items.map((i) => i.rawScore),
      ctx.reranker,
    );
    return items.map((item, i) => ({ item, score: scores[i] ?? 0 }));
  });

  const threads = new Map<string, string>();
  for (const { item } of scored) if (item.threadId !== undefined) threads.set(item.uuid, item.threadId);

  const best = new Map<string, Candidate>();
  for (const { item, score } of scored) {
    if (item.content.trim() === "") continue;
    const previous = best.get(item.uuid);
    if (previous !== undefined && previous.score >= score) continue;
    const candidate: Candidate = {
      id: item.uuid,
      content: item.content,
      score,
      timestamp: item.timestamp,
      sessionId: sessionIdOf(item, threads, ctx.userId),
      type: item.type,
      backend: "zep",
      sourceId: item.uuid,
    };
    if (item.type === "message") candidate.messageId = item.uuid;
    if (item.role !== undefined) candidate.role = item.role;
    if (item.rawScore !== undefined) candidate.backendScore = item.rawScore;
    if (item.validAt !== undefined) candidate.validAt = item.validAt;
    if (item.invalidAt !== undefined) candidate.invalidAt = item.invalidAt;
    best.set(item.uuid, candidate);
  }
  return [...best.values()].sort((a, b) => b.score - a.score || compareIds(a.id, b.id)).slice(0, ctx.limit);
}

/** The user summary candidate of a `GET /users/{userId}/node` answer (see the top of this file), if any. */
export function userSummaryCandidate(answer: unknown, userId: string): Candidate | undefined {
  if (!isRecord(answer)) throw new ZepMalformedResponseError("the user node answer is not an object");
  const node = answer.node;
  if (node == null) return undefined;
  if (!isRecord(node)) throw new ZepMalformedResponseError("node is not an object");
  const summary = str(node.summary);
  if (summary.trim() === "") return undefined;
  const uuid = node.uuid;
  if (typeof uuid !== "string" || uuid === "") throw new ZepMalformedResponseError("user node without uuid");
  const timestamp = toIsoTimestamp(node.created_at);
  if (timestamp === undefined) throw new ZepMalformedResponseError("user node without a valid timestamp");
  return {
    id: uuid,
    content: summary,
    score: 1,
    timestamp,
    sessionId: `user:${userId}`,
    type: "summary",
    backend: "zep",
    sourceId: uuid,
  };
}

/** The candidates with the user summary among them (replacing a result with its id), in the same order. */
export function withUserSummary(
  candidates: readonly Candidate[],
  summary: Candidate | undefined,
): Candidate[] {
  if (summary === undefined) return [...candidates];
  return [...candidates.filter((c) => c.id !== summary.id), summary].sort(
    (a, b) => b.score - a.score || compareIds(a.id, b.id),
  );
}
