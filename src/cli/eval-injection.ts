import {
  checkInjectionGates,
  evaluateInjection,
  injectionReportText,
  loadInjectionCases,
  loadMemoryContents,
} from "../eval/injection";
import { type DetectionGateOptions, runDetectionEval } from "./detection-eval";
import type { CliIo } from "./io";

export interface EvalInjectionOptions extends DetectionGateOptions {
  cases: string;
  /** Ordinary chat that must not be flagged; "" to skip. */
  memories: string;
}

/**
 * `memgate eval-injection [--cases file] [--memories file] [--min-recall share] [--max-fp n] [--json]`: the
 * labelled injection cases and the golden set's memories through every injection detector
 * (src/eval/injection.ts). Exit 0, 1 when a gate is not met, 2 when a file or an option is invalid.
 */
export function evalInjectionCommand(opts: EvalInjectionOptions, io: CliIo): Promise<number> {
  return runDetectionEval("eval-injection", opts, io, async (gates) => {
    const cases = await loadInjectionCases(opts.cases);
    const memories = opts.memories === "" ? [] : await loadMemoryContents(opts.memories);
    const report = evaluateInjection(cases, memories);
    return { report, text: injectionReportText(report), failed: checkInjectionGates(report, gates) };
  });
}
