import type { Env } from "../config/env";

export interface RedisAddress {
  host: string;
  port: number;
}

/**
 * Which Redis the replicas share, from the environment (one of three, validated by src/config/env.ts):
 * `single` (REDIS_URL: one endpoint, credentials and TLS in the URL), `cluster` (REDIS_CLUSTER_NODES: seed nodes of a
 * Redis Cluster; ioredis learns the rest and follows MOVED/ASK) or `sentinel` (REDIS_SENTINELS + REDIS_SENTINEL_MASTER:
 * ioredis asks the sentinels for the master and follows a failover).
 */
export type RedisTarget =
  | { kind: "single"; url: string }
  | ({ kind: "cluster"; nodes: RedisAddress[] } & RedisAuth)
  | ({
      kind: "sentinel";
      sentinels: RedisAddress[];
      masterName: string;
      sentinelPassword?: string;
    } & RedisAuth);

/** The data nodes' credentials and TLS (Cluster and Sentinel; a REDIS_URL carries its own). */
export interface RedisAuth {
  username?: string;
  password?: string;
  tls: boolean;
}

/** `host:port,host:port` (IPv6 as `[::1]:7000`) → addresses; undefined when one is malformed. */
export function parseAddresses(list: string): RedisAddress[] | undefined {
  const out: RedisAddress[] = [];
  for (const part of list.split(",")) {
    const m = /^\s*(?:\[([0-9A-Fa-f:.]+)\]|([A-Za-z0-9.-]+)):(\d{1,5})\s*$/.exec(part);
    const port = Number(m?.[3]);
    const host = m?.[1] ?? m?.[2];
    if (host === undefined || !Number.isInteger(port) || port < 1 || port > 65535) return undefined;
    out.push({ host, port });
  }
  return out.length > 0 ? out : undefined;
}

/** The topology the (validated) environment names; undefined = no Redis (in-process state). */
export function redisTarget(env: Env): RedisTarget | undefined {
  const auth: RedisAuth = {
    ...(env.REDIS_USERNAME === undefined ? {} : { username: env.REDIS_USERNAME }),
    ...(env.REDIS_PASSWORD === undefined ? {} : { password: env.REDIS_PASSWORD }),
    tls: env.REDIS_TLS,
  };
  if (env.REDIS_CLUSTER_NODES !== undefined)
    return { kind: "cluster", nodes: env.REDIS_CLUSTER_NODES, ...auth };
  if (env.REDIS_SENTINELS !== undefined) {
    return {
      kind: "sentinel",
      sentinels: env.REDIS_SENTINELS,
      masterName: env.REDIS_SENTINEL_MASTER ?? "",
      ...(env.REDIS_SENTINEL_PASSWORD === undefined ? {} : { sentinelPassword: env.REDIS_SENTINEL_PASSWORD }),
      ...auth,
    };
  }
  if (env.REDIS_URL !== undefined) return { kind: "single", url: env.REDIS_URL };
  return undefined;
}
