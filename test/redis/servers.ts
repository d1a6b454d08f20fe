/**
 * Real Redis topologies started by the tests themselves from `redis-server` (no Docker), on free loopback ports,
 * without persistence, in a temporary directory: a Redis Cluster (3 masters + 3 replicas, made by
 * `redis-cli --cluster create … --cluster-replicas 1 --cluster-yes`) and a Sentinel set (a master, a replica and 3
 * sentinels). Timeouts are low so that a killed master fails over in a few seconds. Every process started is stopped
 * by `stop()`, and killed when the test process exits, whatever happened. The bench uses them too.
 */
import { type ChildProcess, execFile, spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import Redis from "ioredis";
import { freePort, waitFor } from "./redis-helpers";

const run = promisify(execFile);

const INSTALL = "install them (apt-get install redis-server redis-tools redis-sentinel; .ci/run does this)";

const running = new Set<ChildProcess>();
process.once("exit", () => {
  for (const child of running) child.kill("SIGKILL");
});

/** One redis-server (or sentinel) process of a topology. */
export class RedisProcess {
  private child: ChildProcess | undefined;

  constructor(
    readonly port: number,
    private readonly args: string[],
  ) {}

  get address(): { host: string; port: number } {
    return { host: "127.0.0.1", port: this.port };
  }

  get alive(): boolean {
    return this.child !== undefined && this.child.exitCode === null && this.child.signalCode === null;
  }

  async start(): Promise<void> {
    const child = spawn("redis-server", this.args, { stdio: "ignore" });
    running.add(child);
    child.once("exit", () => running.delete(child));
    this.child = child;
    const failed = new Promise<never>((_, reject) => {
      child.once("error", (err) => reject(new Error(`cannot run redis-server (${err.message}): ${INSTALL}`)));
      child.once("exit", (code) =>
        reject(new Error(`redis-server on port ${this.port} exited with ${code}`)),
      );
    });
    failed.catch(() => undefined);
    await Promise.race([waitFor(`redis on port ${this.port}`, () => this.pings(), 10_000), failed]);
  }

  /** A client of this one process (not cluster-aware). */
  client(): Redis {
    const c = new Redis(this.port, "127.0.0.1", { maxRetriesPerRequest: 0, retryStrategy: () => null });
    c.on("error", () => undefined);
    return c;
  }

  private async pings(): Promise<boolean> {
    const probe = this.client();
    try {
      return (await probe.ping()) === "PONG";
    } catch {
      return false;
    } finally {
      probe.disconnect();
    }
  }

  /** SIGKILL (no goodbye to the clients), and waits for the exit. */
  async kill(): Promise<void> {
    const child = this.child;
    this.child = undefined;
    if (child === undefined || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
    child.kill("SIGKILL");
    await exited;
  }
}

const DATA_NODE = ["--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--protected-mode", "no"];

abstract class Topology {
  protected readonly dir = mkdtempSync(join(tmpdir(), "memgate-redis-"));
  readonly processes: RedisProcess[] = [];

  /** Starts a process on a free port; again on another port if it could not start (the port was taken meanwhile). */
  protected async add(args: (port: number) => string[]): Promise<RedisProcess> {
    for (let attempt = 1; ; attempt++) {
      const port = await freePort();
      const p = new RedisProcess(port, args(port));
      try {
        await p.start();
        this.processes.push(p);
        return p;
      } catch (err) {
        await p.kill();
        if (attempt === 3 || /cannot run/.test(String(err))) throw err;
      }
    }
  }

  /** Stops every process and removes the directory; safe to call after a failed start, and twice. */
  async stop(): Promise<void> {
    await Promise.all(this.processes.map((p) => p.kill()));
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** A Redis Cluster of 3 masters, each with a replica; fails a dead master over in ~2–3 s. */
export class RedisClusterServers extends Topology {
  static async start(): Promise<RedisClusterServers> {
    const cluster = new RedisClusterServers();
    try {
      await cluster.create();
    } catch (err) {
      await cluster.stop();
      throw err;
    }
    return cluster;
  }

  /** `host:port,…` of every node (REDIS_CLUSTER_NODES). */
  get seeds(): string {
    return this.processes.map((p) => `127.0.0.1:${p.port}`).join(",");
  }

  private async create(): Promise<void> {
    for (let i = 0; i < 6; i++) {
      await this.add((port) => [
        "--port",
        String(port),
        ...DATA_NODE,
        "--dir",
        this.dir,
        "--cluster-enabled",
        "yes",
        "--cluster-config-file",
        `nodes-${port}.conf`,
        "--cluster-node-timeout",
        "1000",
        // a replica fails over whatever its replication lag (the test kills masters on purpose)
        "--cluster-replica-validity-factor",
        "0",
      ]);
    }
    const nodes = this.processes.map((p) => `127.0.0.1:${p.port}`);
    try {
      await run("redis-cli", ["--cluster", "create", ...nodes, "--cluster-replicas", "1", "--cluster-yes"], {
        timeout: 30_000,
      });
    } catch (err) {
      const e = err as { code?: string; message: string };
      throw new Error(
        e.code === "ENOENT" ? `cannot run redis-cli: ${INSTALL}` : `redis-cli --cluster create: ${e.message}`,
      );
    }
    await this.waitHealthy();
  }

  /** Every live node sees `cluster_state:ok`, all 16384 slots served, and 3 masters with a replica each. */
  async waitHealthy(timeoutMs = 20_000): Promise<void> {
    await waitFor(
      "the cluster to be healthy",
      async () => {
        for (const p of this.processes.filter((x) => x.alive)) {
          const c = p.client();
          try {
            const info = String(await c.cluster("INFO"));
            if (!/cluster_state:ok/.test(info) || !/cluster_slots_ok:16384/.test(info)) return false;
          } catch {
            return false;
          } finally {
            c.disconnect();
          }
        }
        return true;
      },
      timeoutMs,
    );
  }

  /** The process that is master of `key`'s slot now (throws while no node answers). */
  async masterOf(key: string): Promise<RedisProcess> {
    const live = this.processes.find((p) => p.alive);
    if (live === undefined) throw new Error("no live cluster node");
    const c = live.client();
    try {
      const slot = Number(await c.cluster("KEYSLOT", key));
      const shards = await c.cluster("SLOTS");
      const owner = shards.find(([from, to]) => slot >= from && slot <= to);
      const port = owner?.[2]?.[1];
      const found = this.processes.find((p) => p.port === port);
      if (found === undefined) throw new Error(`no master for slot ${slot}`);
      return found;
    } finally {
      c.disconnect();
    }
  }

  /**
   * Moves `key`'s slot to another master the way `redis-cli --cluster reshard` does, one key at a time:
   * IMPORTING on the target, MIGRATING on the source, MIGRATE each key, then SETSLOT NODE everywhere. `midway`
   * runs once the slot is half moved (its first key on the target, the others not yet: clients get ASK and
   * TRYAGAIN), and after the move clients get MOVED. Resolves with the slot's new master.
   */
  async moveSlot(key: string, midway: () => Promise<void>): Promise<RedisProcess> {
    const [slot] = await this.slots([key]);
    const from = await this.masterOf(key);
    const masters = await this.masters();
    const to = masters.find((m) => m !== from);
    if (slot === undefined || to === undefined) throw new Error("no other master to move the slot to");
    const src = from.client();
    const dst = to.client();
    try {
      const srcId = String(await src.call("CLUSTER", "MYID"));
      const dstId = String(await dst.call("CLUSTER", "MYID"));
      await dst.call("CLUSTER", "SETSLOT", slot, "IMPORTING", srcId);
      await src.call("CLUSTER", "SETSLOT", slot, "MIGRATING", dstId);
      let halfway = false;
      for (;;) {
        const keys = (await src.call("CLUSTER", "GETKEYSINSLOT", slot, 1)) as string[];
        if (keys.length === 0) break;
        await src.call("MIGRATE", "127.0.0.1", to.port, "", 0, 5000, "KEYS", ...keys);
        if (!halfway) {
          halfway = true;
          await midway();
        }
      }
      if (!halfway) await midway();
      for (const m of [to, from, ...masters.filter((x) => x !== to && x !== from)]) {
        const c = m.client();
        try {
          await c.call("CLUSTER", "SETSLOT", slot, "NODE", dstId);
        } finally {
          c.disconnect();
        }
      }
    } finally {
      src.disconnect();
      dst.disconnect();
    }
    return to;
  }

  /** How many keys of `key`'s slot its master holds, and how many the other masters hold (0 after a clean move). */
  async keysInSlot(key: string): Promise<{ owner: number; others: number }> {
    const [slot] = await this.slots([key]);
    const owner = await this.masterOf(key);
    let mine = 0;
    let others = 0;
    for (const m of await this.masters()) {
      const c = m.client();
      try {
        const n = Number(await c.call("CLUSTER", "COUNTKEYSINSLOT", slot ?? 0));
        if (m === owner) mine = n;
        else others += n;
      } finally {
        c.disconnect();
      }
    }
    return { owner: mine, others };
  }

  /** The processes that are masters now. */
  async masters(): Promise<RedisProcess[]> {
    const live = this.processes.find((p) => p.alive);
    if (live === undefined) throw new Error("no live cluster node");
    const c = live.client();
    try {
      const ports = new Set((await c.cluster("SLOTS")).map((shard) => shard[2]?.[1]));
      return this.processes.filter((p) => ports.has(p.port));
    } finally {
      c.disconnect();
    }
  }

  /** The slot of each key (CLUSTER KEYSLOT, asked of a node). */
  async slots(keys: readonly string[]): Promise<number[]> {
    const live = this.processes.find((p) => p.alive);
    if (live === undefined) throw new Error("no live cluster node");
    const c = live.client();
    try {
      return await Promise.all(keys.map(async (k) => Number(await c.cluster("KEYSLOT", k))));
    } finally {
      c.disconnect();
    }
  }
}

/** A master, one replica and 3 sentinels (quorum 2) watching it as `mymaster`; fails over in ~2–4 s. */
export class RedisSentinelServers extends Topology {
  readonly masterName = "mymaster";
  master!: RedisProcess;
  replica!: RedisProcess;
  sentinels: RedisProcess[] = [];

  static async start(): Promise<RedisSentinelServers> {
    const set = new RedisSentinelServers();
    try {
      await set.create();
    } catch (err) {
      await set.stop();
      throw err;
    }
    return set;
  }

  /** `host:port,…` of the sentinels (REDIS_SENTINELS). */
  get seeds(): string {
    return this.sentinels.map((p) => `127.0.0.1:${p.port}`).join(",");
  }

  private async create(): Promise<void> {
    this.master = await this.add((port) => ["--port", String(port), ...DATA_NODE, "--dir", this.dir]);
    this.replica = await this.add((port) => [
      "--port",
      String(port),
      ...DATA_NODE,
      "--dir",
      this.dir,
      "--replicaof",
      "127.0.0.1",
      String(this.master.port),
    ]);
    for (let i = 0; i < 3; i++) {
      this.sentinels.push(
        await this.add((port) => {
          const conf = join(this.dir, `sentinel-${port}.conf`);
          writeFileSync(
            conf,
            [
              `port ${port}`,
              "bind 127.0.0.1",
              "protected-mode no",
              `dir ${this.dir}`,
              `sentinel monitor ${this.masterName} 127.0.0.1 ${this.master.port} 2`,
              `sentinel down-after-milliseconds ${this.masterName} 1000`,
              `sentinel failover-timeout ${this.masterName} 3000`,
              `sentinel parallel-syncs ${this.masterName} 1`,
              "",
            ].join("\n"),
          );
          return [conf, "--sentinel"];
        }),
      );
    }
    // A failover needs the replica in sync and every sentinel knowing the replica and the other two.
    await waitFor(
      "the sentinels to know each other and the replica",
      async () => {
        for (const s of this.sentinels) {
          const c = s.client();
          try {
            const replicas = (await c.call("SENTINEL", "REPLICAS", this.masterName)) as unknown[];
            const peers = (await c.call("SENTINEL", "SENTINELS", this.masterName)) as unknown[];
            if (replicas.length < 1 || peers.length < 2) return false;
          } catch {
            return false;
          } finally {
            c.disconnect();
          }
        }
        const r = this.replica.client();
        try {
          return /master_link_status:up/.test(await r.info("replication"));
        } finally {
          r.disconnect();
        }
      },
      20_000,
    );
  }

  /** The port the sentinels name as master now. */
  async currentMasterPort(): Promise<number | undefined> {
    for (const s of this.sentinels.filter((x) => x.alive)) {
      const c = s.client();
      try {
        const addr = (await c.call("SENTINEL", "GET-MASTER-ADDR-BY-NAME", this.masterName)) as
          | string[]
          | null;
        if (addr?.[1] !== undefined) return Number(addr[1]);
      } catch {
        // ask the next one
      } finally {
        c.disconnect();
      }
    }
    return undefined;
  }
}
