/** The log's batched stdout (src/logging/stdout.ts): lines in order, whole, at the end of their turn, never lost at exit. */
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { BatchedDestination, FLUSH_BYTES } from "../../src/logging/stdout";

const ROOT = join(__dirname, "../..");

function recording(): { writes: string[]; dest: BatchedDestination } {
  const writes: string[] = [];
  return { writes, dest: new BatchedDestination({ write: (text: string) => writes.push(text) }) };
}

describe("BatchedDestination", () => {
  afterEach(() => jest.useRealTimers());

  test("the lines of one turn of the event loop are one write, in order, when the turn's I/O is done", async () => {
    const { writes, dest } = recording();
    dest.write('{"n":1}\n');
    dest.write('{"n":2}\n');
    await Promise.resolve(); // microtasks of the same turn: still waiting
    dest.write('{"n":3}\n');
    expect(writes).toEqual([]);
    await new Promise((r) => setImmediate(r));
    expect(writes).toEqual(['{"n":1}\n{"n":2}\n{"n":3}\n']);
    // The next turn's lines are the next write; nothing waiting, nothing written.
    dest.write('{"n":4}\n');
    await new Promise((r) => setImmediate(r));
    await new Promise((r) => setImmediate(r));
    expect(writes).toEqual(['{"n":1}\n{"n":2}\n{"n":3}\n', '{"n":4}\n']);
  });

  test("FLUSH_BYTES waiting are written at once; flushSync writes whatever waits", () => {
    jest.useFakeTimers();
    const { writes, dest } = recording();
    const line = `${"x".repeat(999)}\n`;
    const n = Math.ceil(FLUSH_BYTES / line.length);
    for (let i = 0; i < n; i++) dest.write(line);
    expect(writes).toEqual([line.repeat(n)]);
    dest.write("last\n");
    dest.flushSync();
    expect(writes).toEqual([line.repeat(n), "last\n"]);
    expect(jest.getTimerCount()).toBe(0);
  });

  test("a process's lines reach stdout when it exits, however soon (process.exit, an uncaught error)", () => {
    for (const end of ["process.exit(0)", "throw new Error('boom')"]) {
      const code = [
        `const { createLogger } = require(${JSON.stringify(join(ROOT, "src/logging/logger.ts"))});`,
        "const log = createLogger('info');",
        "for (let i = 0; i < 3; i++) log.info({ i }, 'line');",
        end,
      ].join("\n");
      const r = spawnSync(process.execPath, ["--import", "tsx", "-e", code], {
        cwd: ROOT,
        encoding: "utf8",
        timeout: 30_000,
      });
      const lines = r.stdout
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l) as { i: number; msg: string });
      expect(lines.map((l) => [l.i, l.msg])).toEqual([
        [0, "line"],
        [1, "line"],
        [2, "line"],
      ]);
    }
  });
});
