import type { RedisConnection } from "../redis/connection";
import { slotTag, userScope } from "../redis/keys";
import { defineScript, type RedisScript } from "../redis/scripts";
import { recordReinforcement } from "../telemetry/metrics";
import { countable, type ReinforcementCounts, type ReinforcementStore } from "./types";

/**
 * Adds 1 to each field and keeps the hash ARGV[1] ms longer. KEYS: the user's hash. ARGV: keep ms, then the ids.
 */
const ADD = `for i = 2, #ARGV do redis.call('hincrby', KEYS[1], ARGV[i], 1) end
redis.call('pexpire', KEYS[1], ARGV[1])
return #ARGV - 1`;

/** At most this many ids per read or increment (the fetch is at most 50 candidates, 100 with an expansion). */
const MAX_IDS = 200;

/**
 * `v1:reinforce:<tenant>:{<user tag>}`: one hash per tenant's user, field = memory id, value = times kept. The
 * user's slot tag (src/redis/keys.ts) puts it in the slot of the user's cache entries and rate counter, so on a
 * Cluster it is one node's key like theirs. docs/redis.md#key-space.
 */
export function reinforcementKey(tenantId: string, userId: string): string {
  return `v1:reinforce:${tenantId}:${slotTag(userScope(tenantId, userId))}`;
}

/**
 * The reinforcement counts in Redis, shared by every replica: a read is one HMGET, an increment one script (HINCRBY
 * per id and PEXPIRE). Never throws: with Redis down a read reports `available: false` (every count 0) and an
 * increment is dropped; both are logged (throttled) and counted (`reinforcement.operations`).
 */
export class RedisReinforcementStore implements ReinforcementStore {
  readonly kind = "redis";
  private readonly addScript: RedisScript;

  constructor(private readonly redis: RedisConnection) {
    this.addScript = defineScript(redis.client, "memgateReinforce", 1, ADD);
  }

  async read(tenantId: string, userId: string, ids: readonly string[]): Promise<ReinforcementCounts> {
    const counts = new Map<string, number>();
    const asked = countable(ids).slice(0, MAX_IDS);
    if (asked.length === 0) return { counts, available: this.redis.ready() };
    if (!this.redis.ready()) {
      recordReinforcement("read", "unavailable");
      return { counts, available: false };
    }
    try {
      const values = await this.redis.client.hmget(
        this.redis.key(reinforcementKey(tenantId, userId)),
        ...asked,
      );
      asked.forEach((id, i) => {
        const n = Number(values[i] ?? Number.NaN);
        if (Number.isInteger(n) && n > 0) counts.set(id, n);
      });
      recordReinforcement("read", "ok");
      return { counts, available: true };
    } catch (err) {
      this.redis.failed("reinforcement read", err);
      recordReinforcement("read", "unavailable");
      return { counts: new Map(), available: false };
    }
  }

  async add(tenantId: string, userId: string, ids: readonly string[], ttlSeconds: number): Promise<void> {
    const added = countable(ids).slice(0, MAX_IDS);
    if (added.length === 0) return;
    if (!this.redis.ready()) {
      recordReinforcement("increment", "unavailable");
      return;
    }
    try {
      await this.addScript(
        [this.redis.key(reinforcementKey(tenantId, userId))],
        [ttlSeconds * 1000, ...added],
      );
      recordReinforcement("increment", "ok");
    } catch (err) {
      this.redis.failed("reinforcement increment", err);
      recordReinforcement("increment", "unavailable");
    }
  }
}
