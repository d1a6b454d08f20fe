import { createHash } from "node:crypto";
import { Readable } from "node:stream";
import type { CliIo } from "../../src/cli/io";
import {
  generateKey,
  hashKey,
  isWellFormedKey,
  keyIdOf,
  keysHashCommand,
  keysNewCommand,
} from "../../src/tenants/keys";

function captureIo(): CliIo & { outLines: string[]; errLines: string[] } {
  const outLines: string[] = [];
  const errLines: string[] = [];
  return { outLines, errLines, out: (l) => outLines.push(l), err: (l) => errLines.push(l) };
}

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

describe("memgate keys hash", () => {
  test("prints the hash of the argument (and warns about shell history)", async () => {
    const io = captureIo();
    expect(await keysHashCommand("mg_abc", io, Readable.from([]))).toBe(0);
    expect(io.outLines).toEqual([hashKey("mg_abc")]);
    expect(io.errLines.join("\n")).toContain("shell history");
    expect(io.errLines.join("\n")).not.toContain("mg_abc");
  });

  test("reads the key from stdin, without the trailing newline", async () => {
    const io = captureIo();
    expect(await keysHashCommand(undefined, io, Readable.from(["mg_from", "_stdin\n"]))).toBe(0);
    expect(io.outLines).toEqual([hashKey("mg_from_stdin")]);
  });

  test("an empty or multi-line key is refused with exit 2", async () => {
    for (const input of [[], ["\n"], ["a\nb\n"]]) {
      const io = captureIo();
      expect(await keysHashCommand(undefined, io, Readable.from(input))).toBe(2);
      expect(io.outLines).toEqual([]);
      expect(io.errLines.at(-1)).toMatch(/^memgate keys hash: the key must be/);
    }
  });
});

describe("memgate keys new", () => {
  test("prints a fresh key, its sha256 and its keyId", () => {
    const io = captureIo();
    expect(keysNewCommand(io)).toBe(0);
    const [keyLine, hashLine, idLine] = io.outLines;
    const key = keyLine?.replace(/^key: /, "") ?? "";
    expect(key).toMatch(/^mg_/);
    expect(hashLine).toBe(`sha256: ${hashKey(key)}`);
    expect(idLine).toBe(`keyId: ${hashKey(key).slice(0, 8)}`);
  });
});
