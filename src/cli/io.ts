import { type ConfigProblem, formatPath } from "../config/yaml";

/** Where CLI commands write; injected so tests drive the same entry point users do. */
export interface CliIo {
  out(line: string): void;
  err(line: string): void;
}

export const processIo: CliIo = {
  out: (line) => process.stdout.write(`${line}\n`),
  err: (line) => process.stderr.write(`${line}\n`),
};

/** Exit codes: 0 success, 1 unexpected failure (or, for `eval`, a threshold not met), 2 invalid input (policy, file, arguments). */
export const EXIT_OK = 0;
export const EXIT_FAILURE = 1;
export const EXIT_INVALID = 2;

/** A problem as the commands' `--json` reports print it. */
export interface ProblemJson {
  line: number | null;
  path: string;
  message: string;
}

export const problemJson = (p: ConfigProblem): ProblemJson => ({
  line: p.line ?? null,
  path: formatPath(p.path),
  message: p.message,
});
