import { GoldenSetError } from "../eval/golden";
import {
  checkRedactionGates,
  evaluateRedaction,
  loadRedactionCorpus,
  type RedactionGates,
  redactionReportText,
} from "../eval/redaction";
import { type CliIo, EXIT_FAILURE, EXIT_INVALID, EXIT_OK } from "./io";

export interface EvalRedactionOptions {
  corpus: string;
  minRecall?: string;
  maxFp?: string;
  json?: boolean;
}

/** A bad argument: one line naming the option, exit 2. */
class UsageError extends Error {}

function gatesOf(opts: EvalRedactionOptions): RedactionGates {
  const gates: RedactionGates = {};
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

/**
 * `memgate eval-redaction [--corpus dir] [--min-recall share] [--max-fp n] [--json]`: the labelled redaction
 * corpus through every built-in detector (src/eval/redaction.ts). Exit 0, 1 when a gate is not met, 2 when the
 * corpus or an option is invalid.
 */
export async function evalRedactionCommand(opts: EvalRedactionOptions, io: CliIo): Promise<number> {
  try {
    const gates = gatesOf(opts);
    const report = evaluateRedaction(await loadRedactionCorpus(opts.corpus), opts.corpus);
    const failed = checkRedactionGates(report, gates);
    if (opts.json === true) io.out(JSON.stringify({ ...report, failedGates: failed }, null, 2));
    else io.out(redactionReportText(report));
    for (const line of failed) io.err(`eval-redaction: ${line}`);
    return failed.length > 0 ? EXIT_FAILURE : EXIT_OK;
  } catch (err) {
    if (err instanceof UsageError || err instanceof GoldenSetError) {
      io.err(`eval-redaction: ${err.message}`);
      return EXIT_INVALID;
    }
    throw err;
  }
}
