import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { EnvError, parseEnv } from "../../src/config/env";
import { TenantsFileError, tenantsFromText } from "../../src/tenants/file";
import { hashKey } from "../../src/tenants/keys";
import { type Harness, KEYS, makeHarness } from "../helpers/harness";
import { makeCandidate } from "../helpers/items";

const file = (rateLimit: string) => `tenants:
  - id: acme
    keys:
      - name: chat
        sha256: ${hashKey("key-one")}
        scopes: [retrieve]
${rateLimit}
      - name: other
        sha256: ${hashKey("key-two")}
        scopes: [retrieve]
    policies: { allowed: [default], default: default }
    backends:
      local: { dataFile: config/demo-memories.jsonl }
`;

describe("per-key rate limit configuration", () => {
  test("a key's rateLimit in the tenants file reaches its principal; other keys have none", () => {
    const dir = tenantsFromText(file("        rateLimit: { points: 5, durationSeconds: 10 }"), "t.yaml", {});
    expect(dir.authenticate("key-one")?.rateLimit).toEqual({ points: 5, durationSeconds: 10 });
    expect(dir.authenticate("key-two")?.rateLimit).toBeUndefined();
  });

  test.each([
    ["points: 0", "        rateLimit: { points: 0, durationSeconds: 10 }", /rateLimit\.points/],
    ["a fraction", "        rateLimit: { points: 1.5, durationSeconds: 10 }", /rateLimit\.points/],
    ["an unknown field", "        rateLimit: { points: 5, durationSeconds: 10, burst: 3 }", /burst/],
  ])("a bad rateLimit (%s) is rejected with its line", (_what, line, field) => {
    try {
      tenantsFromText(file(line), "t.yaml", {});
      throw new Error("accepted");
    } catch (err) {
      expect(err).toBeInstanceOf(TenantsFileError);
      expect((err as Error).message).toMatch(/^t\.yaml:7: /);
      expect((err as Error).message).toMatch(field);
    }
  });

  test("MEMGATE_KEY_RATE_LIMIT: default 6000/60, parsed, and a bad value names the variable", () => {
    expect(parseEnv({}).MEMGATE_KEY_RATE_LIMIT).toEqual({ points: 6000, durationSeconds: 60 });
    expect(parseEnv({ MEMGATE_KEY_RATE_LIMIT: "20/1" }).MEMGATE_KEY_RATE_LIMIT).toEqual({
      points: 20,
      durationSeconds: 1,
    });
    expect(() => parseEnv({ MEMGATE_KEY_RATE_LIMIT: "20 per minute" })).toThrow(EnvError);
    expect(() => parseEnv({ MEMGATE_KEY_RATE_LIMIT: "0/60" })).toThrow(/^MEMGATE_KEY_RATE_LIMIT: /);
    expect(parseEnv({}).MEMGATE_REDIS_PREFIX).toBe("memgate:");
    expect(() => parseEnv({ MEMGATE_REDIS_PREFIX: "has space" })).toThrow(/^MEMGATE_REDIS_PREFIX: /);
  });

  test("MEMGATE_KEY_LIMIT_SYNC_MS: default 250, 0 (exact) allowed, a bad value names the variable", () => {
    expect(parseEnv({}).MEMGATE_KEY_LIMIT_SYNC_MS).toBe(250);
    expect(parseEnv({ MEMGATE_KEY_LIMIT_SYNC_MS: "0" }).MEMGATE_KEY_LIMIT_SYNC_MS).toBe(0);
    expect(parseEnv({ MEMGATE_KEY_LIMIT_SYNC_MS: "1000" }).MEMGATE_KEY_LIMIT_SYNC_MS).toBe(1000);
    for (const bad of ["-1", "0.5", "250ms", "1e3", " 250", "60001"])
      expect(() => parseEnv({ MEMGATE_KEY_LIMIT_SYNC_MS: bad })).toThrow(
        /^MEMGATE_KEY_LIMIT_SYNC_MS: must be a whole number from 0 to 60000/,
      );
  });
});

/**
 * The default per-key limit is sized for an application (a key belongs to one, not to a person): one chat
 * application's burst, well above the old 600 per minute, goes through; the per-user limit (policy
 * `rateLimit.perUser`, 30 per minute by default) still applies to each of its users.
 */
describe("per-key rate limit: the default", () => {
  let h: Harness;
  let close: () => Promise<void>;
  afterEach(async () => {
    await close();
    await h.close();
  });

  test("a burst of 1,500 requests in well under a minute from one key is not refused; per-user limits still apply", async () => {
    h = await makeHarness(); // no MEMGATE_KEY_RATE_LIMIT, no rateLimit on the key
    const zep = h.zep.acme;
    if (zep === undefined) throw new Error("no fake Zep");
    const USERS = 75; // 20 requests each: under the default policy's 30 per user per minute
    for (let u = 0; u < USERS; u++) zep.setUser(`u-${u}`, [makeCandidate({ id: `m${u}`, score: 0.9 })]);
    const server = createServer(h.app).listen(0, "127.0.0.1");
    await new Promise<void>((resolve) => server.once("listening", () => resolve()));
    close = () => new Promise<void>((resolve) => server.close(() => resolve()));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/retrieve`;
    const retrieve = async (userId: string, query: string) => {
      const res = await fetch(url, {
        method: "POST",
        headers: { "content-type": "application/json", "x-api-key": KEYS.acmeChat },
        body: JSON.stringify({ userId, sessionId: "s-1", query, useMemory: true, policy: "fast" }),
      });
      const json = (await res.json()) as { metadata?: { fallback: { code: string } | null } };
      return {
        status: res.status,
        fallback: json.metadata?.fallback ?? null,
        policy: res.headers.get("ratelimit-policy"),
      };
    };

    const started = Date.now();
    const answers: Array<Awaited<ReturnType<typeof retrieve>>> = [];
    for (let batch = 0; batch < 75; batch++) {
      answers.push(
        ...(await Promise.all(
          Array.from({ length: 20 }, (_, i) =>
            retrieve(`u-${(batch * 20 + i) % USERS}`, `question ${batch}-${i}`),
          ),
        )),
      );
    }
    expect(Date.now() - started).toBeLessThan(60_000);
    expect(answers).toHaveLength(1500);
    expect(answers.filter((a) => a.status !== 200)).toEqual([]);
    expect(answers.filter((a) => a.fallback !== null)).toEqual([]);
    expect(answers[0]?.policy).toBe('"key";q=6000;w=60');

    // One user asking more than 30 times a minute gets the RATE_LIMITED fallback (per user), not a 429 (per key).
    const more = [];
    for (let i = 0; i < 11; i++) more.push(await retrieve("u-0", `again ${i}`));
    expect(more.map((a) => a.status)).toEqual(Array(11).fill(200));
    expect(more.slice(0, 10).every((a) => a.fallback === null)).toBe(true);
    expect(more[10]?.fallback).toMatchObject({ code: "RATE_LIMITED" });
  }, 60_000);
});
