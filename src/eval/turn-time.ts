import { parseTimestamp } from "../pipeline/text/time";
import type { RecordedCandidates } from "./candidates";
import type { GoldenQuestion } from "./golden";

/**
 * The time of the chat turn a golden-set question is asked in, epoch milliseconds, passed to the pipeline as
 * `turnTime` (relative phrases such as "last month" resolve against it): the question's `asOf`, else the newest
 * timestamp among its recorded candidates (all of them, not one policy's share, so every policy runs at the same
 * time). Never the host clock: the same golden set and candidates give the same figures on any day. Undefined
 * when there is neither (a failed search): the pipeline then has no turn time, as /v1/retrieve without one.
 */
export function turnTimeOf(question: GoldenQuestion, recorded: RecordedCandidates): number | undefined {
  if (question.asOf !== undefined) {
    const asOf = parseTimestamp(question.asOf);
    if (!Number.isNaN(asOf)) return asOf;
  }
  let newest: number | undefined;
  for (const c of recorded.results) {
    const t = parseTimestamp(c.timestamp);
    if (!Number.isNaN(t) && (newest === undefined || t > newest)) newest = t;
  }
  return newest;
}
