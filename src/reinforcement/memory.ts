import { recordReinforcement } from "../telemetry/metrics";
import { countable, type ReinforcementCounts, type ReinforcementStore } from "./types";

interface UserCounts {
  counts: Map<string, number>;
  expiresAt: number;
}

/**
 * The in-process reinforcement store (one replica, no Redis): a map per tenant's user, each forgotten `ttlSeconds`
 * after its last increment. Bounded: at most `maxUsers` users (the least recently incremented is forgotten first)
 * and `maxPerUser` memories per user (a new id beyond that is not counted).
 */
export class MemoryReinforcementStore implements ReinforcementStore {
  readonly kind = "memory";
  private readonly users = new Map<string, UserCounts>();

  constructor(
    private readonly now: () => number = Date.now,
    private readonly maxUsers = 10_000,
    private readonly maxPerUser = 5_000,
  ) {}

  async read(tenantId: string, userId: string, ids: readonly string[]): Promise<ReinforcementCounts> {
    const counts = new Map<string, number>();
    const user = this.live(`${tenantId}\u0000${userId}`);
    if (user !== undefined)
      for (const id of ids) {
        const n = user.counts.get(id);
        if (n !== undefined) counts.set(id, n);
      }
    recordReinforcement("read", "ok");
    return { counts, available: true };
  }

  async add(tenantId: string, userId: string, ids: readonly string[], ttlSeconds: number): Promise<void> {
    const key = `${tenantId}\u0000${userId}`;
    const user = this.live(key) ?? { counts: new Map<string, number>(), expiresAt: 0 };
    for (const id of countable(ids)) {
      const n = user.counts.get(id);
      if (n === undefined && user.counts.size >= this.maxPerUser) continue;
      user.counts.set(id, (n ?? 0) + 1);
    }
    user.expiresAt = this.now() + ttlSeconds * 1000;
    // Re-inserted: the map's order is the order of last increments.
    this.users.delete(key);
    this.users.set(key, user);
    while (this.users.size > this.maxUsers) {
      const oldest = this.users.keys().next().value;
      if (oldest === undefined) break;
      this.users.delete(oldest);
    }
    recordReinforcement("increment", "ok");
  }

  private live(key: string): UserCounts | undefined {
    const user = this.users.get(key);
    if (user === undefined) return undefined;
    if (user.expiresAt <= this.now()) {
      this.users.delete(key);
      return undefined;
    }
    return user;
  }
}
