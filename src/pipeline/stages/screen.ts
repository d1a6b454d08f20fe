import type { Policy } from "../../policy/schema";
import type { StageContext, StageResult, TraceChange, WorkItem } from "../types";

/**
 * Stage 2b: injection screening (policy `injection`, run right after redaction when enabled). Recalled memories
 * are data, not instructions: each is screened by the policy's compiled screener (`ctx.screener`, see
 * src/pipeline/screen) and, per detector that fired, its action applies:
 *
 * - `flag`: the memory is kept and carries `flags: ["injection:<detector>"]` in the response;
 * - `neutralize`: what matched is replaced by "[instruction removed]", and the memory is flagged the same way;
 * - `drop`: the memory is left out.
 *
 * The trace has one change per memory and detector, `injection:<detector>:<action>`, and counts per action
 * (`flagged`, `neutralized`, `dropped`: memories); never the matched text. Inputs are not mutated.
 */
export function screenStage(items: WorkItem[], _policy: Policy, ctx: StageContext): StageResult {
  const { screener } = ctx;
  const changes: TraceChange[] = [];
  const kept: WorkItem[] = [];
  let flagged = 0;
  let neutralized = 0;
  let dropped = 0;
  for (const item of items) {
    if (screener === undefined || !screener.enabled) {
      kept.push(item);
      continue;
    }
    const { hits, text, drop } = screener.screen(item.content);
    if (hits.length === 0) {
      kept.push(item);
      continue;
    }
    for (const hit of hits) changes.push({ id: item.id, reason: `injection:${hit.detector}:${hit.action}` });
    if (drop) {
      dropped++;
      continue;
    }
    const flags = [...(item.flags ?? []), ...hits.map((h) => `injection:${h.detector}`)];
    if (hits.some((h) => h.action === "flag")) flagged++;
    if (text === item.content) {
      kept.push({ ...item, flags });
      continue;
    }
    neutralized++;
    kept.push({ ...item, content: text, originalLength: text.length, flags });
  }
  return {
    items: kept,
    trace: {
      stage: "injection",
      in: items.length,
      out: kept.length,
      changes,
      detail: { flagged, neutralized, dropped },
    },
  };
}
