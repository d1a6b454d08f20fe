import { EnvError, parseEnv } from "../../src/config/env";
import { redisTarget } from "../../src/redis/topology";

/** The three Redis topologies from the environment, and the one-line error naming the variable for each mistake. */
describe("Redis topology from the environment", () => {
  test("none: in-process state", () => {
    expect(redisTarget(parseEnv({}))).toBeUndefined();
  });

  test("one node: REDIS_URL", () => {
    expect(redisTarget(parseEnv({ REDIS_URL: "rediss://u:p@cache.internal:6380/0" }))).toEqual({
      kind: "single",
      url: "rediss://u:p@cache.internal:6380/0",
    });
  });

  test("Cluster: seed nodes, credentials and TLS", () => {
    const env = parseEnv({
      REDIS_CLUSTER_NODES: "10.0.0.1:6379, 10.0.0.2:6380,[::1]:7000",
      REDIS_USERNAME: "memgate",
      REDIS_PASSWORD: "s3cret",
      REDIS_TLS: "true",
    });
    expect(redisTarget(env)).toEqual({
      kind: "cluster",
      nodes: [
        { host: "10.0.0.1", port: 6379 },
        { host: "10.0.0.2", port: 6380 },
        { host: "::1", port: 7000 },
      ],
      username: "memgate",
      password: "s3cret",
      tls: true,
    });
  });

  test("Sentinel: sentinels, master name, the sentinels' own password", () => {
    const env = parseEnv({
      REDIS_SENTINELS: "s1:26379,s2:26379,s3:26379",
      REDIS_SENTINEL_MASTER: "mymaster",
      REDIS_SENTINEL_PASSWORD: "sentinel-pass",
      REDIS_PASSWORD: "data-pass",
    });
    expect(redisTarget(env)).toEqual({
      kind: "sentinel",
      sentinels: [
        { host: "s1", port: 26379 },
        { host: "s2", port: 26379 },
        { host: "s3", port: 26379 },
      ],
      masterName: "mymaster",
      sentinelPassword: "sentinel-pass",
      password: "data-pass",
      tls: false,
    });
  });

  test.each([
    [
      { REDIS_CLUSTER_NODES: "10.0.0.1" },
      /^REDIS_CLUSTER_NODES: must be host:port\[,host:port…\] .*\(got "10\.0\.0\.1"\)$/,
    ],
    [{ REDIS_CLUSTER_NODES: "a:1,b:70000" }, /^REDIS_CLUSTER_NODES: must be host:port/],
    [{ REDIS_SENTINELS: "a:1,,b:2", REDIS_SENTINEL_MASTER: "m" }, /^REDIS_SENTINELS: must be host:port/],
    [
      { REDIS_URL: "redis://x:6379", REDIS_CLUSTER_NODES: "a:1" },
      /^REDIS_CLUSTER_NODES: set only one of REDIS_URL, REDIS_CLUSTER_NODES, REDIS_SENTINELS/,
    ],
    [{ REDIS_SENTINELS: "a:1" }, /^REDIS_SENTINEL_MASTER: is required with REDIS_SENTINELS/],
    [{ REDIS_SENTINEL_MASTER: "m" }, /^REDIS_SENTINEL_MASTER: only applies with REDIS_SENTINELS/],
    [{ REDIS_CLUSTER_NODES: "a:1", REDIS_SENTINEL_PASSWORD: "x" }, /^REDIS_SENTINEL_PASSWORD: only applies/],
    [
      { REDIS_SENTINELS: "a:1", REDIS_SENTINEL_MASTER: "my master" },
      /^REDIS_SENTINEL_MASTER: must be the master's name/,
    ],
    [
      { REDIS_URL: "redis://x:6379", REDIS_PASSWORD: "p" },
      /^REDIS_PASSWORD: does not apply with REDIS_URL: put it in the URL/,
    ],
    [
      { REDIS_USERNAME: "u" },
      /^REDIS_USERNAME: does not apply without REDIS_CLUSTER_NODES or REDIS_SENTINELS/,
    ],
    [{ REDIS_CLUSTER_NODES: "a:1", REDIS_TLS: "yes" }, /^REDIS_TLS: must be true or false \(got "yes"\)$/],
    [{ REDIS_TLS: "true" }, /^REDIS_TLS: does not apply without/],
    [
      { REDIS_URL: "redis://x:6379", REDIS_AUTO_PIPELINING: "yes" },
      /^REDIS_AUTO_PIPELINING: must be true or false/,
    ],
    [
      { REDIS_AUTO_PIPELINING: "false" },
      /^REDIS_AUTO_PIPELINING: only applies with REDIS_URL or REDIS_SENTINELS/,
    ],
    [
      { REDIS_CLUSTER_NODES: "a:1", REDIS_AUTO_PIPELINING: "true" },
      /^REDIS_AUTO_PIPELINING: does not apply with REDIS_CLUSTER_NODES/,
    ],
  ])("%j → %s", (env, message) => {
    expect(() => parseEnv(env)).toThrow(EnvError);
    expect(() => parseEnv(env)).toThrow(message);
  });

  test("auto-pipelining: on unless false; a Cluster may say false", () => {
    expect(parseEnv({ REDIS_URL: "redis://x:6379" }).REDIS_AUTO_PIPELINING).toBeUndefined();
    expect(
      parseEnv({ REDIS_URL: "redis://x:6379", REDIS_AUTO_PIPELINING: "false" }).REDIS_AUTO_PIPELINING,
    ).toBe("false");
    expect(() => parseEnv({ REDIS_CLUSTER_NODES: "a:1", REDIS_AUTO_PIPELINING: "false" })).not.toThrow();
  });

  test("a password is never echoed in the error", () => {
    expect(() => parseEnv({ REDIS_URL: "redis://x:6379", REDIS_PASSWORD: "hunter2" })).toThrow(
      /^REDIS_PASSWORD: [^"]*$/,
    );
  });
});
