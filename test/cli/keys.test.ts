import { Readable } from "node:stream";
import type { CliIo } from "../../src/cli/io";
import { keysHashCommand, keysNewCommand } from "../../src/cli/keys";
import { hashKey } from "../../src/tenants/keys";

function captureIo(): CliIo & { outLines: string[]; errLines: string[] } {
  const outLines: string[] = [];
  const errLines: string[] = [];
  return { outLines, errLines, out: (l) => outLines.push(l), err: (l) => errLines.push(l) };
}

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
