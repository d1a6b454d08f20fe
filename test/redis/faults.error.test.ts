import request from "supertest";
import type { Harness } from "../helpers/harness";
import { KEYS, tenantsYaml } from "../helpers/harness";
import { body, fakeZep, MEMORIES, post, redisHarness } from "./gateway-helpers";
import { ScratchRedis, testPrefix, waitFor } from "./redis-helpers";

/**
 * Redis faults (docs/api.md#errors, docs/configuration.md#several-replicas-redis): a Redis that dies, hangs or is not there at boot never produces a 5xx. Requests
 * are answered (cache bypassed, in-memory insurance limits), /readyz says "degraded" (200), and the gateway
 * picks Redis up again when it is back, without a restart. Each test runs a redis-server of its own.
 */
const PREFIX = testPrefix("faults");

/** acme's chat key limited to 3 per minute. */
const limitedTenants = () =>
  tenantsYaml().replace(
    "{ name: chat, sha256:",
    "{ name: chat, rateLimit: { points: 3, durationSeconds: 60 }, sha256:",
  );

const ask = (h: Harness, query: string) => post(h, body({ query }), KEYS.acmeOps);

function readyz(h: Harness) {
  return request(h.app).get("/readyz");
}

async function waitForReadyz(h: Harness, status: string): Promise<request.Response> {
  let last: request.Response | undefined;
  await waitFor(`/readyz status ${status}`, async () => {
    last = await readyz(h);
    return last.body.status === status;
  });
  if (last === undefined) throw new Error("no /readyz answer");
  return last;
}

describe("Redis faults: answered without 5xx, degraded readiness, recovery without restart", () => {
  let server: ScratchRedis;
  let h: Harness | undefined;

  beforeEach(async () => {
    server = await ScratchRedis.onFreePort();
  });
  afterEach(async () => {
    await h?.close();
    h = undefined;
    await server.kill();
  });

  test("Redis killed mid-run, then restarted on the same port", async () => {
    await server.start();
    h = await redisHarness(PREFIX, { url: server.url });
    const gw = h;
    expect((await ask(gw, "coffee").expect(200)).body.metadata.cache).toBe("miss");
    const hit = await ask(gw, "coffee").expect(200);
    expect(hit.body.metadata.cache).toBe("hit");
    const ready = await readyz(gw).expect(200);
    expect(ready.body.status).toBe("ready");
    expect(ready.body.checks).toContainEqual(expect.objectContaining({ name: "redis", ok: true }));

    // Traffic in flight while Redis dies: every answer is a 200.
    fakeZep(gw).script = { kind: "delay", ms: 20 };
    // 20, not more: on a loaded machine Redis may die before most of them are counted there, and the insurance
    // limiter then counts them all against the user's 30 per minute, which the requests below must not reach.
    const traffic = Array.from({ length: 20 }, (_, i) =>
      new Promise((r) => setTimeout(r, i * 5)).then(() => ask(gw, i % 3 === 0 ? `q${i}` : "coffee")),
    );
    await new Promise((r) => setTimeout(r, 40));
    await server.kill();
    const answers = await Promise.all(traffic);
    expect(answers.map((r) => r.status)).toEqual(Array(20).fill(200));
    for (const r of answers) expect(r.body.memories.length).toBeGreaterThan(0);

    await waitFor("the gateway notices", () => gw.services.redis?.ready() === false);
    const during = await ask(gw, "coffee").expect(200);
    expect(during.body.metadata).toMatchObject({ cache: "bypass", fallback: null });
    expect(during.body.memories.map((m: { id: string }) => m.id).sort()).toEqual(
      MEMORIES.map((m) => m.id).sort(),
    );
    const degraded = await waitForReadyz(gw, "degraded");
    expect(degraded.status).toBe(200);
    expect(degraded.body.checks).toContainEqual(
      expect.objectContaining({ name: "redis", ok: false, degraded: true }),
    );

    // Logged, rate-limited, and without keys, user ids or queries.
    const logs = gw.logs.join("");
    expect(logs).toContain("redis connection lost");
    expect(logs).not.toMatch(/u-123|coffee|memgate-test:/);

    await server.start();
    await waitFor("the gateway reconnects", () => gw.services.redis?.ready() === true);
    // The restarted Redis is empty (no persistence): a miss fills it, then hits again.
    expect((await ask(gw, "coffee").expect(200)).body.metadata.cache).toBe("miss");
    expect((await ask(gw, "coffee").expect(200)).body.metadata.cache).toBe("hit");
    await waitForReadyz(gw, "ready");
  });

  test("Redis down at start: the gateway boots, answers, limits with its insurance limiter, then recovers", async () => {
    const started = Date.now();
    h = await redisHarness(PREFIX, { url: server.url, tenants: limitedTenants(), waitReady: false });
    const gw = h;
    expect(Date.now() - started).toBeLessThan(5000);
    expect(gw.services.redis?.ready()).toBe(false);

    const first = await post(gw, body({ query: "coffee" })).expect(200);
    expect(first.body.metadata).toMatchObject({ cache: "bypass", fallback: null });
    expect(first.body.memories.length).toBe(MEMORIES.length);
    await post(gw, body({ query: "coffee" })).expect(200);
    await post(gw, body({ query: "coffee" })).expect(200);
    const limited = await post(gw, body({ query: "coffee" })).expect(429);
    expect(limited.headers["retry-after"]).toMatch(/^\d+$/);
    expect(limited.headers["ratelimit-policy"]).toBe('"key";q=3;w=60');

    const degraded = await readyz(gw).expect(200);
    expect(degraded.body.status).toBe("degraded");
    expect(degraded.body.checks).toContainEqual(
      expect.objectContaining({ name: "redis", ok: false, degraded: true }),
    );

    await server.start();
    await waitFor("the gateway connects", () => gw.services.redis?.ready() === true);
    expect((await ask(gw, "coffee").expect(200)).body.metadata.cache).toBe("miss");
    expect((await ask(gw, "coffee").expect(200)).body.metadata.cache).toBe("hit");
    await waitForReadyz(gw, "ready");
  });

  test("a hung Redis (SIGSTOP): requests are still answered, in bounded time", async () => {
    await server.start();
    h = await redisHarness(PREFIX, { url: server.url });
    const gw = h;
    await ask(gw, "coffee").expect(200);
    server.pause();
    try {
      for (let i = 0; i < 4; i++) {
        const t = Date.now();
        const res = await ask(gw, "coffee").expect(200);
        expect(res.body.memories.length).toBeGreaterThan(0);
        expect(Date.now() - t).toBeLessThan(2500);
      }
      const degraded = await waitForReadyz(gw, "degraded");
      expect(degraded.status).toBe(200);
    } finally {
      server.resume();
    }
    await waitFor("redis usable again", () => gw.services.redis?.ready() === true);
    await waitFor("cache hits again", async () => (await ask(gw, "coffee")).body.metadata.cache === "hit");
  });
});
