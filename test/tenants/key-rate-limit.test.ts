import { EnvError, parseEnv } from "../../src/config/env";
import { TenantsFileError, tenantsFromText } from "../../src/tenants/file";
import { hashKey } from "../../src/tenants/keys";

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

  test("MEMGATE_KEY_RATE_LIMIT: default 600/60, parsed, and a bad value names the variable", () => {
    expect(parseEnv({}).MEMGATE_KEY_RATE_LIMIT).toEqual({ points: 600, durationSeconds: 60 });
    expect(parseEnv({ MEMGATE_KEY_RATE_LIMIT: "20/1" }).MEMGATE_KEY_RATE_LIMIT).toEqual({
      points: 20,
      durationSeconds: 1,
    });
    expect(() => parseEnv({ MEMGATE_KEY_RATE_LIMIT: "20 per minute" })).toThrow(EnvError);
    expect(() => parseEnv({ MEMGATE_KEY_RATE_LIMIT: "0/60" })).toThrow(/^MEMGATE_KEY_RATE_LIMIT: /);
    expect(parseEnv({}).MEMGATE_REDIS_PREFIX).toBe("memgate:");
    expect(() => parseEnv({ MEMGATE_REDIS_PREFIX: "has space" })).toThrow(/^MEMGATE_REDIS_PREFIX: /);
  });
});
