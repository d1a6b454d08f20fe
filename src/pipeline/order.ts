import type { WorkItem } from "./types";

/** Ties are broken by id ascending everywhere (docs/policy.md#determinism). Plain code-unit comparison: locale-free. */
export function compareIds(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Highest score first, then smaller id. */
export function byScore(a: WorkItem, b: WorkItem): number {
  return b.score - a.score || compareIds(a.id, b.id);
}

/** Newest first, then smaller id. */
export function byRecency(a: WorkItem, b: WorkItem): number {
  return b.timeMs - a.timeMs || compareIds(a.id, b.id);
}
