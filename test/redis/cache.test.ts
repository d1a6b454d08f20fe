import type Redis from "ioredis";
import { payloadCacheKey } from "../../src/cache/key";
import { RedisPayloadCache } from "../../src/cache/redis";
import type { CachedPayload } from "../../src/cache/types";
import { silentLogger } from "../../src/logging/logger";
import { RedisConnection } from "../../src/redis/connection";
import {
  deleteKeys,
  freePort,
  keysUnder,
  REDIS_URL,
  requireRedis,
  testPrefix,
  waitFor,
} from "./redis-helpers";

const PREFIX = testPrefix("cache");

function payload(id: string): CachedPayload {
  return {
    memories: [
      {
        id,
        content: "Ana orders an oat milk flat white ☕ at the café.",
        score: 0.9,
        timestamp: "2026-03-01T09:00:00.000Z",
        sessionId: "s-1",
        type: "fact",
        provenance: { collection: "user:u-1", searchType: "hybrid", originalLength: 34, wasRedacted: false },
      },
    ],
    metadata: {
      queryTime: 1,
      totalResults: 1,
      includedResults: 1,
      totalTokens: 9,
      appliedFilters: ["token_budget"],
      config: { topK: 8, clipSentences: 2, maxTokens: 1500, searchType: "hybrid", minScore: 0.3 },
      policy: { name: "default", version: 1, hash: "h" },
      backend: "zep",
      cache: "miss",
      fallback: null,
    },
    systemPrompt: "## Relevant Context from Previous Conversations",
  };
}

describe("RedisPayloadCache (real Redis)", () => {
  let admin: Redis;
  let conn: RedisConnection;
  let clock = 1_000_000;
  let cache: RedisPayloadCache;

  beforeAll(async () => {
    admin = await requireRedis();
    conn = new RedisConnection({ url: REDIS_URL, prefix: PREFIX, logger: silentLogger() });
    await waitFor("the gateway's redis connection", () => conn.ready());
    cache = new RedisPayloadCache(conn, () => clock);
  });
  afterAll(async () => {
    await deleteKeys(admin, PREFIX);
    await conn.close();
    admin.disconnect();
  });

  test("an entry is fresh for ttlSeconds, then stale until ttl + stale, under the configured prefix", async () => {
    await cache.set("v1:payload:acme:a", payload("a"), 60, 3600);
    expect(await keysUnder(admin, PREFIX)).toEqual([`${PREFIX}v1:payload:acme:a`]);
    const pttl = await admin.pttl(`${PREFIX}v1:payload:acme:a`);
    expect(pttl).toBeGreaterThan(3_650_000);
    expect(pttl).toBeLessThanOrEqual(3_660_000);
    const fresh = await cache.get("v1:payload:acme:a");
    expect(fresh).toMatchObject({ fresh: true, storedAt: 1_000_000 });
    expect(fresh?.payload).toEqual(payload("a"));
    clock += 60_000;
    expect(await cache.get("v1:payload:acme:a")).toMatchObject({ fresh: false, storedAt: 1_000_000 });
    clock = 1_000_000;
  });

  test("Redis drops the entry after ttl + stale", async () => {
    await cache.set("v1:payload:acme:short", payload("s"), 0.05, 0.1);
    expect(await cache.get("v1:payload:acme:short")).toBeDefined();
    await new Promise((r) => setTimeout(r, 250));
    expect(await cache.get("v1:payload:acme:short")).toBeUndefined();
  });

  test("nothing is written when ttl + stale is 0", async () => {
    await cache.set("v1:payload:acme:none", payload("n"), 0, 0);
    expect(await admin.exists(`${PREFIX}v1:payload:acme:none`)).toBe(0);
  });

  test("the value is a header line and the payload's JSON text, stored once; only the metadata is parsed on a read", async () => {
    // Metadata no other test stores: the process parses the metadata of the same bytes once (./payload-text.ts).
    const own = { ...payload("t"), metadata: { ...payload("t").metadata, queryTime: 424242 } };
    await cache.set("v1:payload:acme:text", own, 60, 60);
    const raw = await admin.getBuffer(`${PREFIX}v1:payload:acme:text`);
    const text = JSON.stringify(own);
    const metadata = JSON.stringify(own.metadata);
    // P4: the span and the length in bytes of the UTF-8 text (the payload's text holds multi-byte characters).
    const start = Buffer.byteLength(text.slice(0, text.indexOf(metadata)));
    const end = start + Buffer.byteLength(metadata);
    expect(Buffer.byteLength(text)).toBeGreaterThan(text.length);
    expect(raw?.toString("utf8")).toBe(
      `P4 1000000 1060000 ${start} ${end} ${Buffer.byteLength(text)}\n${text}`,
    );
    const parse = jest.spyOn(JSON, "parse");
    try {
      const hit = await cache.get("v1:payload:acme:text");
      // Read as bytes: the text is not decoded until something asks for it.
      expect(hit?.text?.bytes?.toString("utf8")).toBe(text);
      expect(hit?.text?.text).toBe(text);
      expect(parse.mock.calls.map(([arg]) => arg)).toEqual([metadata]);
      expect(hit?.payload).toEqual(own);
      expect(parse).toHaveBeenCalledTimes(2);
      // Read again, the same bytes' metadata is not parsed again.
      parse.mockClear();
      const again = await cache.get("v1:payload:acme:text");
      expect(again?.text?.text).toBe(text);
      expect(parse).not.toHaveBeenCalled();
    } finally {
      parse.mockRestore();
    }
  });

  const bytes = (s: string) => Buffer.byteLength(s);
  const good = JSON.stringify(payload("x"));
  const at16 = good.indexOf('{"queryTime"');
  const to16 = good.lastIndexOf("}", good.length - 2) + 1;
  const at = bytes(good.slice(0, at16));
  const to = bytes(good.slice(0, to16));
  const stored = (text: string, start: number, end: number, length = bytes(text)) =>
    `P4 1000000 9000000000000 ${start} ${end} ${length}\n${text}`;
  /** The format before issue 29: spans and length in UTF-16 code units. */
  const storedP3 = (text: string, start: number, end: number, length = text.length) =>
    `P3 1000000 9000000000000 ${start} ${end} ${length}\n${text}`;

  test("a value written by hand in the format is read", async () => {
    await admin.set(`${PREFIX}v1:payload:acme:hand`, stored(good, at, to));
    expect((await cache.get("v1:payload:acme:hand"))?.payload).toEqual(payload("x"));
  });

  test("a value in the format before (P3, UTF-16 spans) is still read", async () => {
    await admin.set(`${PREFIX}v1:payload:acme:p3`, storedP3(good, at16, to16));
    const hit = await cache.get("v1:payload:acme:p3");
    expect(hit?.payload).toEqual(payload("x"));
    expect(hit?.text?.metadata()).toEqual(payload("x").metadata);
  });

  test.each([
    ["not JSON", "{oops"],
    ["JSON of another shape", JSON.stringify({ hello: "world" })],
    ["a payload without timestamps", JSON.stringify({ payload: payload("x") })],
    ["a bare array", "[]"],
    [
      "the format before (JSON {payload, storedAt, freshUntil})",
      JSON.stringify({ payload: payload("x"), storedAt: 1, freshUntil: 9_000_000_000_000 }),
    ],
    ["truncated", stored(good, at, to).slice(0, -10)],
    ["of another length", stored(good, at, to, good.length + 1)],
    ["a metadata span that is not an object", stored(good, at + 1, to)],
    ["a metadata span past the text", stored(good, at, good.length + 5)],
    ["another tag", stored(good, at, to).replace("P4", "P5")],
    ["UTF-16 spans under the byte format's tag", stored(good, at16, to16, good.length)],
  ])("a value that is %s is a miss, not an error", async (_what, raw) => {
    await admin.set(`${PREFIX}v1:payload:acme:bad`, raw);
    expect(await cache.get("v1:payload:acme:bad")).toBeUndefined();
  });

  test("keys hold neither the user id nor the query in clear", () => {
    const key = payloadCacheKey({
      tenantId: "acme",
      backend: "zep",
      userId: "ana@example.com",
      query: "what do I order",
      policyHash: "h",
    });
    expect(key).toMatch(/^v3:payload:acme:\{[A-Za-z0-9_-]{32}\}:[0-9a-f]{64}$/);
  });

  test("an unreachable Redis: reads miss and writes are dropped, quickly, without throwing", async () => {
    const port = await freePort();
    const down = new RedisConnection({
      url: `redis://127.0.0.1:${port}`,
      prefix: PREFIX,
      logger: silentLogger(),
    });
    const offline = new RedisPayloadCache(down);
    try {
      const started = Date.now();
      expect(offline.available()).toBe(false);
      await expect(offline.set("k", payload("k"), 60, 60)).resolves.toBe(false);
      await expect(offline.get("k")).resolves.toBeUndefined();
      expect(Date.now() - started).toBeLessThan(100);
      expect(await down.check()).toMatchObject({ name: "redis", ok: false, degraded: true });
    } finally {
      await down.close();
    }
  });
});
