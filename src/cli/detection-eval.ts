import { GoldenSetError } from "../eval/golden";
import { type CliIo, EXIT_FAILURE, EXIT_INVALID, EXIT_OK } from "./io";

/** The gates of a detector evaluation (`eval-redaction`, `eval-injection`). */
export interface DetectionGates {
  /** Every detector's recall (and the overall one) at least this (0–1). */
  minRecall?: number;
  /** At most this many false positives in all. */
  maxFalsePositives?: number;
}

export interface DetectionGateOptions {
  minRecall?: string;
  maxFp?: string;
  json?: boolean;
}

/** A bad argument: one line naming the option, exit 2. */
class UsageError extends Error {}

function gatesOf(opts: DetectionGateOptions): DetectionGates {
  const gates: DetectionGates = {};
  if (opts.minRecall !== undefined) {
    const v = opts.minRecall;
    const n = Number(v.endsWith("%") ? Number(v.slice(0, -1)) / 100 : v);
    if (v.trim() === "" || !Number.isFinite(n) || n < 0 || n > 1) {
      throw new UsageError(
        `--min-recall: must be a share from 0 to 1 (or 0% to 100%) (got ${JSON.stringify(v)})`,
      );
    }
    gates.minRecall = n;
  }
  if (opts.maxFp !== undefined) {
    const n = Number(opts.maxFp);
    if (opts.maxFp.trim() === "" || !Number.isInteger(n) || n < 0) {
      throw new UsageError(`--max-fp: must be an integer from 0 (got ${JSON.stringify(opts.maxFp)})`);
    }
    gates.maxFalsePositives = n;
  }
  return gates;
}

/** One evaluation's report, as text or JSON, and the gates it did not meet. */
export interface DetectionRun<R> {
  report: R;
  text: string;
  failed: string[];
}

/**
 * Runs a detector evaluation as a CLI command: the gates parsed from `--min-recall` / `--max-fp`, the report
 * printed (text, or JSON with `failedGates`), one line per gate not met. Exit 0, 1 when a gate is not met, 2 when
 * an input file or an option is invalid.
 */
export async function runDetectionEval<R extends object>(
  command: string,
  opts: DetectionGateOptions,
  io: CliIo,
  evaluate: (gates: DetectionGates) => Promise<DetectionRun<R>>,
): Promise<number> {
  try {
    const { report, text, failed } = await evaluate(gatesOf(opts));
    if (opts.json === true) io.out(JSON.stringify({ ...report, failedGates: failed }, null, 2));
    else io.out(text);
    for (const line of failed) io.err(`${command}: ${line}`);
    return failed.length > 0 ? EXIT_FAILURE : EXIT_OK;
  } catch (err) {
    if (err instanceof UsageError || err instanceof GoldenSetError) {
      io.err(`${command}: ${err.message}`);
      return EXIT_INVALID;
    }
    throw err;
  }
}
