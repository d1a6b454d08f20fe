/**
 * `memgate <argv>` run in-process through the CLI's own entry (src/cli/main.ts), its output collected: the runner
 * every CLI suite shares.
 */
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
