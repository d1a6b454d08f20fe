import type { Policy } from "../../policy/schema";
import { byRecency, byScore } from "../order";
import type { StageResult, WorkItem } from "../types";

type Pick = "score" | "recency";

/** Which list position `i` draws from, per strategy (seed 000 §3; `weighted`: `ratio` score picks, then one recency pick). */
function pickFor(strategy: Policy["interleaving"]["strategy"], ratio: number, i: number): Pick {
  switch (strategy) {
    case "alternate":
      return i % 2 === 0 ? "score" : "recency";
    case "score_first":
      return "score";
    case "recency_first":
      return "recency";
    case "weighted":
      return i % (ratio + 1) === ratio ? "recency" : "score";
  }
}

/**
 * Stage 5: order the (deduplicated, ≤ topK) memories by combining relevance and recency. Each position takes the
 * next unused memory from the score-ordered or the recency-ordered list; reserve memories (`budget.fill`)
 * follow unchanged. Never drops anything.
 */
export function interleaveStage(input: WorkItem[], policy: Policy): StageResult {
  const { strategy, ratio } = policy.interleaving;
  // Reserve memories (budget.fill) are not interleaved: they follow, in the order dedup gave them.
  const reserve = input.filter((item) => item.reserve === true);
  const items = reserve.length > 0 ? input.filter((item) => item.reserve !== true) : input;
  const lists: Record<Pick, WorkItem[]> = {
    score: [...items].sort(byScore),
    recency: [...items].sort(byRecency),
  };
  const cursor: Record<Pick, number> = { score: 0, recency: 0 };
  const used = new Set<WorkItem>();
  const out: WorkItem[] = [];
  for (let i = 0; i < items.length; i++) {
    const pick = pickFor(strategy, ratio, i);
    const list = lists[pick];
    let next = list[cursor[pick]];
    while (next !== undefined && used.has(next)) next = list[++cursor[pick]];
    if (next === undefined) break;
    used.add(next);
    out.push(next);
  }
  for (const item of reserve) out.push(item);
  return {
    items: out,
    trace: {
      stage: "interleave",
      in: input.length,
      out: out.length,
      changes: [],
      detail: strategy === "weighted" ? { strategy, ratio } : { strategy },
    },
  };
}
