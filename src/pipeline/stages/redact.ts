import type { Policy } from "../../policy/schema";
import { removeInvisible } from "../text/neutralize";
import type { StageContext, StageResult, TraceChange, WorkItem } from "../types";

/**
 * Stage 2: redaction (docs/policy.md#redaction). Runs the policy's compiled redactor (`ctx.redactor`, built once per
 * policy by `compileRedactor`) over every candidate's content, before anything is cached, logged or traced.
 * Never drops a candidate. Returns new items; the inputs are not mutated. The trace names, per candidate,
 * each detector that fired (`redacted:<detector>`), never the text it replaced.
 *
 * Detectors read the content as the prompt will show it: with invisible and control characters removed
 * (`removeInvisible`, the format stage's own first step), so a zero-width space inside a card number or a key
 * cannot split it past its detector and then vanish in the prompt. With redaction on, every memory keeps that
 * cleaned text (so no detector matches its content either, whatever invisible characters it came with).
 */
export function redactStage(items: WorkItem[], _policy: Policy, ctx: StageContext): StageResult {
  const { redactor } = ctx;
  const changes: TraceChange[] = [];
  const out = items.map((item): WorkItem => {
    if (!redactor.enabled) return { ...item };
    const cleaned = removeInvisible(item.content);
    const { text, fired } = redactor.redact(cleaned);
    if (fired.length === 0)
      return cleaned === item.content
        ? { ...item }
        : { ...item, content: cleaned, originalLength: cleaned.length };
    for (const detector of fired) changes.push({ id: item.id, reason: `redacted:${detector}` });
    return { ...item, content: text, wasRedacted: true, originalLength: text.length };
  });
  return { items: out, trace: { stage: "redaction", in: items.length, out: out.length, changes } };
}
