import { createHash } from "node:crypto";
import { generateKey, hashKey, isWellFormedKey, keyIdOf } from "../../src/tenants/keys";

describe("key helpers", () => {
  test("hashKey is SHA-256 hex of the UTF-8 key", () => {
    expect(hashKey("abc")).toBe("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    expect(hashKey("clé")).toBe(createHash("sha256").update(Buffer.from("clé", "utf8")).digest("hex"));
    expect(keyIdOf(hashKey("abc"))).toBe("ba7816bf");
  });

  test("generateKey: mg_ + 32 random bytes base64url, well formed, never repeated", () => {
    const keys = new Set(Array.from({ length: 50 }, generateKey));
    expect(keys.size).toBe(50);
    for (const k of keys) {
      expect(k).toMatch(/^mg_[A-Za-z0-9_-]{43}$/);
      expect(isWellFormedKey(k)).toBe(true);
    }
  });

  test("isWellFormedKey: 1–512 visible ASCII characters", () => {
    expect(isWellFormedKey("")).toBe(false);
    expect(isWellFormedKey("a b")).toBe(false);
    expect(isWellFormedKey("a\tb")).toBe(false);
    expect(isWellFormedKey("é")).toBe(false);
    expect(isWellFormedKey("x".repeat(512))).toBe(true);
    expect(isWellFormedKey("x".repeat(513))).toBe(false);
  });
});
