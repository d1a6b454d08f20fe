/**
 * Helpers for the tests that need a real Redis (docs/configuration.md#several-replicas-redis). They never skip: without a Redis at REDIS_URL
 * (default redis://127.0.0.1:6379) they fail with how to start one. Each test file uses a random key prefix so
 * parallel jest workers never collide, and deletes its keys afterwards.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { createServer } from "node:net";
import Redis from "ioredis";
import { silentLogger } from "../../src/logging/logger";
import { RedisConnection, type RedisOptions } from "../../src/redis/connection";

export const REDIS_URL = process.env.REDIS_URL ?? "redis://127.0.0.1:6379";

const HOW_TO =
  "start one with `redis-server --port 6379 --save '' --appendonly no --daemonize yes` " +
  "(apt-get install redis-server; .ci/run does this), or point REDIS_URL at one";

/** A client for the test's own checks; throws a clear error when Redis is not reachable. */
export async function requireRedis(url = REDIS_URL): Promise<Redis> {
  const client = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
  client.on("error", () => undefined);
  try {
    await client.connect();
    await client.ping();
  } catch (err) {
    client.disconnect();
    throw new Error(
      `These tests need a real Redis at ${url}, which is not reachable (${err instanceof Error ? err.message : String(err)}): ${HOW_TO}.`,
    );
  }
  return client;
}

/** A key prefix of this test file's own. */
export function testPrefix(name: string): string {
  return `memgate-test:${name}:${randomBytes(4).toString("hex")}:`;
}

/** Every key under `prefix` (SCAN, never KEYS). */
export async function keysUnder(client: Redis, prefix: string): Promise<string[]> {
  const keys: string[] = [];
  let cursor = "0";
  do {
    const [next, batch] = await client.scan(cursor, "MATCH", `${prefix}*`, "COUNT", 500);
    keys.push(...batch);
    cursor = next;
  } while (cursor !== "0");
  return keys;
}

export async function deleteKeys(client: Redis, prefix: string): Promise<void> {
  const keys = await keysUnder(client, prefix);
  if (keys.length > 0) await client.del(...keys);
}

/**
 * One test file's Redis: an admin client for its own checks, what each test opened (`open`: closed after the
 * test) and the keys under `prefix` (deleted after the test).
 */
export function redisSuite<T extends { close(): Promise<void> }>(
  prefix: string,
): { open: T[]; admin: () => Redis } {
  let client: Redis | undefined;
  const open: T[] = [];
  beforeAll(async () => {
    client = await requireRedis();
  });
  afterEach(async () => {
    await Promise.all(open.splice(0).map((o) => o.close()));
    if (client) await deleteKeys(client, prefix);
  });
  afterAll(() => client?.disconnect());
  return {
    open,
    admin: () => {
      if (!client) throw new Error("Redis admin connection is not open");
      return client;
    },
  };
}

/** A gateway connection to REDIS_URL under `prefix`, kept in `open` (closed after the test), once it is ready. */
export async function readyConnection(
  open: RedisConnection[],
  prefix: string,
  options: Partial<RedisOptions> = {},
): Promise<RedisConnection> {
  const conn = new RedisConnection({ url: REDIS_URL, prefix, logger: silentLogger(), ...options });
  open.push(conn);
  await waitFor("the gateway's redis connection", () => conn.ready());
  return conn;
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const addr = srv.address();
      const port = typeof addr === "object" && addr !== null ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

export async function waitFor(
  what: string,
  check: () => boolean | Promise<boolean>,
  timeoutMs = 8000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`timed out after ${timeoutMs} ms waiting for: ${what}`);
}

/** A throwaway redis-server of the test's own, on its own port (no persistence), to stop and restart. */
export class ScratchRedis {
  private child: ChildProcess | undefined;

  constructor(readonly port: number) {}

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  static async onFreePort(): Promise<ScratchRedis> {
    return new ScratchRedis(await freePort());
  }

  async start(): Promise<void> {
    const args = ["--port", String(this.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"];
    const child = spawn("redis-server", args, { stdio: "ignore" });
    this.child = child;
    const failed = new Promise<never>((_, reject) => {
      child.once("error", (err) =>
        reject(
          new Error(`cannot run redis-server (${err.message}): install it (apt-get install redis-server)`),
        ),
      );
    });
    const up = waitFor(`redis-server on port ${this.port}`, async () => {
      const probe = new Redis(this.url, {
        lazyConnect: true,
        maxRetriesPerRequest: 0,
        retryStrategy: () => null,
      });
      probe.on("error", () => undefined);
      try {
        await probe.connect();
        return (await probe.ping()) === "PONG";
      } catch {
        return false;
      } finally {
        probe.disconnect();
      }
    });
    await Promise.race([up, failed]);
  }

  /** Freezes the server (SIGSTOP): connections stay open, nothing answers. */
  pause(): void {
    this.child?.kill("SIGSTOP");
  }

  resume(): void {
    this.child?.kill("SIGCONT");
  }

  /** Stops the server abruptly (SIGKILL: no goodbye to the clients) and waits for it to exit. */
  async kill(): Promise<void> {
    const child = this.child;
    this.child = undefined;
    if (child === undefined || child.exitCode !== null) return;
    const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
    child.kill("SIGKILL");
    child.kill("SIGCONT");
    await exited;
  }
}
