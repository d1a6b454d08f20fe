/**
 * Reinforcement (seed 001, signal 5: "frequently recalled memories prove their value"): how often each memory was
 * kept in an answer before, counted per tenant, user and memory id. Read once before the pipeline ranks (only when
 * the policy's `ranking.reinforcement.enabled`), incremented for the kept memories after the answer. A cache hit
 * does not count. docs/policy.md#reinforcement.
 */

/** What a read found. `available: false`: the store could not be read (Redis down); every count is then 0. */
export interface ReinforcementCounts {
  counts: ReadonlyMap<string, number>;
  available: boolean;
}

export interface ReinforcementStore {
  readonly kind: "memory" | "redis";
  /** The counts of `ids` (absent = never kept) for the tenant's user, in one call. Never throws. */
  read(tenantId: string, userId: string, ids: readonly string[]): Promise<ReinforcementCounts>;
  /**
   * Adds 1 to each of `ids` (repeats count once) for the tenant's user, in one call; the user's counts are kept
   * `ttlSeconds` after this last increment. Never throws (a failure is logged and counted).
   */
  add(tenantId: string, userId: string, ids: readonly string[], ttlSeconds: number): Promise<void>;
}

/** Memory ids are bounded like the ids the pipeline takes: longer ones are not counted. */
export const MAX_ID_LENGTH = 256;

export function countable(ids: readonly string[]): string[] {
  return [...new Set(ids)].filter((id) => id.length > 0 && id.length <= MAX_ID_LENGTH);
}
