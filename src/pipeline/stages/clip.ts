import type { Policy } from "../../policy/schema";
import { sentenceSpans } from "../text/sentences";
import type { StageContext, StageResult, TraceChange, WorkItem } from "../types";

export const CLIP_MARKER = "...";

export interface ClipResult {
  content: string;
  clipped: boolean;
}

/**
 * Keeps the first `maxSentences` sentences of `text` (see `text/sentences.ts` for the boundaries).
 * Unchanged text is returned as is. Clipped text is a verbatim slice of the input, from the first kept
 * sentence's start to the last one's end, separators included, then seed 000's `...` appended unless the kept
 * text already ends with `...` or `…` (no `......`). A slice, never a re-join: joining "415\n\n555-0132" with a
 * space would assemble a phone number the redactor (which ran on the whole text) never saw.
 * A limit below 1 is treated as 1.
 */
export function clipContent(text: string, maxSentences: number): ClipResult {
  const max = Number.isFinite(maxSentences) ? Math.max(1, Math.floor(maxSentences)) : 1;
  const spans = sentenceSpans(text, max);
  const last = spans[spans.length - 1];
  if (spans.length < max || last === undefined || text.slice(last.end).trim() === "") {
    return { content: text, clipped: false };
  }
  const first = spans[0] ?? last;
  let content = text.slice(first.start, last.end);
  if (!content.endsWith(CLIP_MARKER) && !content.endsWith("…")) content += CLIP_MARKER;
  return { content, clipped: true };
}

/**
 * Stage 6: clip every memory to `retrieval.clipSentences` sentences and record `originalLength`
 * (UTF-16 code units before clipping) on every item. Pure: returns new items, order kept.
 */
export function clipStage(items: WorkItem[], policy: Policy, _ctx?: StageContext): StageResult {
  const max = policy.retrieval.clipSentences;
  const changes: TraceChange[] = [];
  const out = items.map((item): WorkItem => {
    const { content, clipped } = clipContent(item.content, max);
    if (clipped) changes.push({ id: item.id, reason: "clipped" });
    return { ...item, content, originalLength: item.content.length };
  });
  return {
    items: out,
    trace: { stage: "clip", in: items.length, out: out.length, changes, detail: { clipSentences: max } },
  };
}
