import type { Policy } from "../../policy/schema";
import type { StageContext, StageResult, TraceChange, WorkItem } from "../types";

/**
 * Stage 2: redaction (CONTRACT §4). Runs the policy's compiled redactor (`ctx.redactor`, built once per
 * policy by `compileRedactor`) over every candidate's content, before anything is cached, logged or traced.
 * Never drops a candidate. Returns new items; the inputs are not mutated. The trace names, per candidate,
 * each detector that fired (`redacted:<detector>`), never the text it replaced.
 */
export function redactStage(items: WorkItem[], _policy: Policy, ctx: StageContext): StageResult {
  const { redactor } = ctx;
  const changes: TraceChange[] = [];
  const out = items.map((item): WorkItem => {
    if (!redactor.enabled) return { ...item };
    const { text, fired } = redactor.redact(item.content);
    if (fired.length === 0) return { ...item };
    for (const detector of fired) changes.push({ id: item.id, reason: `redacted:${detector}` });
    return { ...item, content: text, wasRedacted: true, originalLength: text.length };
  });
  return { items: out, trace: { stage: "redaction", in: items.length, out: out.length, changes } };
}
