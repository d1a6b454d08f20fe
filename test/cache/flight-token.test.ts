/** Single-flight lock tokens (src/cache/lock-redis.ts): 16 random bytes in base64url, never one twice. */
import { newFlightToken } from "../../src/cache/lock-redis";

describe("newFlightToken", () => {
  it("makes 16-byte base64url tokens, all different, across many refills of its pool", () => {
    const seen = new Set<string>();
    for (let i = 0; i < 5000; i++) {
      const token = newFlightToken();
      expect(token).toMatch(/^[A-Za-z0-9_-]{22}$/);
      expect(Buffer.from(token, "base64url")).toHaveLength(16);
      seen.add(token);
    }
    expect(seen.size).toBe(5000);
  });
});
