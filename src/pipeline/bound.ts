/**
 * The per-memory work bound (docs/policy.md#the-work-bound; issue 26, finding 3). Every stage is at least linear
 * in a memory's length (redaction, the injection screen, hashing for dedup, sentence splitting, relevance
 * scoring, token counting) and the grapheme-safe cut of the budget is worse than linear on a long word; all of
 * it runs synchronously, after the backend's deadline stopped counting. One 7 MB memory (one long word) from an
 * upstream stalled the process for seconds. So before any stage, each memory is cut to a prefix the budget
 * could never use up: `retrieval.maxTokens` × 16 characters (prose takes about 4 characters a token, so the
 * budget stops long before the cut; 1,500 tokens → 24,000 characters, at most 48,000), and the work per memory
 * is linear in that prefix, whatever arrives.
 *
 * The cut falls at the last whitespace within 256 characters before the bound (else at the last grapheme
 * boundary before it), trailing whitespace removed, and "..." appended — as the clip and budget stages mark
 * theirs. What lies beyond is never seen by any stage: relevant clipping picks sentences from the prefix, dedup
 * compares prefixes, redaction screens the prefix (the budget cannot reach the cut, so no secret cut in two is
 * ever shown). `provenance.originalLength` stays the length of the memory as it arrived.
 */
import type { WorkItem } from "./types";

/** Characters kept per token of `retrieval.maxTokens`: 4× what prose takes. */
export const CHARS_PER_TOKEN_BOUND = 16;
/** What a memory cut by the bound ends with. */
export const WORK_BOUND_MARKER = "...";
/** How far back from the bound the cut looks for whitespace, so that a word is not split when avoidable. */
const WORD_LOOKBACK = 256;
/** Code units on each side of a hard cut handed to the grapheme segmenter (a cluster longer than this is split). */
const GRAPHEME_WINDOW = 64;

const graphemeSegmenter = new Intl.Segmenter("en", { granularity: "grapheme" });
const WHITESPACE = /\s/u;

/** The longest a memory's content may be when the stages see it, for a budget of `maxTokens`. */
export function workBoundChars(maxTokens: number): number {
  return Math.max(1, Math.floor(maxTokens)) * CHARS_PER_TOKEN_BOUND;
}

/** The last grapheme boundary at or before `end` (looking at a small window only), > 0 when there is one. */
function graphemeCutAtOrBefore(text: string, end: number): number {
  const from = Math.max(0, end - GRAPHEME_WINDOW);
  const view = text.slice(from, end + GRAPHEME_WINDOW);
  const segment = graphemeSegmenter.segment(view).containing(end - from);
  const start = segment === undefined ? end : from + segment.index;
  return start > 0 ? start : end;
}

/**
 * `text` when it has at most `limit` code units; else its prefix cut as described at the top of this file, with
 * "..." appended (at most `limit` + 3 code units). Costs O(`limit`) at most, whatever the length of `text`.
 */
export function boundText(text: string, limit: number): string {
  if (text.length <= limit) return text;
  let cut = 0;
  for (let i = limit; i > 0 && i > limit - WORD_LOOKBACK; i--) {
    if (WHITESPACE.test(text[i] ?? "")) {
      cut = text.slice(0, i).trimEnd().length;
      break;
    }
  }
  if (cut === 0) cut = graphemeCutAtOrBefore(text, limit);
  const kept = text.slice(0, cut);
  return kept.endsWith(WORK_BOUND_MARKER) || kept.endsWith("…") ? kept : kept + WORK_BOUND_MARKER;
}

/** A work item (fresh from `toWorkItem`) with its content bounded; `arrivedLength` keeps the length it came with. */
export function boundWork(item: WorkItem, limit: number): WorkItem {
  if (item.content.length <= limit) return item;
  item.arrivedLength = item.content.length;
  item.content = boundText(item.content, limit);
  return item;
}
