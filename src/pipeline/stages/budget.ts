import {
  type BudgetRelative,
  type BudgetSections,
  type Policy,
  SECTION_TYPES,
  type SectionType,
} from "../../policy/schema";
import { refLabel, refOf } from "../citations";
import { truncateToFit } from "../text/graphemes";
import { hasContentBeyondLabel } from "../text/speaker";
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
 * `maxTokens`; undefined when not even its first word fits, or when what fits is only a speaker label and marks
 * (`Karim: ...` clipped to `Karim: .....` says nothing). (Any cut costs at least one token, its "...".)
 */
export function fitToTokens(text: string, maxTokens: number, tokenizer: Tokenizer): string | undefined {
  if (maxTokens <= 0) return undefined;
  const cut = truncateToFit(text, TRUNCATION_SUFFIX, (candidate) => tokenizer.count(candidate) <= maxTokens);
  // A cut that keeps only a speaker label and dots ("Karim: .....") spends tokens on nothing: no cut at all.
  return cut === undefined || hasContentBeyondLabel(cut) ? cut : undefined;
}

/**
 * `budget.relative`'s T: the tokens of the backend's first `topK` candidates whole, in the order it returned them —
 * what "the backend's top K, whole" would cost for this question. Reply turns a backend added (`origin: "reply"`)
 * are not counted: they are not among its own results (as `firstCandidates` counts). Each content is counted on
 * its own, as `metadata.totalTokens` counts.
 */
export function relativeTokens(
  items: readonly { content: string; origin?: "reply" }[],
  topK: number,
  tokenizer: Tokenizer,
): number {
  // `measureRelative` without its early stop (no budget is ever reached): one loop for both.
  return measureRelative(items, { topK, share: 0 }, Number.POSITIVE_INFINITY, tokenizer).tokens;
}

/**
 * `budget.relative` for a question of this complexity (0–1, query analysis): with `complexShare`, its share is
 * share + (complexShare − share) × complexity (rounded to 1e-6, so the budget never depends on the last bits of a
 * float); without, `relative` itself.
 */
export function relativeForComplexity(
  relative: BudgetRelative,
  complexity: number | undefined,
): BudgetRelative {
  if (relative.complexShare === undefined || complexity === undefined) return relative;
  const c = Math.min(1, Math.max(0, complexity));
  const share = Math.round((relative.share + (relative.complexShare - relative.share) * c) * 1e6) / 1e6;
  return { ...relative, share };
}

/** The budget of a request under `budget.relative`: min(maxTokens, max(minTokens, floor(share × T))). */
export function relativeBudget(maxTokens: number, relative: BudgetRelative, tokens: number): number {
  return Math.min(maxTokens, Math.max(relative.minTokens ?? 0, Math.floor(relative.share * tokens)));
}

/** `budget.relative` measured for one request (runPipeline, before any stage). */
export interface RelativeMeasure {
  /**
   * T: the tokens of the backend's first `topK` candidates, whole (`relativeTokens`) — or of the first `counted`
   * of them, once floor(share × T) reached `retrieval.maxTokens` (the rest could not change the budget).
   */
  tokens: number;
  /** How many candidates T counted. */
  counted: number;
  /** The share used: `share`, or with `complexShare` the one this question's complexity gave. */
  share?: number;
  /** The effective budget: min(`retrieval.maxTokens`, max(`minTokens`, floor(share × T))). */
  maxTokens: number;
}

/**
 * `budget.relative` for one request: T as `relativeTokens` counts it, but counting stops as soon as
 * floor(share × T) reaches `maxTokens` — the budget is then `maxTokens` whatever the rest would add (on long
 * memories that is after a few; each count of a ~500-character memory costs tens of µs). Same budget as counting
 * all `topK`, always.
 */
export function measureRelative(
  items: readonly { content: string; origin?: "reply" }[],
  relative: BudgetRelative,
  maxTokens: number,
  tokenizer: Tokenizer,
): RelativeMeasure {
  let tokens = 0;
  let counted = 0;
  for (const item of items) {
    if (counted >= relative.topK || Math.floor(relative.share * tokens) >= maxTokens) break;
    if (item.origin === "reply") continue;
    counted++;
    tokens += tokenizer.count(item.content);
  }
  return { tokens, counted, maxTokens: relativeBudget(maxTokens, relative, tokens), share: relative.share };
}

export interface BudgetOptions {
  /**
   * `budget.relative` measured on this request's candidates as they arrived: its effective budget replaces
   * `retrieval.maxTokens` everywhere in the stage (sections, refs, stop). Absent: `retrieval.maxTokens`.
   */
  relative?: RelativeMeasure;
  /** Refs are shown (policy `format.citations: on`, not a drop-in door): their labels' tokens count too. */
  citations?: boolean;
  /** `budget.stop`: the sufficiency certificate's completeness of the memories kept so far. */
  covered?: (kept: readonly WorkItem[]) => number;
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
 * With `budget.sections` (seed 004's allocation, seed 001's summaries first) the memories are packed section by
 * section — summaries, then facts, then messages, each in its incoming order — each section within its own share
 * of `maxTokens` plus what the sections before it left unused (`sectionAllowances`); `packing` applies within a
 * section (`truncate` stops that section only). The kept memories come out in that order, the order the prompt
 * shows them. The trace detail shows each section's share, what it had and what it used.
 *
 * With `budget.relative` (`opts.relative`, measured by the pipeline on the candidates as they arrived), the
 * budget is min(`retrieval.maxTokens`, max(`minTokens`, floor(share × T))) — T what the backend's own first `topK` candidates,
 * whole, would cost — and it replaces `maxTokens` everywhere above (sections' shares, refs, stop). The detail's
 * `maxTokens` is then that effective budget, beside `policyMaxTokens`, `relativeTopK`, `relativeShare` (with
 * `complexShare`, the share this question's complexity gave; `relativeComplexShare` beside it),
 * `relativeTokens` (T) and `relativeCounted` (the memories T counted: fewer than `topK` when the backend returned
 * fewer, or when floor(share × T) reached `maxTokens` before the last — T is then a lower bound).
 *
 * With refs (`opts.citations`), the k-th memory kept also costs the tokens of its label `[mk] `.
 *
 * `budget.stop` (with `opts.covered`, the certificate's completeness of a list of kept memories): once
 * `stop.afterTokens` are spent (over all sections), the stage stops as soon as what it kept reaches
 * `stop.completeness` — the rest are `not_needed`, and the trace says `stoppedBy: covered` with the completeness
 * reached.
 *
 * Reserve memories (`budget.fill`, after the topK ones) are only taken while fewer than `budget.maxMemories`
 * are kept (`beyond_maxMemories` otherwise).
 *
 * Differences from seed 000's `enforceTokenBudget`, on purpose: the budget counts the "..." it adds (the
 * seed's could exceed the limit by one token and counted `remaining * 4` characters, splitting surrogate
 * pairs and grapheme clusters); tokens come from the policy's tokenizer; and inputs are never mutated.
 */
export function budgetStage(
  items: WorkItem[],
  policy: Policy,
  ctx: StageContext,
  opts: BudgetOptions = {},
): StageResult & { usedTokens: number } {
  const { relative } = opts;
  const maxTokens = relative === undefined ? policy.retrieval.maxTokens : relative.maxTokens;
  const { packing, maxMemories, sections, stop } = policy.budget;
  const { covered } = opts;
  const { tokenizer } = ctx;
  const kept: WorkItem[] = [];
  const changes: TraceChange[] = [];
  // With refs, the k-th kept memory's line gains `[mk] `: its tokens are part of that memory's cost. Refs are
  // m1..mN over the N kept memories whatever order the prompt shows them in, so the sum is exact.
  let refTokens = 0;
  const refCost = opts.citations === true ? () => tokenizer.count(refLabel(refOf(kept.length))) : () => 0;

  /** `budget.stop`: the completeness at which the kept memories were found to cover the question. */
  let coveredAt: number | undefined;
  let measuredAt = -1;
  /** Tokens spent by the sections packed before the current one. */
  let spentBefore = 0;

  /** Packs `group` into `allowance` tokens (the seed-000 loop); returns the tokens it used. */
  const pack = (group: readonly WorkItem[], allowance: number): number => {
    let used = 0;
    let stopped = false;
    for (const item of group) {
      if (coveredAt !== undefined) {
        changes.push({ id: item.id, reason: "not_needed" });
        continue;
      }
      if (stopped) {
        changes.push({ id: item.id, reason: "dropped_by_budget" });
        continue;
      }
      if (
        stop !== undefined &&
        covered !== undefined &&
        spentBefore + used >= stop.afterTokens &&
        kept.length > measuredAt
      ) {
        // Measured again only when something was added since the last time.
        measuredAt = kept.length;
        const completeness = kept.length === 0 ? 0 : covered(kept);
        if (completeness >= stop.completeness) {
          coveredAt = completeness;
          changes.push({ id: item.id, reason: "not_needed" });
          continue;
        }
      }
      if (item.reserve === true && kept.length >= maxMemories) {
        changes.push({ id: item.id, reason: "beyond_maxMemories" });
        continue;
      }
      const ref = refCost();
      const tokens = tokenizer.count(item.content);
      if (used + ref + tokens <= allowance) {
        kept.push(item);
        used += ref + tokens;
        refTokens += ref;
        continue;
      }
      if (packing === "skip") {
        changes.push({ id: item.id, reason: "dropped_by_budget" });
        continue;
      }
      const truncated = fitToTokens(item.content, allowance - used - ref, tokenizer);
      if (truncated === undefined) {
        changes.push({ id: item.id, reason: "dropped_by_budget" });
      } else {
        kept.push({ ...item, content: truncated });
        used += ref + tokenizer.count(truncated);
        refTokens += ref;
        changes.push({ id: item.id, reason: "truncated_by_budget" });
      }
      stopped = true;
    }
    return used;
  };

  const detail: Record<string, string | number | boolean> = {
    maxTokens,
    usedTokens: 0,
    tokenizer: tokenizer.name,
    packing,
  };
  const rel = policy.budget.relative;
  if (relative !== undefined && rel !== undefined) {
    // `maxTokens` (and the span attribute `memgate.stage.maxTokens`) is the budget this stage enforced.
    detail.policyMaxTokens = policy.retrieval.maxTokens;
    detail.relativeTopK = rel.topK;
    detail.relativeShare = relative.share ?? rel.share;
    if (rel.complexShare !== undefined) detail.relativeComplexShare = rel.complexShare;
    if (rel.minTokens !== undefined) detail.relativeMinTokens = rel.minTokens;
    detail.relativeTokens = relative.tokens;
    detail.relativeCounted = relative.counted;
  }
  let used = 0;
  if (sections === undefined) {
    used = pack(items, maxTokens);
  } else {
    // Summaries first, then facts, then messages; each section's own share plus what the ones before left.
    const allowances = sectionAllowances(sections, maxTokens);
    let carried = 0;
    for (const type of SECTION_TYPES) {
      const available = (allowances.get(type) ?? 0) + carried;
      const spent = pack(
        items.filter((item) => item.type === type),
        available,
      );
      detail[`${type}Share`] = allowances.get(type) ?? 0;
      detail[`${type}Available`] = available;
      detail[`${type}Used`] = spent;
      carried = available - spent;
      used += spent;
      spentBefore = used;
    }
  }
  detail.usedTokens = used;
  if (opts.citations === true) detail.refTokens = refTokens;
  if (coveredAt !== undefined) {
    detail.stoppedBy = "covered";
    detail.completeness = coveredAt;
    detail.afterTokens = stop?.afterTokens ?? 0;
  }

  return {
    items: kept,
    /** The sum of `tokenizer.count(content)` over `items` (and of their refs' labels): `metadata.totalTokens`. */
    usedTokens: used,
    trace: { stage: "token_budget", in: items.length, out: kept.length, changes, detail },
  };
}

/**
 * Each section's own tokens: floor(share × maxTokens); what no share claims (1 − the shares' sum, and what the
 * rounding left) goes to the last section, messages. The allowances add up to `maxTokens` exactly.
 */
export function sectionAllowances(sections: BudgetSections, maxTokens: number): Map<SectionType, number> {
  const allowances = new Map<SectionType, number>();
  let claimed = 0;
  for (const type of SECTION_TYPES) {
    const tokens = Math.floor((sections[type] ?? 0) * maxTokens);
    allowances.set(type, tokens);
    claimed += tokens;
  }
  const last = SECTION_TYPES[SECTION_TYPES.length - 1] ?? "message";
  allowances.set(last, (allowances.get(last) ?? 0) + Math.max(0, maxTokens - claimed));
  return allowances;
}
