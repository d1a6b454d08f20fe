import type { Policy } from "../../policy/schema";
import type { StageResult, TraceChange, WorkItem } from "../types";

/** Stage 3: drop every candidate with `score < minScore`. Order is kept. */
export function thresholdStage(items: WorkItem[], policy: Policy): StageResult {
  const { minScore } = policy.retrieval;
  const kept: WorkItem[] = [];
  const changes: TraceChange[] = [];
  for (const item of items) {
    if (item.score < minScore) changes.push({ id: item.id, reason: "below_min_score" });
    else kept.push(item);
  }
  return {
    items: kept,
    trace: { stage: "score_threshold", in: items.length, out: kept.length, changes, detail: { minScore } },
  };
}
