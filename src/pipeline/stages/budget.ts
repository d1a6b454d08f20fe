import type { Policy } from "../../policy/schema";
import { truncateToFit } from "../text/graphemes";
import type { StageContext, StageResult, Tokenizer, TraceChange, WorkItem } from "../types";

/** What a memory cut by the budget ends with (seed 000). Its tokens count against the budget. */
export const TRUNCATION_SUFFIX = "...";

/** Total tokens of `contents` under `tokenizer`, each content counted on its own (`metadata.totalTokens`). */
export function countTotalTokens(contents: readonly string[], tokenizer: Tokenizer): number {
  let total = 0;
  for (const content of contents) total += tokenizer.count(content);
  return total;
}

/**
 * The longest prefix of `text` cut at a grapheme-safe word boundary that, with "..." appended, counts at most
 * `maxTokens`; undefined when not even its first word fits. (Any cut costs at least one token, its "...".)
 */
export function fitToTokens(text: string, maxTokens: number, tokenizer: Tokenizer): string | undefined {
  if (maxTokens <= 0) return undefined;
  return truncateToFit(text, TRUNCATION_SUFFIX, (candidate) => tokenizer.count(candidate) <= maxTokens);
}

/**
 * Stage 7: a strict token budget (docs/policy.md#budget): the sum of `tokenizer.count(content)` over the output never
 * exceeds `maxTokens`. Memories are taken in order while they fit whole; what happens to one that does not
 * depends on `budget.packing`:
 *
 * - `truncate` (seed 000): it is cut at a grapheme-safe word boundary and ends with "...", the longest such
 *   prefix whose count (with the "...") fits what is left; if not even its first word fits it is dropped.
 *   Nothing after it is included.
 * - `skip`: it is left out whole and the next one is tried, so a long memory never crowds out the shorter
 *   ones behind it and nothing is cut mid-sentence.
 *
 * Reserve memories (`budget.fill`, after the topK ones) are only taken while fewer than `budget.maxMemories`
 * are kept (`beyond_maxMemories` otherwise).
 *
 * `budget.stop` (with `covered`, the certificate's completeness of a list of kept memories): once
 * `stop.afterTokens` are spent, the stage stops as soon as what it kept reaches `stop.completeness` — the rest
 * are `not_needed`, and the trace says `stoppedBy: covered` with the completeness reached.
 *
 * Differences from seed 000's `enforceTokenBudget`, on purpose: the budget counts the "..." it adds (the
 * seed's could exceed the limit by one token and counted `remaining * 4` characters, splitting surrogate
 * pairs and grapheme clusters); tokens come from the policy's tokenizer; and inputs are never mutated.
 */
export function budgetStage(
  items: WorkItem[],
  policy: Policy,
  ctx: StageContext,
  covered?: (kept: readonly WorkItem[]) => number,
): StageResult & { usedTokens: number } {
  const { maxTokens } = policy.retrieval;
  const { packing, maxMemories, stop } = policy.budget;
  const { tokenizer } = ctx;
  const kept: WorkItem[] = [];
  const changes: TraceChange[] = [];
  let used = 0;
  let stopped = false;
  /** `budget.stop`: the completeness at which the kept memories were found to cover the question. */
  let coveredAt: number | undefined;
  let measuredAt = -1;

  for (const item of items) {
    if (stopped) {
      changes.push({ id: item.id, reason: coveredAt === undefined ? "dropped_by_budget" : "not_needed" });
      continue;
    }
    if (stop !== undefined && covered !== undefined && used >= stop.afterTokens && kept.length > measuredAt) {
      // Measured again only when something was added since the last time.
      measuredAt = kept.length;
      const completeness = kept.length === 0 ? 0 : covered(kept);
      if (completeness >= stop.completeness) {
        coveredAt = completeness;
        stopped = true;
        changes.push({ id: item.id, reason: "not_needed" });
        continue;
      }
    }
    if (item.reserve === true && kept.length >= maxMemories) {
      changes.push({ id: item.id, reason: "beyond_maxMemories" });
      continue;
    }
    const tokens = tokenizer.count(item.content);
    if (used + tokens <= maxTokens) {
      kept.push(item);
      used += tokens;
      continue;
    }
    if (packing === "skip") {
      changes.push({ id: item.id, reason: "dropped_by_budget" });
      continue;
    }
    const truncated = fitToTokens(item.content, maxTokens - used, tokenizer);
    if (truncated === undefined) {
      changes.push({ id: item.id, reason: "dropped_by_budget" });
    } else {
      kept.push({ ...item, content: truncated });
      used += tokenizer.count(truncated);
      changes.push({ id: item.id, reason: "truncated_by_budget" });
    }
    stopped = true;
  }

  return {
    items: kept,
    /** The sum of `tokenizer.count(content)` over `items`: `metadata.totalTokens`, not counted twice. */
    usedTokens: used,
    trace: {
      stage: "token_budget",
      in: items.length,
      out: kept.length,
      changes,
      detail: {
        maxTokens,
        usedTokens: used,
        tokenizer: tokenizer.name,
        packing,
        ...(coveredAt === undefined
          ? {}
          : { stoppedBy: "covered", completeness: coveredAt, afterTokens: stop?.afterTokens ?? 0 }),
      },
    },
  };
}
