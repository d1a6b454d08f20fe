import type { WorkItem } from "./types";

/** Ties are broken by id ascending everywhere (docs/policy.md#determinism). Plain code-unit comparison: locale-free. */
export function compareIds(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/**
 * The sign of `b − a` as −1, 0 or 1 (0 for NaN, as `b − a || next` goes on to `next`): for comparators handed to
 * `Array.prototype.sort`, which calls them from a builtin, where a difference of scores or times (not a small
 * integer) comes back as a new heap number for every comparison.
 */
export function descending(a: number, b: number): number {
  return a < b ? 1 : a > b ? -1 : 0;
}

/** Highest score first, then smaller id. */
export function byScore(a: WorkItem, b: WorkItem): number {
  return descending(a.score, b.score) || compareIds(a.id, b.id);
}

/** Newest first, then smaller id. */
export function byRecency(a: WorkItem, b: WorkItem): number {
  return descending(a.timeMs, b.timeMs) || compareIds(a.id, b.id);
}
