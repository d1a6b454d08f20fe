import type Redis from "ioredis";
import request from "supertest";
import { type Harness, type HarnessOptions, KEYS, makeHarness } from "../helpers/harness";
import { makeCandidate } from "../helpers/items";
import { REDIS_URL, redisSuite, waitFor } from "./redis-helpers";

export const MEMORIES = [
  makeCandidate({ id: "f1", content: "Ana orders an oat milk flat white.", score: 0.9 }),
  makeCandidate({ id: "f2", content: "Ana works from the Lisbon office on Tuesdays.", score: 0.8 }),
];

export const body = (patch: Record<string, unknown> = {}) => ({
  userId: "u-123",
  sessionId: "s-9",
  query: "what do I usually order?",
  useMemory: true,
  policy: "fast",
  ...patch,
});

export function post(h: Harness, payload: unknown, key: string = KEYS.acmeChat) {
  return request(h.app)
    .post("/v1/retrieve")
    .set("x-api-key", key)
    .send(payload as object);
}

/**
 * A gateway (real wiring, fake backends) on Redis at `url` under `prefix`, with acme's fake Zep knowing u-123.
 * Waits for the Redis connection unless `waitReady` is false (a test of a Redis that is down).
 */
export async function redisHarness(
  prefix: string,
  opts: HarnessOptions & { url?: string; waitReady?: boolean } = {},
): Promise<Harness> {
  const h = await makeHarness({
    ...opts,
    env: { REDIS_URL: opts.url ?? REDIS_URL, MEMGATE_REDIS_PREFIX: prefix, ...opts.env },
  });
  h.zep.acme?.setUser("u-123", MEMORIES);
  if (opts.waitReady !== false) await waitFor("redis ready", () => h.services.redis?.ready() === true);
  return h;
}

export function fakeZep(h: Harness) {
  const zep = h.zep.acme;
  if (zep === undefined) throw new Error("the harness has no fake Zep for acme");
  return zep;
}

/**
 * The lifecycle every Redis gateway suite shares: one admin connection (the suite fails with instructions when
 * Redis is unreachable), the harnesses a test opened closed after it, and the suite's keys deleted.
 */
export function redisGatewaySuite(prefix: string): { open: Harness[]; admin: () => Redis } {
  return redisSuite<Harness>(prefix);
}
