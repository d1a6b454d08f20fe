/**
 * Checks of text a pipeline stage rewrote and runPipeline redacted again (src/pipeline/stages/redact.ts
 * redactRewritten), shared by the clip and the injection screen cases: a phone word and a number that were on
 * different lines stand on one line after the rewrite.
 */
import type { PipelineResult } from "../../src/pipeline";
import type { Redactor, StageName } from "../../src/pipeline/types";
import { compilePolicy } from "../../src/policy/compile";
import { makePolicy } from "./items";

/** The phone detector alone. */
export function phoneRedactor(): Redactor {
  return compilePolicy(makePolicy({ redaction: { enabled: true, detectors: ["phone"] } })).ctx.redactor;
}

/**
 * `joined` is what `stage` made of the only memory (the phone detector fires on it); `result` must hold it redacted,
 * marked so, with `reasons` in that stage's trace, and a system prompt the detector finds nothing in.
 */
export function expectRedactedAgain(
  result: PipelineResult,
  stage: StageName,
  reasons: string[],
  joined: string,
): void {
  const phone = phoneRedactor();
  expect(phone.redact(joined).fired).toEqual(["phone"]);
  expect(result.memories[0]?.content).toBe(phone.redact(joined).text);
  expect(result.memories[0]?.provenance.wasRedacted).toBe(true);
  expect(result.trace.find((t) => t.stage === stage)?.changes.map((c) => c.reason)).toEqual(reasons);
  expect(phone.redact(result.systemPrompt).fired).toEqual([]);
}
