import type { Policy } from "../../policy/schema";
import { byScore } from "../order";
import { normalizedKey } from "../text/hash";
import type { StageResult, TraceChange, WorkItem } from "../types";
import { reserveCopy } from "./select";

/** Candidates whose normalized text is `key`, and the one kept. */
interface Group {
  key: string;
  winner: WorkItem;
}

/** Groups of one normalized length compared one by one before they get a Map (see `dedupStage`). */
const MAX_SCANNED = 8;
/**
 * Up to this many candidates, every group's length is read in turn instead (see `dedupStage`); the default policy
 * fetches 100 (topK 20 × overfetch 5), plus the reply turns that come along.
 */
const SCAN_ALL = 128;

/** Among duplicates: highest score, then newer, then smaller id. */
function better(a: WorkItem, b: WorkItem): boolean {
  if (a.score !== b.score) return a.score > b.score;
  if (a.timeMs !== b.timeMs) return a.timeMs > b.timeMs;
  return a.id < b.id;
}

/** The group of `key` in a short list of one length (a loop: `find` would allocate a closure per candidate). */
function findGroup(groups: readonly Group[] | undefined, key: string): Group | undefined {
  if (groups === undefined) return undefined;
  for (const g of groups) if (g.key === key) return g;
  return undefined;
}

/**
 * Stage 4: hash dedup (seed 000's normalizeAndHash), then keep the best `topK` by score.
 * Output is ordered by score (desc, then id) — the order interleaving starts from. With `budget.fill` the
 * next best unique candidates, up to `maxMemories` in all, follow in the same order, marked `reserve` (the
 * budget stage takes them while they fit); the rest are `beyond_maxMemories`.
 * The normalized text itself is the key: the same groups as seed 000's 16-hex SHA-256 of it, minus the hash's
 * (unlikely) collisions, and without hashing every candidate on every request.
 */
export function dedupStage(items: WorkItem[], policy: Policy): StageResult {
  // Groups in first-seen order, found by the normalized text's length and then compared whole: a Map keyed by
  // the text itself would hash every candidate's full text (fresh strings each request), which cost about as
  // much as the rest of this stage; texts of different lengths are never equal. A length shared by more than
  // `MAX_SCANNED` groups gets a Map of its own, so many texts of one length never make this quadratic.
  // Up to `SCAN_ALL` candidates, a group is found by reading every group's length in one typed array: no Map and
  // no list per length to build, at most a few thousand integer comparisons.
  const groups: Group[] = [];
  const lengths = items.length <= SCAN_ALL ? new Int32Array(items.length) : undefined;
  let byLength: Map<number, Group[] | Map<string, Group>> | undefined;
  const losers: Array<{ item: WorkItem; group: Group }> = [];
  for (const item of items) {
    const key = normalizedKey(item.content);
    let group: Group | undefined;
    if (lengths !== undefined) {
      for (let g = 0; g < groups.length; g++)
        if (lengths[g] === key.length && (groups[g] as Group).key === key) {
          group = groups[g];
          break;
        }
      if (group === undefined) {
        lengths[groups.length] = key.length;
        groups.push({ key, winner: item });
        continue;
      }
    } else {
      byLength ??= new Map();
      const sameLength = byLength.get(key.length);
      group = sameLength instanceof Map ? sameLength.get(key) : findGroup(sameLength, key);
      if (group === undefined) {
        const created = { key, winner: item };
        groups.push(created);
        if (sameLength === undefined) byLength.set(key.length, [created]);
        else if (sameLength instanceof Map) sameLength.set(key, created);
        else if (sameLength.length < MAX_SCANNED) sameLength.push(created);
        else byLength.set(key.length, new Map([...sameLength, created].map((g) => [g.key, g])));
        continue;
      }
    }
    if (better(item, group.winner)) {
      losers.push({ item: group.winner, group });
      group.winner = item;
    } else {
      losers.push({ item, group });
    }
  }
  const changes: TraceChange[] = [];
  for (const { item, group } of losers) {
    changes.push({ id: item.id, reason: `duplicate_of:${group.winner.id}` });
  }
  const unique = groups.map((g) => g.winner).sort(byScore);
  if (policy.ranking.enabled) {
    // The select stage after ranking decides how many are kept (dynamic K) and which are reserve.
    return {
      items: unique,
      trace: {
        stage: "deduplication",
        in: items.length,
        out: unique.length,
        changes,
        detail: { duplicates: losers.length },
      },
    };
  }
  const { topK } = policy.retrieval;
  const kept = unique.slice(0, topK);
  // With budget.fill the next best stay as reserve the budget may still take: as many as maxMemories leaves
  // room for, so the stages after this one never work on more than max(topK, maxMemories) memories.
  const { fill, maxMemories } = policy.budget;
  const reserveEnd = fill ? Math.max(topK, maxMemories) : topK;
  const reserve = unique.slice(topK, reserveEnd).map(reserveCopy);
  for (const item of unique.slice(reserveEnd)) {
    changes.push({ id: item.id, reason: fill ? "beyond_maxMemories" : "beyond_topK" });
  }
  return {
    items: reserve.length > 0 ? [...kept, ...reserve] : kept,
    trace: {
      stage: "deduplication",
      in: items.length,
      out: kept.length + reserve.length,
      changes,
      detail: { duplicates: losers.length, topK, reserve: reserve.length },
    },
  };
}
