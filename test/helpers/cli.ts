/**
 * `memgate <argv>` run in-process through the CLI's own entry (src/cli/main.ts), its output collected, and the
 * temporary files the CLI suites give it: what every CLI suite shares.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { main } from "../../src/cli/main";

/** A run's exit code and its output, line by line. */
export interface CliLines {
  code: number;
  out: string[];
  err: string[];
}

/** A run's exit code and its output, lines joined with "\n". */
export interface CliText {
  code: number;
  out: string;
  err: string;
}

export async function cliLines(...argv: string[]): Promise<CliLines> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await main(argv, { out: (line) => out.push(line), err: (line) => err.push(line) });
  return { code, out, err };
}

export async function cliText(...argv: string[]): Promise<CliText> {
  const { code, out, err } = await cliLines(...argv);
  return { code, out: out.join("\n"), err: err.join("\n") };
}

/** Rows as JSON Lines (one object per line, a final newline). */
export const jsonl = (rows: readonly object[]): string =>
  `${rows.map((r) => JSON.stringify(r)).join("\n")}\n`;

/**
 * A temporary directory for a suite's files, made before its tests and removed after them (`each`: one afresh for
 * every test). Call it at the top of a test file, before the hooks that write into it.
 */
export function scratchFiles(prefix: string, scope: "suite" | "each" = "suite") {
  let dir = "";
  const make = () => {
    dir = mkdtempSync(join(tmpdir(), prefix));
  };
  const remove = () => {
    if (dir !== "") rmSync(dir, { recursive: true, force: true });
  };
  if (scope === "each") {
    beforeEach(make);
    afterEach(remove);
  } else {
    beforeAll(make);
    afterAll(remove);
  }
  /** The path of `name` in the directory. */
  const path = (name: string): string => join(dir, name);
  return {
    /** The directory itself (made before the suite's, or each test's, hooks run). */
    get dir(): string {
      return dir;
    },
    path,
    /** Writes `text` to `name` (its folders made as needed) and returns its path. */
    file(name: string, text: string): string {
      const at = path(name);
      mkdirSync(dirname(at), { recursive: true });
      writeFileSync(at, text);
      return at;
    },
  };
}
