import type { AnswerSlot } from "./answer-slot";
import type { QueryAnalysis } from "./query/analyze";
import { answerFit } from "./query/analyze";
import { RequestIndex } from "./text/request-index";
import { SPEAKER_LABEL } from "./text/speaker";
import type { WorkItem } from "./types";

/**
 * The sufficiency certificate (seed 004 "Sufficiency checking"): does what the pipeline kept cover the question?
 * Computed on the final, clipped contents — what the chat will actually read.
 *
 * - completeness (0–1): how much of the question's weight the kept text covers, from three parts: the IDF-weighted
 *   share of the query's terms found in some kept memory (union), the same share in the single best memory (so
 *   "Maya" in one memory and "marathon" in another does not prove that Maya ran a marathon), and whether any
 *   kept sentence holds the kind of answer asked for (a time, number, name, place or reason; a "when" question is
 *   always answerable from the memories' dates). Multi-hop questions weigh the union more, single-fact ones the best
 *   memory more.
 * - redundancy (0–1): the mean, over kept memories, of their highest term-set similarity to another kept memory.
 * - missing: the query's names and terms (as scored: stemmed, cut) no kept memory holds.
 * - verdict: `sufficient` at or above the policy's threshold, `partial` at or above `insufficientBelow` (default
 *   60 % of the threshold), else `insufficient` (and always `insufficient` with nothing kept); with the policy's
 *   `answerSlot`, also `insufficient` when the question's answer slot is not filled (`withAnswerSlot`).
 */
export interface Sufficiency {
  completeness: number;
  redundancy: number;
  missing: string[];
  verdict: "sufficient" | "partial" | "insufficient";
  /** With policy `sufficiency.answerSlot`, when the question was checked and decided (./answer-slot.ts). */
  answerSlot?: AnswerSlot;
}

/**
 * The certificate with the answer slot's finding: an unfilled slot makes it `insufficient` (the memories talk about
 * what the question is about, but nothing there answers it); a filled or undecided one leaves the verdict alone.
 */
export function withAnswerSlot(certificate: Sufficiency, slot: AnswerSlot | undefined): Sufficiency {
  if (slot === undefined) return certificate;
  return { ...certificate, ...(slot.filled ? {} : { verdict: "insufficient" as const }), answerSlot: slot };
}

const round3 = (x: number) => Math.round(x * 1000) / 1000;

export function certify(
  kept: readonly WorkItem[],
  analysis: QueryAnalysis,
  threshold: number,
  similarity: (a: string, b: string) => number,
  idfOf?: readonly number[],
  insufficientBelow?: number,
  /** The request's shared text index (runPipeline's); called alone, one of its own. */
  index: RequestIndex = new RequestIndex(""),
): Sufficiency {
  const terms = analysis.terms;
  if (kept.length === 0) {
    return {
      completeness: 0,
      redundancy: 0,
      missing: [...analysis.entities, ...terms].slice(0, 16),
      verdict: "insufficient",
    };
  }
  // The query terms each kept memory holds, its whole text read as one document.
  const matched = kept.map((item) => index.termsIn(item.content, terms, analysis.language));
  const idf = terms.map((_, k) => idfOf?.[k] ?? 1);
  const total = idf.reduce((a, b) => a + b, 0) || 1;
  // The union of what they hold, in the order first met (its IDF is summed in that order).
  const inUnion = new Uint8Array(terms.length);
  const union: number[] = [];
  let best = 0;
  for (const list of matched) {
    let own = 0;
    for (const k of list) {
      if (inUnion[k] === 0) {
        inUnion[k] = 1;
        union.push(k);
      }
      own += idf[k] ?? 0;
    }
    if (own > best) best = own;
  }
  let covered = 0;
  for (const k of union) covered += idf[k] ?? 0;
  const unionShare = terms.length === 0 ? 1 : covered / total;
  const bestShare = terms.length === 0 ? 1 : best / total;
  const names = analysis.entities.filter((e) => !/^\d/.test(e));
  const missingNames = names.filter((e) => {
    const name = e.toLowerCase();
    return !kept.some((item) => includesLowerCased(item.content, name));
  });
  const nameShare = names.length === 0 ? 1 : 1 - missingNames.length / names.length;
  const type = analysis.answerType;
  // The kind of answer asked for must stand in a memory that is about the question: the best, over kept
  // memories, of its share of the query's weight × whether it holds such an answer (a date is always shown).
  let answerPresent = 1;
  if (type !== "time" && type !== "thing" && type !== "list" && type !== "yesno") {
    answerPresent = 0;
    for (let i = 0; i < kept.length; i++) {
      let own = 0;
      for (const k of matched[i] ?? []) own += idf[k] ?? 0;
      const fit = answerFit(type, (kept[i] as WorkItem).content.replace(SPEAKER_LABEL, ""));
      // A memory holding half the query's weight or more is about the question.
      answerPresent = Math.max(
        answerPresent,
        (terms.length === 0 ? 1 : Math.min(1, (2 * own) / total)) * fit,
      );
    }
  }
  const [wu, wb] = analysis.multiHop ? [0.5, 0.2] : [0.25, 0.45];
  const completeness = round3(
    (wu * unionShare + wb * bestShare) * (0.7 + 0.3 * nameShare) + 0.3 * answerPresent * nameShare,
  );
  let redundancy = 0;
  if (kept.length > 1) {
    let sum = 0;
    for (const a of kept) {
      let max = 0;
      for (const b of kept) if (a !== b) max = Math.max(max, similarity(a.id, b.id));
      sum += max;
    }
    redundancy = round3(sum / kept.length);
  }
  const missing = [...missingNames, ...terms.filter((_, k) => inUnion[k] === 0)].slice(0, 16);
  const floor = insufficientBelow ?? 0.6 * threshold;
  const verdict =
    completeness >= threshold ? "sufficient" : completeness >= floor ? "partial" : "insufficient";
  return { completeness, redundancy, missing, verdict };
}

/**
 * `text.toLowerCase().includes(lowerNeedle)`: plain ASCII text is compared as it stands (A–Z folded while
 * comparing), not lower-cased into a copy of every kept memory.
 */
function includesLowerCased(text: string, lowerNeedle: string): boolean {
  for (let i = 0; i < text.length; i++)
    if (text.charCodeAt(i) >= 128) return text.toLowerCase().includes(lowerNeedle);
  const m = lowerNeedle.length;
  outer: for (let i = 0; i + m <= text.length; i++) {
    for (let k = 0; k < m; k++) {
      const c = text.charCodeAt(i + k);
      if ((c >= 65 && c <= 90 ? c | 32 : c) !== lowerNeedle.charCodeAt(k)) continue outer;
    }
    return true;
  }
  return false;
}
