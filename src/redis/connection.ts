import Redis, { Cluster, type ClusterOptions, type RedisOptions as IORedisOptions } from "ioredis";
import type { Logger } from "../logging/logger";
import { describe, ThrottledLog } from "./log";
import type { RedisTarget } from "./topology";

/** A client of any topology: one node, a Cluster, or the master behind Sentinel (a plain Redis client). */
export type RedisClient = Redis | Cluster;

export interface RedisOptions {
  /** Which Redis: one node, a Cluster or Sentinel (src/redis/topology.ts). */
  target?: RedisTarget;
  /** Shorthand for `target: { kind: "single", url }`. */
  url?: string;
  /** Prepended to every key memgate writes (MEMGATE_REDIS_PREFIX). */
  prefix: string;
  logger: Logger;
  /** A command that gets no answer in this time fails (and the caller degrades). */
  commandTimeoutMs?: number;
  connectTimeoutMs?: number;
  /** Longest pause between reconnection attempts. */
  maxBackoffMs?: number;
  /**
   * Auto-pipelining (one node or Sentinel's master; never a Cluster): commands issued in the same turn of the event
   * loop leave in one socket write. Default off here; `REDIS_AUTO_PIPELINING` (default on) sets it when serving.
   */
  autoPipelining?: boolean;
}

/** What /readyz shows for Redis. */
export interface RedisCheck {
  name: "redis";
  ok: boolean;
  degraded?: boolean;
  detail?: string;
}

/**
 * One ioredis client shared by the cache, the single-flight locks, the limiters and the cooldowns: one connection
 * (one node or Sentinel's master) or a Cluster client (a connection per node, routing each command by its key's
 * slot, following MOVED/ASK and refreshing its slot map after a failover).
 *
 * Built to fail fast and recover alone: no offline queue (a command while disconnected fails at once instead of
 * waiting), one retry per command, a command timeout, and endless reconnection with a capped backoff. The boot
 * does not wait for Redis: a gateway started while Redis is down serves (cache bypassed, in-memory limits) and
 * picks Redis up when it comes back, without a restart.
 */
export class RedisConnection {
  readonly client: RedisClient;
  readonly prefix: string;
  readonly commandTimeoutMs: number;
  /**
   * Redis Cluster: a script may only touch keys of one hash slot (src/redis/keys.ts), so the admission reads the
   * backend cooldown (its own slot) with a command of its own.
   */
  readonly cluster: boolean;
  private readonly log: ThrottledLog;
  private closed = false;
  /** After a command timed out (a hung, not a closed, Redis), skip Redis until then instead of waiting again. */
  private suspendedUntil = 0;

  constructor(opts: RedisOptions) {
    this.prefix = opts.prefix;
    this.commandTimeoutMs = opts.commandTimeoutMs ?? 500;
    this.log = new ThrottledLog(opts.logger);
    const maxBackoff = opts.maxBackoffMs ?? 2000;
    const target: RedisTarget | undefined =
      opts.target ?? (opts.url === undefined ? undefined : { kind: "single", url: opts.url });
    if (target === undefined) throw new Error("RedisConnection: give a target or a url");
    const backoff = (times: number) =>
      this.closed ? null : Math.min(50 * 2 ** Math.min(times, 10), maxBackoff);
    const node: IORedisOptions = {
      lazyConnect: true,
      maxRetriesPerRequest: 1,
      commandTimeout: this.commandTimeoutMs,
      connectTimeout: opts.connectTimeoutMs ?? 2000,
      // An old master back as a replica refuses writes (READONLY): reconnect, which finds the master again.
      reconnectOnError: (err) => err.message.startsWith("READONLY"),
    };
    this.cluster = target.kind === "cluster";
    // Auto-pipelining: the commands of concurrent requests (limits, admissions, cache writes) issued in one turn
    // of the event loop leave in one socket write, flushed in a setImmediate. Each write to Redis is a system call
    // (~20 µs of CPU on the bench machine, two per cache hit: docs/benchmarks.md#the-zep-path-and-the-cache-hit-against-their-floors). The price:
    // ioredis keeps one batch in flight per connection, so under load a command may wait for the batch before it
    // (up to one round trip). Never on a Cluster, where a batch's redirections would not all be followed.
    if (opts.autoPipelining === true && !this.cluster) node.enableAutoPipelining = true;
    this.client = createClient(target, node, backoff);
    let wasReady = false;
    this.client.on("error", (err: unknown) => this.log.warn("connection", err));
    this.client.on("ready", () => {
      wasReady = true;
      opts.logger.info({ redis: "ready", topology: target.kind }, "redis connected");
    });
    this.client.on("close", () => {
      if (wasReady && !this.closed)
        opts.logger.warn({ redis: "closed" }, "redis connection lost; reconnecting");
      wasReady = false;
    });
    if (this.client instanceof Cluster) {
      // A node that cannot be reached is reported like any other fault (throttled), not thrown.
      this.client.on("node error", (err: unknown) => this.log.warn("cluster node", err));
    }
    // Non-blocking: failures are reported by the error event and retried by retryStrategy.
    this.client.connect().catch(() => undefined);
  }

  /** Commands can be sent now. While false, callers skip Redis (cache bypass, insurance limiter). */
  ready(): boolean {
    return this.client.status === "ready" && Date.now() >= this.suspendedUntil;
  }

  /**
   * Reports a failed operation (`what` names it; the error's keys are never logged). A timeout suspends Redis use
   * for a moment, so that a hung server costs one command timeout per few seconds, not one per command.
   */
  failed(what: string, err: unknown): void {
    if (err instanceof Error && /timed out/i.test(err.message)) this.suspendedUntil = Date.now() + 2000;
    this.log.warn(what, err);
  }

  key(suffix: string): string {
    return `${this.prefix}${suffix}`;
  }

  /**
   * The readiness check. Redis down is *degraded*, not *not ready*: the gateway still answers every request
   * (cache bypassed, in-process insurance limits), so taking replicas out of rotation because the cache is down
   * would turn a cache outage into a full outage. /readyz stays 200 with `status: "degraded"`.
   */
  async check(timeoutMs = 500): Promise<RedisCheck> {
    if (!this.ready()) {
      const state = this.client.status === "ready" ? "not answering (timeouts)" : this.client.status;
      return { name: "redis", ok: false, degraded: true, detail: `redis ${state}` };
    }
    const started = Date.now();
    try {
      await withTimeout(this.client.ping(), timeoutMs);
      return { name: "redis", ok: true, detail: `ping ${Date.now() - started} ms` };
    } catch (err) {
      return { name: "redis", ok: false, degraded: true, detail: describe(err) };
    }
  }

  /** Idempotent: a second close does nothing (ioredis would arm another timer on an ended connection). */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.ready()) {
      try {
        await withTimeout(this.client.quit(), 1000);
        return;
      } catch {
        // fall through to a hard disconnect
      }
    }
    this.client.disconnect();
  }
}

function createClient(
  target: RedisTarget,
  node: IORedisOptions,
  backoff: (times: number) => number | null,
): RedisClient {
  if (target.kind === "single")
    return new Redis(target.url, { ...node, enableOfflineQueue: false, retryStrategy: backoff });
  const auth = {
    ...(target.username === undefined ? {} : { username: target.username }),
    ...(target.password === undefined ? {} : { password: target.password }),
    ...(target.tls ? { tls: {} } : {}),
  };
  if (target.kind === "sentinel") {
    return new Redis({
      ...node,
      ...auth,
      sentinels: target.sentinels,
      name: target.masterName,
      ...(target.sentinelPassword === undefined ? {} : { sentinelPassword: target.sentinelPassword }),
      ...(target.tls ? { sentinelTLS: {}, enableTLSForSentinelMode: true } : {}),
      // Subscribe to the sentinels' +switch-master: reconnect to the new master as soon as they promote it.
      failoverDetector: true,
      sentinelRetryStrategy: backoff,
      enableOfflineQueue: false,
      retryStrategy: backoff,
    });
  }
  const { lazyConnect: _lazy, ...perNode } = node;
  const options: ClusterOptions = {
    lazyConnect: true,
    enableOfflineQueue: false,

    redisOptions: { ...perNode, ...auth },
    clusterRetryStrategy: (times) => backoff(times),
    // A failover or resharding moves slots: follow MOVED/ASK, and re-read the slot map often enough to notice a
    // promoted replica soon even when no command was redirected.
    slotsRefreshInterval: 2000,
    slotsRefreshTimeout: 1000,
    retryDelayOnFailover: 100,
    retryDelayOnClusterDown: 100,
    retryDelayOnTryAgain: 100,
    maxRedirections: 6,
    ...(target.tls ? { dnsLookup: (address, callback) => callback(null, address) } : {}),
  };
  return new Cluster(target.nodes, options);
}

function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no answer in ${ms} ms`)), ms);
    p.then(
      (v) => {
        clearTimeout(timer);
        resolve(v);
      },
      (e: unknown) => {
        clearTimeout(timer);
        reject(e);
      },
    );
  });
}
