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

/**
 * Items a later stage rewrote (the injection screen's neutralized spans, the clip's joined sentences) redacted
 * again, so no enabled detector matches what leaves the pipeline: a rewrite can put text from different lines side
 * by side (`… 100-01-0001 ... Call me …`), and a detector that reads context (a phone word near a number) may then
 * see what the redaction stage, reading the whole text, rightly did not. `before` is the stage's input; only items
 * whose content changed are read again. Returns what was replaced (`redacted:<detector>`, added to that stage's
 * trace); `after` is updated in place.
 */
export function redactRewritten(
  before: readonly WorkItem[],
  after: WorkItem[],
  ctx: StageContext,
): TraceChange[] {
  const { redactor } = ctx;
  const changes: TraceChange[] = [];
  if (!redactor.enabled) return changes;
  const was = new Map<string, string>();
  for (const item of before) was.set(item.id, item.content);
  after.forEach((item, i) => {
    if (was.get(item.id) === item.content) return;
    const { text, fired } = redactor.redact(item.content);
    if (fired.length === 0) return;
    for (const detector of fired) changes.push({ id: item.id, reason: `redacted:${detector}` });
    after[i] = { ...item, content: text, wasRedacted: true };
  });
  return changes;
}
