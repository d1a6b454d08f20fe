import type { Policy } from "../../policy/schema";
import { byScore } from "../order";
import {
  hashUnits,
  isAscii,
  normalizedHashAscii,
  normalizedLengthAscii,
  normalizeForHash,
} from "../text/hash";
import type { StageResult, TraceChange, WorkItem } from "../types";

/** Candidates whose normalized text is that of `text`, and the one kept. */
interface Group {
  /** The first candidate's text, whose normal form (`normalizeForHash`) is the group's. */
  text: string;
  /** That normal form, built when first compared (an ASCII text's is hashed without it). */
  key: string | undefined;
  /** Its length. */
  length: number;
  winner: WorkItem;
}

function keyOf(group: Group): string {
  group.key ??= normalizeForHash(group.text);
  return group.key;
}

/** Among duplicates: highest score, then newer, then smaller id. */
function better(a: WorkItem, b: WorkItem): boolean {
  if (a.score !== b.score) return a.score > b.score;
  if (a.timeMs !== b.timeMs) return a.timeMs > b.timeMs;
  return a.id < b.id;
}

/**
 * Stage 4: hash dedup (seed 000's normalizeAndHash), then keep the best `topK` by score.
 * Output is ordered by score (desc, then id) — the order interleaving starts from. With `budget.fill` the
 * next best unique candidates, up to `maxMemories` in all, follow in the same order, marked `reserve` (the
 * budget stage takes them while they fit); the rest are `beyond_maxMemories`.
 * The normalized text itself decides: the same groups as seed 000's 16-hex SHA-256 of it, minus the hash's
 * (unlikely) collisions, and without hashing every candidate with SHA-256 on every request.
 */
export function dedupStage(items: WorkItem[], policy: Policy): StageResult {
  // Groups in first-seen order, found by a hash of the normalized text (and its length) and then compared
  // whole. An ASCII text's normal form is hashed as it is read (`normalizedHashAscii`), never built: on
  // ordinary text that is most candidates, and what keeps this stage from allocating a copy of every text; a
  // group's normal form is built only when another text hashes alike (a duplicate, or a collision, told apart
  // here). Other texts are normalized (`normalizeForHash`) and their normal form hashed (`hashUnits`), so an
  // ASCII text and, say, its full-width twin meet in one bucket.
  const groups: Group[] = [];
  const byHash = new Map<number, Group[]>();
  const losers: Array<{ item: WorkItem; group: Group }> = [];
  for (const item of items) {
    const text = item.content;
    let key: string | undefined;
    let hash: number;
    let length: number;
    if (isAscii(text)) {
      hash = normalizedHashAscii(text);
      length = normalizedLengthAscii;
    } else {
      key = normalizeForHash(text);
      hash = hashUnits(key);
      length = key.length;
    }
    const bucket = byHash.get(hash);
    let group: Group | undefined;
    if (bucket !== undefined) {
      for (const g of bucket) {
        if (g.length !== length) continue;
        key ??= normalizeForHash(text);
        if (keyOf(g) === key) {
          group = g;
          break;
        }
      }
    }
    if (group === undefined) {
      const created: Group = { text, key, length, winner: item };
      groups.push(created);
      if (bucket === undefined) byHash.set(hash, [created]);
      else bucket.push(created);
    } else if (better(item, group.winner)) {
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
  const reserve = unique.slice(topK, reserveEnd).map((item) => ({ ...item, reserve: true }));
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
