/**
 * The Redis Cluster slot tag of a user (src/redis/keys.ts): the same tag as ever (`{` + 32 base64url characters of
 * SHA-256 + `}`), and hashed once per user while the user is recent, not once per key of a turn.
 */
import crypto from "node:crypto";
import { payloadCacheKey } from "../../src/cache/key";
import { slotTag, userScope } from "../../src/redis/keys";
import { reinforcementKey } from "../../src/reinforcement/redis";

const expected = (scope: string) =>
  `{${crypto.createHash("sha256").update(scope).digest("base64url").slice(0, 32)}}`;

describe("slot tags", () => {
  afterEach(() => jest.restoreAllMocks());

  test("the tag is SHA-256 of the scope, as before; two users, two tags", () => {
    expect(slotTag("acme:u-1")).toBe(expected("acme:u-1"));
    expect(slotTag("acme:u-2")).toBe(expected("acme:u-2"));
    expect(slotTag("acme:u-1")).not.toBe(slotTag("acme:u-2"));
  });

  test("one turn's keys (cache entry, rate counter, reinforcement hash) hash the user's scope once", () => {
    const scope = userScope("acme", "u-once");
    const want = expected(scope); // before the spy: the test's own hash is not counted
    const hashed: string[] = [];
    const create = crypto.createHash;
    jest.spyOn(crypto, "createHash").mockImplementation((algorithm: string) => {
      const hash = create(algorithm);
      const update = hash.update.bind(hash);
      hash.update = ((data: string) => {
        hashed.push(String(data));
        return update(data);
      }) as typeof hash.update;
      return hash;
    });
    const key = payloadCacheKey({
      tenantId: "acme",
      backend: "zep",
      userId: "u-once",
      query: "q",
      policyHash: "h",
    });
    const rate = slotTag(scope); // what the rate limiter tags the user's counter with
    const reinforce = reinforcementKey("acme", "u-once");
    expect(key).toContain(want);
    expect(rate).toBe(want);
    expect(reinforce).toContain(want);
    expect(hashed.filter((d) => d === scope)).toHaveLength(1);
  });

  test("a stream of new users keeps giving the right tags past the bound", () => {
    for (let i = 0; i < 3000; i++) expect(slotTag(`t:user-${i}`)).toBe(expected(`t:user-${i}`));
    expect(slotTag("t:user-5")).toBe(expected("t:user-5"));
  });
});
