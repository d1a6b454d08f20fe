import type { Policy } from "../../policy/schema";
import { byScore } from "../order";
import { normalizeForHash } from "../text/hash";
import type { StageResult, TraceChange, WorkItem } from "../types";

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
 * The normalized text itself is the key: the same groups as seed 000's 16-hex SHA-256 of it, minus the hash's
 * (unlikely) collisions, and without hashing every candidate on every request.
 */
export function dedupStage(items: WorkItem[], policy: Policy): StageResult {
  const winners = new Map<string, WorkItem>();
  const losers: Array<{ item: WorkItem; hash: string }> = [];
  for (const item of items) {
    const hash = normalizeForHash(item.content);
    const current = winners.get(hash);
    if (current === undefined) {
      winners.set(hash, item);
    } else if (better(item, current)) {
      winners.set(hash, item);
      losers.push({ item: current, hash });
    } else {
      losers.push({ item, hash });
    }
  }
  const changes: TraceChange[] = [];
  for (const { item, hash } of losers) {
    const winner = winners.get(hash);
    if (winner !== undefined) changes.push({ id: item.id, reason: `duplicate_of:${winner.id}` });
  }
  const unique = [...winners.values()].sort(byScore);
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
