/**
 * The shadow policy with a real Redis (cache, single-flight and limits shared through it): answers are
 * byte-identical with and without the shadow, one search per miss, one shadow run per produced answer (a hit read
 * from Redis runs none), nothing of the shadow's in Redis.
 */
import request from "supertest";
import { type Harness, KEYS, makeHarness } from "../helpers/harness";
import { deleteKeys, keysUnder, REDIS_URL, requireRedis, testPrefix, waitFor } from "../redis/redis-helpers";
import { ANA_MEMORIES, LEAN, SHADOWED } from "./fixtures";

const memories = ANA_MEMORIES.slice(0, 3);
const turn = (query: string) => ({
  userId: "ana",
  sessionId: "s-1",
  query,
  useMemory: true,
  turnTime: "2026-05-01T10:00:00Z",
});
const QUERIES = ["what do I drink?", "where do I live?", "what do I drink?"];

async function answers(h: Harness): Promise<string[]> {
  await waitFor("the gateway's redis connection", () => h.services.redis?.ready() === true);
  h.zep.acme?.setUser("ana", memories);
  const out: string[] = [];
  for (const q of QUERIES) {
    const res = await request(h.app)
      .post("/v1/retrieve")
      .set("x-api-key", KEYS.acmeChat)
      .send(turn(q))
      .expect(200);
    out.push(res.text.replace(/"queryTime":[0-9.e-]+/, '"queryTime":0'));
  }
  return out;
}

describe("shadow policy with Redis", () => {
  test("byte-identical answers, one shadow run per produced answer, no shadow keys in Redis", async () => {
    const redis = await requireRedis();
    const plainPrefix = testPrefix("rollout-plain");
    const shadowPrefix = testPrefix("rollout-shadow");
    const env = (prefix: string) => ({ REDIS_URL, MEMGATE_REDIS_PREFIX: prefix });
    try {
      const plain = await makeHarness({ policies: { lean: LEAN }, env: env(plainPrefix) });
      const without = await answers(plain).finally(() => plain.close());
      const h = await makeHarness({ policies: { lean: LEAN }, tenants: SHADOWED, env: env(shadowPrefix) });
      try {
        const withShadow = await answers(h);
        expect(withShadow).toEqual(without);
        expect(JSON.parse(withShadow[2] ?? "{}").metadata.cache).toBe("hit");
        expect(h.zep.acme?.searchCalls).toBe(2);
        await h.services.shadow?.idle();
        expect(h.services.shadow?.report("acme", undefined).counts).toEqual({ ran: 2, dropped: 0, error: 0 });
        // The two deployments wrote the same kinds of keys: the shadow stored nothing of its own.
        const kinds = async (prefix: string) =>
          [
            ...new Set((await keysUnder(redis, prefix)).map((k) => k.slice(prefix.length).split(":")[0])),
          ].sort();
        expect(await kinds(shadowPrefix)).toEqual(await kinds(plainPrefix));
      } finally {
        await h.close();
      }
    } finally {
      for (const prefix of [plainPrefix, shadowPrefix]) await deleteKeys(redis, prefix);
      redis.disconnect();
    }
  });
});
