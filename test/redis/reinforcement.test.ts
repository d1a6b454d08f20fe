/**
 * Reinforcement counts shared through Redis (policy `ranking.reinforcement`, src/reinforcement/redis.ts), two
 * gateways on one Redis: a memory kept by one replica's answer counts on the other; a cache hit does not count;
 * with Redis unreachable the answer still comes, with `metadata.reinforcement.available: false` and the signal 0.
 */
import request from "supertest";
import { reinforcementKey } from "../../src/reinforcement/redis";
import { KEYS } from "../helpers/harness";
import { installTelemetry, type TestTelemetry } from "../telemetry/setup";
import { body, post, redisGatewaySuite, redisHarness } from "./gateway-helpers";
import { freePort, testPrefix } from "./redis-helpers";

const PREFIX = testPrefix("reinforcement-gw");
const policies = {
  reinforced: `name: reinforced
version: 1
retrieval: { topK: 2, minScore: 0 }
ranking: { enabled: true, reinforcement: { enabled: true, saturation: 3 } }
`,
};
const ask = (query: string, explain = false) => body({ query, policy: "reinforced", explain });
const signalsOf = (res: {
  body: { trace: Array<{ stage: string; ranking?: Array<{ id: string; signals: Record<string, number> }> }> };
}) =>
  Object.fromEntries(
    (res.body.trace.find((t) => t.stage === "rank")?.ranking ?? []).map((r) => [
      r.id,
      r.signals.reinforcement,
    ]),
  );

describe("reinforcement counts through Redis", () => {
  const { open, admin } = redisGatewaySuite(PREFIX);
  let tel: TestTelemetry;
  beforeAll(() => {
    tel = installTelemetry();
  });
  afterAll(() => tel.close());

  test("kept on one replica, counted on the other; a cache hit does not count", async () => {
    const a = await redisHarness(PREFIX, { policies });
    const b = await redisHarness(PREFIX, { policies });
    open.push(a, b);
    const first = await post(a, ask("what do I usually order?")).expect(200);
    expect(first.body.metadata.reinforcement).toEqual({ available: true });
    expect(first.body.memories.map((m: { id: string }) => m.id).sort()).toEqual(["f1", "f2"]);
    // The increment is not awaited by the answer: wait for it.
    const key = `${PREFIX}${reinforcementKey("acme", "u-123")}`;
    for (let i = 0; i < 50 && (await admin().hlen(key)) < 2; i++) await new Promise((r) => setTimeout(r, 10));
    expect(await admin().hgetall(key)).toEqual({ f1: "1", f2: "1" });
    // The same question on b: a hit (a's answer from the cache), not counted.
    const hit = await post(b, ask("what do I usually order?")).expect(200);
    expect(hit.body.metadata.cache).toBe("hit");
    await new Promise((r) => setTimeout(r, 50));
    expect(await admin().hgetall(key)).toEqual({ f1: "1", f2: "1" });
    // b reads a's counts: kept once with saturation 3 is ln 2 / ln 4 = 0.5.
    const explained = await post(b, ask("another question", true), KEYS.acmeOps).expect(200);
    expect(signalsOf(explained)).toEqual({ f1: 0.5, f2: 0.5 });
  });

  test("Redis unreachable: the answer comes, reinforcement unavailable, the signal 0", async () => {
    const down = await redisHarness(PREFIX, {
      policies,
      url: `redis://127.0.0.1:${await freePort()}`,
      waitReady: false,
    });
    open.push(down);
    const res = await post(down, ask("what do I usually order?", true), KEYS.acmeOps).expect(200);
    expect(res.body.metadata.fallback).toBeNull();
    expect(res.body.metadata.reinforcement).toEqual({ available: false });
    expect(res.body.memories).toHaveLength(2);
    expect(signalsOf(res)).toEqual({ f1: 0, f2: 0 });
    const rank = res.body.trace.find((t: { stage: string }) => t.stage === "rank");
    expect(rank.detail.reinforcement).toBe("unavailable");
    // Counted: the read that found no Redis, and the increment dropped after the answer.
    await new Promise((r) => setTimeout(r, 50));
    const metrics = (await request(down.app).get("/metrics").expect(200)).text;
    const count = (operation: string) =>
      Number(
        new RegExp(
          `^memgate_reinforcement_operations_total\\{[^}]*operation="${operation}"[^}]*outcome="unavailable"[^}]*\\} (\\d+)`,
          "m",
        ).exec(metrics)?.[1] ?? Number.NaN,
      );
    expect(count("read")).toBeGreaterThanOrEqual(1);
    expect(count("increment")).toBeGreaterThanOrEqual(1);
  });
});
