import { GoldenSetError } from "../eval/golden";
import {
  checkInjectionGates,
  evaluateInjection,
  type InjectionGates,
  injectionReportText,
  loadInjectionCases,
  loadMemoryContents,
} from "../eval/injection";
import { type CliIo, EXIT_FAILURE, EXIT_INVALID, EXIT_OK } from "./io";

export interface EvalInjectionOptions {
  cases: string;
  /** Ordinary chat that must not be flagged; "" to skip. */
  memories: string;
  minRecall?: string;
  maxFp?: string;
  json?: boolean;
}

/** A bad argument: one line naming the option, exit 2. */
class UsageError extends Error {}

function gatesOf(opts: EvalInjectionOptions): InjectionGates {
  const gates: InjectionGates = {};
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
 * `memgate eval-injection [--cases file] [--memories file] [--min-recall share] [--max-fp n] [--json]`: the
 * labelled injection cases and the golden set's memories through every injection detector
 * (src/eval/injection.ts). Exit 0, 1 when a gate is not met, 2 when a file or an option is invalid.
 */
export async function evalInjectionCommand(opts: EvalInjectionOptions, io: CliIo): Promise<number> {
  try {
    const gates = gatesOf(opts);
    const cases = await loadInjectionCases(opts.cases);
    const memories = opts.memories === "" ? [] : await loadMemoryContents(opts.memories);
    const report = evaluateInjection(cases, memories);
    const failed = checkInjectionGates(report, gates);
    if (opts.json === true) io.out(JSON.stringify({ ...report, failedGates: failed }, null, 2));
    else io.out(injectionReportText(report));
    for (const line of failed) io.err(`eval-injection: ${line}`);
    return failed.length > 0 ? EXIT_FAILURE : EXIT_OK;
  } catch (err) {
    if (err instanceof UsageError || err instanceof GoldenSetError) {
      io.err(`eval-injection: ${err.message}`);
      return EXIT_INVALID;
    }
    throw err;
  }
}
