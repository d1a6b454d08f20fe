import {
  checkRedactionGates,
  evaluateRedaction,
  loadRedactionCorpus,
  redactionReportText,
} from "../eval/redaction";
import { type DetectionGateOptions, runDetectionEval } from "./detection-eval";
import type { CliIo } from "./io";

export interface EvalRedactionOptions extends DetectionGateOptions {
  corpus: string;
}

/**
 * `memgate eval-redaction [--corpus dir] [--min-recall share] [--max-fp n] [--json]`: the labelled redaction
 * corpus through every built-in detector (src/eval/redaction.ts). Exit 0, 1 when a gate is not met, 2 when the
 * corpus or an option is invalid.
 */
export function evalRedactionCommand(opts: EvalRedactionOptions, io: CliIo): Promise<number> {
  return runDetectionEval("eval-redaction", opts, io, async (gates) => {
    const report = evaluateRedaction(await loadRedactionCorpus(opts.corpus), opts.corpus);
    return { report, text: redactionReportText(report), failed: checkRedactionGates(report, gates) };
  });
}
