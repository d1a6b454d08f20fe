import type { RedisConnection } from "../redis/connection";
import { defineScript, type RedisScript } from "../redis/scripts";
import type { RedisRateLimiter } from "./redis";
import type { RateDecision, RateLimiter, RateRule } from "./types";

/** A shared counter as a report leaves it: every replica's points so far in the window, and ms left in it. */
export interface CounterState {
  count: number;
  ttlMs: number;
}

/** The counters every replica reports to (Redis), and the limiter that answers while they cannot be used. */
export interface SharedCounters {
  /** False while the store is known to be unusable: the insurance answers without trying it. */
  ready(): boolean;
  /** Adds `points` to the key's counter, opening a window of the rule's duration when none is open. Rejects on failure. */
  report(key: string, rule: RateRule, points: number): Promise<CounterState>;
  /** This replica's own count (the store is unusable). Never throws. */
  insurance(key: string, rule: RateRule): Promise<RateDecision>;
}

/** One key's local view. */
interface KeyCount {
  /** The shared counter as the last report read it (every replica's reports until then, ours included). */
  seen: number;
  /** Admitted here, in the report now in flight. */
  sending: number;
  /** Admitted here since, not reported yet. */
  pending: number;
  /** When the last report that answered was sent (`NEVER`: no report has answered). */
  syncedAt: number;
  /** When the shared window ends, by this replica's clock (the send time plus the TTL the report read: early, never late). */
  windowEnd: number;
  /** Last consume (idle views are dropped). */
  usedAt: number;
  /** The rule of the last consume: a tick's report opens a window of its duration. */
  rule: RateRule;
  flight?: Promise<boolean> | undefined;
}

const NEVER = Number.NEGATIVE_INFINITY;
/** A key unused this long loses its view (a key removed from the tenants file does not stay until its window ends). */
const IDLE_MS = 60_000;

/**
 * The per-API-key limit counted locally and synchronized in batches (issue 29; Kong's `sync_rate`, Envoy's local
 * limit in front of the global one). Each replica keeps, per key, the shared count its last report read plus what
 * it admitted since, and decides on that sum: no Redis call for a request, except
 *   - the first request of a key on this replica, of a new window, or after the view went stale (older than
 *     `syncMs`) while it would admit: it reports what is pending and reads the count first (concurrent requests
 *     wait for the same report);
 *   - every `syncMs`, one report per key with admissions pending (`INCRBY` of the batch; the reply refreshes the view).
 * A refusal is always local: within a window the shared count only grows, so an old view that refuses is right.
 * Refused requests are not reported (the counter counts admissions; with `MEMGATE_KEY_LIMIT_SYNC_MS=0`
 * rate-limiter-flexible counts refusals too, which never changes who is admitted).
 *
 * The bound. Call T = `syncMs` and d the round trip of a report (≤ the Redis command timeout; ~1 ms on a LAN).
 * A replica admits on a view read at most T + d ago, and reports each admission within T + d, so it can miss the
 * other replicas' admissions of the last 2(T + d) at most. Once the fleet has admitted `points`, each replica may
 * still admit what it receives in that time: over a window, admitted ≤ points + Σ(replicas) R × 2(T + d), where R is
 * the rate one replica receives for that key — roughly replicas × rate × 2 × interval. It is also never more than
 * replicas × points (each replica counts its own admissions in its view), so one replica never overshoots. There is
 * no under-admission: a view never exceeds the true count, so a refusal means the fleet really admitted `points`.
 *
 * The limit is read from the caller's rule on every request (a tenants-file reload takes effect at once); the
 * counter is the one RateLimiterRedis uses (`rl:key:{…}`, same window arithmetic), so replicas with
 * `MEMGATE_KEY_LIMIT_SYNC_MS=0` and batched ones count together during a rollout. With the store unusable, the
 * insurance limiter answers, as for the exact limiter.
 */
export class SyncedRateLimiter implements RateLimiter {
  readonly kind = "redis";
  private readonly counts = new Map<string, KeyCount>();
  private readonly timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly counters: SharedCounters,
    private readonly syncMs: number,
    private readonly now: () => number = Date.now,
    /** false: no timer (tests call `flush` themselves). */
    timer = true,
  ) {
    if (!(syncMs > 0)) throw new Error("SyncedRateLimiter: syncMs must be > 0 (0 is the exact limiter)");
    if (timer) {
      this.timer = setInterval(() => void this.flush(), syncMs);
      this.timer.unref();
    }
  }

  async consume(key: string, rule: RateRule): Promise<RateDecision> {
    if (!this.counters.ready()) return this.counters.insurance(key, rule);
    // At most two reports: a window that ended while the first was in flight gets one more; then the insurance.
    for (let reports = 0; ; ) {
      const now = this.now();
      const count = this.current(key, now);
      count.usedAt = now;
      count.rule = rule;
      if (count.syncedAt !== NEVER) {
        const used = count.seen + count.sending + count.pending;
        if (used >= rule.points) {
          const wait = Math.max(1, count.windowEnd - now);
          return { allowed: false, retryAfterMs: wait, remaining: 0, resetMs: wait };
        }
        if (reports > 0 || now - count.syncedAt <= this.syncMs) {
          count.pending += 1;
          const resetMs = Math.max(0, count.windowEnd - now);
          return { allowed: true, retryAfterMs: 0, remaining: rule.points - used - 1, resetMs };
        }
      }
      if (reports === 2 || !(await this.report(key, count))) return this.counters.insurance(key, rule);
      reports += 1;
    }
  }

  /**
   * Reports every key's pending admissions (the timer calls it every `syncMs`) and drops the views of windows that
   * ended (their unreported points belonged to that window) and of keys idle for a minute.
   */
  async flush(): Promise<void> {
    const now = this.now();
    const reports: Array<Promise<boolean>> = [];
    const ready = this.counters.ready();
    for (const [key, count] of this.counts) {
      if (count.flight !== undefined) continue;
      const idle = count.pending === 0 && now - count.usedAt > Math.max(IDLE_MS, 4 * this.syncMs);
      if (now >= count.windowEnd || idle) this.counts.delete(key);
      else if (count.pending > 0 && ready) reports.push(this.report(key, count));
    }
    await Promise.all(reports);
  }

  async close(): Promise<void> {
    if (this.timer !== undefined) clearInterval(this.timer);
    await this.flush();
  }

  /** The key's view, a new one when there is none or its window ended. */
  private current(key: string, now: number): KeyCount {
    const count = this.counts.get(key);
    if (count !== undefined && now < count.windowEnd) return count;
    const fresh: KeyCount = {
      seen: 0,
      sending: 0,
      pending: 0,
      syncedAt: NEVER,
      windowEnd: Number.POSITIVE_INFINITY,
      usedAt: now,
      rule: count?.rule ?? { points: 1, durationSeconds: 1 },
    };
    this.counts.set(key, fresh);
    return fresh;
  }

  /** Sends what is pending and refreshes the view; joins the report in flight. Resolves false when it failed. */
  private report(key: string, count: KeyCount): Promise<boolean> {
    if (count.flight !== undefined) return count.flight;
    const sentAt = this.now();
    count.sending = count.pending;
    count.pending = 0;
    const flight = this.counters.report(key, count.rule, count.sending).then(
      (state) => {
        count.seen = state.count;
        count.sending = 0;
        count.syncedAt = sentAt;
        count.windowEnd = sentAt + Math.max(0, state.ttlMs);
        count.flight = undefined;
        return true;
      },
      () => {
        // Sent again with the next report (the failure itself was reported by the store).
        count.pending += count.sending;
        count.sending = 0;
        count.flight = undefined;
        return false;
      },
    );
    count.flight = flight;
    return flight;
  }
}

/**
 * KEYS: the counter (RateLimiterRedis' key). ARGV: the window in seconds, the points to add.
 * rate-limiter-flexible's own increment (RateLimiterRedis' incrTtlLuaScript) with a batch of points.
 * Returns {count, ttl ms}.
 */
const REPORT = `redis.call('set', KEYS[1], 0, 'EX', ARGV[1], 'NX')
local n = redis.call('incrby', KEYS[1], ARGV[2])
local ttl = redis.call('pttl', KEYS[1])
if ttl == -1 then redis.call('expire', KEYS[1], ARGV[1]) ttl = 1000 * tonumber(ARGV[1]) end
return {n, ttl}`;

/** The per-key counters in Redis: the exact limiter's keys and insurance, a batch of points per call. */
export class RedisSharedCounters implements SharedCounters {
  private readonly script: RedisScript;

  constructor(
    private readonly redis: RedisConnection,
    private readonly exact: RedisRateLimiter,
  ) {
    this.script = defineScript(redis.client, "memgateKeyReport", 1, REPORT);
  }

  ready(): boolean {
    return this.redis.ready();
  }

  async report(key: string, rule: RateRule, points: number): Promise<CounterState> {
    const { redisKey } = this.exact.prepare(key, rule);
    try {
      const reply = await this.script([redisKey], [rule.durationSeconds, points]);
      if (!Array.isArray(reply) || typeof reply[0] !== "number" || typeof reply[1] !== "number")
        throw new Error("unexpected reply from the key limit's report script");
      return { count: reply[0], ttlMs: reply[1] };
    } catch (err) {
      this.redis.failed("rate limit (key report)", err);
      throw err;
    }
  }

  insurance(key: string, rule: RateRule): Promise<RateDecision> {
    return this.exact.prepare(key, rule).insurance();
  }
}
