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
 * Stage 7: a strict token budget (CONTRACT §4). Memories are taken in order while they fit whole. The first
 * that does not fit is cut at a grapheme-safe word boundary and ends with "...", the longest such prefix whose
 * count (with the "...") fits what is left; if not even its first word fits it is dropped. Nothing after it is
 * included. The sum of `tokenizer.count(content)` over the output never exceeds `maxTokens`.
 *
 * Differences from seed 000's `enforceTokenBudget`, on purpose: the budget counts the "..." it adds (the
 * seed's could exceed the limit by one token and counted `remaining * 4` characters, splitting surrogate
 * pairs and grapheme clusters); tokens come from the policy's tokenizer; and inputs are never mutated.
 */
export function budgetStage(
  items: WorkItem[],
  policy: Policy,
  ctx: StageContext,
): StageResult & { usedTokens: number } {
  const { maxTokens } = policy.retrieval;
  const { tokenizer } = ctx;
  const kept: WorkItem[] = [];
  const changes: TraceChange[] = [];
  let used = 0;
  let index = 0;

  for (; index < items.length; index++) {
    const item = items[index];
    if (item === undefined) continue;
    const tokens = tokenizer.count(item.content);
    if (used + tokens <= maxTokens) {
      kept.push(item);
      used += tokens;
      continue;
    }
    const remaining = maxTokens - used;
    // Any cut costs at least one token (its "..."), so with nothing left there is nothing to search.
    const truncated =
      remaining > 0
        ? truncateToFit(
            item.content,
            TRUNCATION_SUFFIX,
            (candidate) => tokenizer.count(candidate) <= remaining,
          )
        : undefined;
    if (truncated === undefined) {
      changes.push({ id: item.id, reason: "dropped_by_budget" });
    } else {
      kept.push({ ...item, content: truncated });
      used += tokenizer.count(truncated);
      changes.push({ id: item.id, reason: "truncated_by_budget" });
    }
    index += 1;
    break;
  }
  for (; index < items.length; index++) {
    const item = items[index];
    if (item !== undefined) changes.push({ id: item.id, reason: "dropped_by_budget" });
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
      detail: { maxTokens, usedTokens: used, tokenizer: tokenizer.name },
    },
  };
}
