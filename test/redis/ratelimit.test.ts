import request from "supertest";
import { KEYS, makeHarness, tenantsYaml } from "../helpers/harness";
import { body, fakeZep, post, redisGatewaySuite, redisHarness } from "./gateway-helpers";
import { keysUnder, testPrefix } from "./redis-helpers";

const PREFIX = testPrefix("ratelimit");

/** The harness tenants, with acme's chat key limited to 3 requests per 60 s. */
const limitedTenants = () =>
  tenantsYaml().replace(
    "{ name: chat, sha256:",
    "{ name: chat, rateLimit: { points: 3, durationSeconds: 60 }, sha256:",
  );

describe("rate limits on Redis", () => {
  const { open, admin } = redisGatewaySuite(PREFIX);

  test("per API key: RateLimit headers on every answer, then 429 problem+json with Retry-After", async () => {
    const h = await redisHarness(PREFIX, { tenants: limitedTenants() });
    open.push(h);
    for (let i = 0; i < 3; i++) {
      const ok = await post(h, body()).expect(200);
      expect(ok.headers["ratelimit-policy"]).toBe('"key";q=3;w=60');
      expect(ok.headers.ratelimit).toMatch(new RegExp(`^"key";r=${2 - i};t=(59|60)$`));
    }
    const limited = await post(h, body())
      .expect(429)
      .expect("content-type", /application\/problem\+json/);
    expect(limited.body).toMatchObject({ status: 429, code: "RATE_LIMITED", title: "Too many requests" });
    expect(limited.body.detail).toContain("3 requests per 60 s");
    expect(typeof limited.body.requestId).toBe("string");
    const retryAfter = Number(limited.headers["retry-after"]);
    expect(retryAfter).toBeGreaterThanOrEqual(59);
    expect(retryAfter).toBeLessThanOrEqual(60);
    expect(limited.headers["ratelimit-policy"]).toBe('"key";q=3;w=60');
    expect(limited.headers.ratelimit).toMatch(/^"key";r=0;t=(59|60)$/);
    // Another key of the same tenant has its own budget (the env default).
    const other = await post(h, body(), KEYS.acmeOps).expect(200);
    expect(other.headers["ratelimit-policy"]).toBe('"key";q=6000;w=60');
    // The counters live in Redis under the prefix, with the key id hashed.
    const keys = await keysUnder(admin(), `${PREFIX}rl:key:`);
    expect(keys.length).toBe(2);
    expect(keys.join(" ")).not.toContain("acme");
  });

  test("the per-key limit counts before the scope check and applies to /v1/policies too", async () => {
    const h = await redisHarness(PREFIX, { env: { MEMGATE_KEY_RATE_LIMIT: "2/30" } });
    open.push(h);
    await request(h.app).get("/v1/policies").set("x-api-key", KEYS.acmeOps).expect(200);
    await request(h.app).get("/v1/policies").set("x-api-key", KEYS.acmeOps).expect(200);
    const res = await request(h.app).get("/v1/policies").set("x-api-key", KEYS.acmeOps).expect(429);
    expect(res.headers["ratelimit-policy"]).toBe('"key";q=2;w=30');
  });

  test("unauthenticated requests are not counted (401 comes first)", async () => {
    const h = await redisHarness(PREFIX, { env: { MEMGATE_KEY_RATE_LIMIT: "1/30" } });
    open.push(h);
    for (let i = 0; i < 3; i++) await post(h, body(), "mg_unknown_key_1234567890").expect(401);
    await post(h, body()).expect(200);
  });

  test("two gateways on one Redis enforce one per-key limit together, exactly with MEMGATE_KEY_LIMIT_SYNC_MS=0", async () => {
    const exact = { tenants: limitedTenants(), env: { MEMGATE_KEY_LIMIT_SYNC_MS: "0" } };
    const a = await redisHarness(PREFIX, exact);
    const b = await redisHarness(PREFIX, exact);
    open.push(a, b);
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) statuses.push((await post(i % 2 === 0 ? a : b, body())).status);
    expect(statuses).toEqual([200, 200, 200, 429, 429, 429]);
  });

  test("batched (the default 250 ms): what one gateway admitted counts on the other after an interval", async () => {
    const a = await redisHarness(PREFIX, { tenants: limitedTenants() });
    const b = await redisHarness(PREFIX, { tenants: limitedTenants() });
    open.push(a, b);
    for (let i = 0; i < 3; i++) await post(a, body()).expect(200);
    await new Promise((r) => setTimeout(r, 600)); // a's timer reported its 3
    const limited = await post(b, body()).expect(429);
    expect(Number(limited.headers["retry-after"])).toBeGreaterThanOrEqual(59);
    expect(limited.headers.ratelimit).toMatch(/^"key";r=0;t=(59|60)$/);
    const counters = await keysUnder(admin(), `${PREFIX}rl:key:`);
    expect(counters.length).toBe(1);
    expect(await admin().get(counters[0] ?? "")).toBe("3");
  });

  test("per user (policy rateLimit.perUser) → the RATE_LIMITED fallback, served from the Redis cache", async () => {
    const h = await redisHarness(PREFIX, {
      policies: {
        tight:
          "name: tight\nversion: 1\ntokenizer: approx\nrateLimit: { perUser: { points: 2, durationSeconds: 60 } }\n",
      },
    });
    open.push(h);
    const first = await post(h, body({ policy: "tight" })).expect(200);
    expect(first.body.metadata).toMatchObject({ cache: "miss", fallback: null });
    await post(h, body({ policy: "tight", query: "something else" })).expect(200);
    const limited = await post(h, body({ policy: "tight" })).expect(200);
    expect(limited.body.metadata.fallback).toMatchObject({ code: "RATE_LIMITED", action: "cache" });
    expect(limited.body.metadata.cache).toBe("hit");
    expect(limited.body.memories).toEqual(first.body.memories);
    // Another user of the same tenant is not limited.
    fakeZep(h).setUser("u-9", []);
    const other = await post(h, body({ policy: "tight", userId: "u-9" })).expect(200);
    expect(other.body.metadata.fallback).toBeNull();
    // The per-user counter's key does not contain the user id.
    const keys = await keysUnder(admin(), `${PREFIX}rl:user:`);
    expect(keys.length).toBe(2);
    expect(keys.join(" ")).not.toMatch(/u-123|u-9/);
  });

  test("in-process limits (no REDIS_URL) answer the same way", async () => {
    const h = await makeHarness({ tenants: limitedTenants() });
    open.push(h);
    fakeZep(h).setUser("u-123", []);
    for (let i = 0; i < 3; i++) await post(h, body()).expect(200);
    const limited = await post(h, body()).expect(429);
    expect(limited.headers["retry-after"]).toMatch(/^\d+$/);
    expect(limited.headers.ratelimit).toMatch(/^"key";r=0;t=\d+$/);
  });
});
