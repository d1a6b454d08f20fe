/**
 * Auto-pipelining (src/redis/connection.ts, REDIS_AUTO_PIPELINING): concurrent requests' commands leave in fewer
 * socket writes, with the same answers; never on a Cluster.
 */
import type Redis from "ioredis";
import { parseEnv } from "../../src/config/env";
import { RedisRateLimiter } from "../../src/limits/redis";
import { silentLogger } from "../../src/logging/logger";
import { RedisConnection } from "../../src/redis/connection";
import { createSharedState } from "../../src/server/shared-state";
import { REDIS_URL, readyConnection, redisSuite, testPrefix } from "./redis-helpers";

const PREFIX = testPrefix("autopipe");
const RULE = { points: 100, durationSeconds: 60 };

describe("Redis auto-pipelining", () => {
  const { open: conns } = redisSuite<RedisConnection>(PREFIX);

  /** 40 concurrent per-user limit decisions; how many socket writes they took, and the `remaining` they got. */
  async function fortyConsumes(autoPipelining: boolean, user: string) {
    // A command timeout far above any machine's stall: on a loaded CI machine a 500 ms timeout let one decision
    // come from the in-process insurance limiter (remaining 99) while Redis still counted it.
    const conn = await readyConnection(conns, PREFIX, { autoPipelining, commandTimeoutMs: 10_000 });
    const limiter = new RedisRateLimiter(conn, "user");
    await limiter.consume(`acme:${user}`, RULE); // the script is loaded on this connection
    const stream = (conn.client as Redis).stream;
    let writes = 0;
    const write = stream.write.bind(stream);
    stream.write = ((...args: Parameters<typeof write>) => {
      writes++;
      return write(...args);
    }) as typeof stream.write;
    const decisions = await Promise.all(
      Array.from({ length: 40 }, () => limiter.consume(`acme:${user}`, RULE)),
    );
    return { writes, remaining: decisions.map((d) => d.remaining).sort((a, b) => b - a) };
  }

  test("on: the commands of one turn leave in fewer writes, each with its own answer", async () => {
    const expected = Array.from({ length: 40 }, (_, i) => 98 - i);
    const off = await fortyConsumes(false, "u-off");
    const on = await fortyConsumes(true, "u-on");
    expect(off.writes).toBe(40);
    expect(on.writes).toBeLessThan(5);
    expect(off.remaining).toEqual(expected);
    expect(on.remaining).toEqual(expected);
  });

  test("serve: on by default, off with REDIS_AUTO_PIPELINING=false", async () => {
    for (const [value, on] of [
      [undefined, true],
      ["true", true],
      ["false", false],
      ["0", false],
    ] as const) {
      const env = {
        REDIS_URL,
        MEMGATE_REDIS_PREFIX: PREFIX,
        ...(value === undefined ? {} : { REDIS_AUTO_PIPELINING: value }),
      };
      const shared = createSharedState(parseEnv(env), silentLogger());
      expect([value, shared.redis?.client.options.enableAutoPipelining === true]).toEqual([value, on]);
      await shared.close();
    }
  });

  test("never on a Cluster, whatever is asked", async () => {
    const conn = new RedisConnection({
      target: { kind: "cluster", nodes: [{ host: "127.0.0.1", port: 1 }], tls: false },
      prefix: PREFIX,
      logger: silentLogger(),
      autoPipelining: true,
    });
    conns.push(conn);
    expect(conn.client.options.enableAutoPipelining).toBeFalsy();
    expect(
      (conn.client as unknown as { options: { redisOptions?: Record<string, unknown> } }).options.redisOptions
        ?.enableAutoPipelining,
    ).toBeUndefined();
  });
});
