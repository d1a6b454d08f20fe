import type { AnswerSlot } from "./answer-slot";
import type { QueryAnalysis } from "./query/analyze";
import { answerFit } from "./query/analyze";
import { holdsFolded, holdsLowerCaseToAscii, isAscii } from "./text/ascii";
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
/** An entity that starts with a digit is no name. */
const DIGIT_FIRST = /^\d/;

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
  // Everything below works in buffers shared by every call (certify is synchronous and never re-entered; the
  // budget's `stop` calls it for every memory it adds): per query term its IDF and whether a kept memory holds
  // it, the union's terms in the order first met, and per kept memory the IDF it holds.
  const q = terms.length;
  const n = kept.length;
  if (IDF.length < q) {
    IDF = new Float64Array(Math.max(q, 2 * IDF.length));
    IN_UNION = new Uint8Array(IDF.length);
    UNION = new Int32Array(IDF.length);
  }
  if (OWN.length < n) OWN = new Float64Array(Math.max(n, 2 * OWN.length));
  const idf = IDF;
  const inUnion = IN_UNION;
  const union = UNION;
  const ownIdf = OWN;
  let total = 0;
  for (let k = 0; k < q; k++) {
    idf[k] = idfOf?.[k] ?? 1;
    total += idf[k] as number;
    inUnion[k] = 0;
  }
  total ||= 1;
  // The query terms each kept memory holds (its whole text read as one document) make up the union, in the
  // order first met (its IDF is summed in that order).
  let unionSize = 0;
  let best = 0;
  for (let i = 0; i < n; i++) {
    const list = index.termsIn((kept[i] as WorkItem).content, terms, analysis.language);
    let own = 0;
    for (let x = 0; x < list.length; x++) {
      const k = list[x] as number;
      if (inUnion[k] === 0) {
        inUnion[k] = 1;
        union[unionSize++] = k;
      }
      own += idf[k] ?? 0;
    }
    ownIdf[i] = own;
    if (own > best) best = own;
  }
  let covered = 0;
  for (let x = 0; x < unionSize; x++) covered += idf[union[x] as number] ?? 0;
  const unionShare = q === 0 ? 1 : covered / total;
  const bestShare = q === 0 ? 1 : best / total;
  // The names asked about (entities not starting with a digit) no kept memory holds.
  let names = 0;
  const missing: string[] = [];
  for (let x = 0; x < analysis.entities.length; x++) {
    const e = analysis.entities[x] as string;
    if (DIGIT_FIRST.test(e)) continue;
    names++;
    const name = e.toLowerCase();
    let held = false;
    for (let i = 0; i < n && !held; i++) held = includesLowerCased((kept[i] as WorkItem).content, name);
    if (!held) missing.push(e);
  }
  const nameShare = names === 0 ? 1 : 1 - missing.length / names;
  const type = analysis.answerType;
  // The kind of answer asked for must stand in a memory that is about the question: the best, over kept
  // memories, of its share of the query's weight × whether it holds such an answer (a date is always shown).
  let answerPresent = 1;
  if (type !== "time" && type !== "thing" && type !== "list" && type !== "yesno") {
    answerPresent = 0;
    for (let i = 0; i < n; i++) {
      const own = ownIdf[i] as number;
      const fit = answerFit(type, (kept[i] as WorkItem).content.replace(SPEAKER_LABEL, ""));
      // A memory holding half the query's weight or more is about the question.
      answerPresent = Math.max(answerPresent, (q === 0 ? 1 : Math.min(1, (2 * own) / total)) * fit);
    }
  }
  const wu = analysis.multiHop ? 0.5 : 0.25;
  const wb = analysis.multiHop ? 0.2 : 0.45;
  const completeness = round3(
    (wu * unionShare + wb * bestShare) * (0.7 + 0.3 * nameShare) + 0.3 * answerPresent * nameShare,
  );
  let redundancy = 0;
  if (n > 1) {
    let sum = 0;
    for (let i = 0; i < n; i++) {
      const a = kept[i] as WorkItem;
      let max = 0;
      for (let j = 0; j < n; j++) {
        const b = kept[j] as WorkItem;
        if (a !== b) max = Math.max(max, similarity(a.id, b.id));
      }
      sum += max;
    }
    redundancy = round3(sum / n);
  }
  // Then the query terms no kept memory holds, at most 16 in all.
  for (let k = 0; k < q && missing.length < 16; k++) if (inUnion[k] === 0) missing.push(terms[k] as string);
  if (missing.length > 16) missing.length = 16;
  const floor = insufficientBelow ?? 0.6 * threshold;
  const verdict =
    completeness >= threshold ? "sufficient" : completeness >= floor ? "partial" : "insufficient";
  return { completeness, redundancy, missing, verdict };
}

/** `certify`'s buffers: per query term (`IDF`, `IN_UNION`, `UNION`), per kept memory (`OWN`). */
let IDF = new Float64Array(16);
let IN_UNION = new Uint8Array(16);
let UNION = new Int32Array(16);
let OWN = new Float64Array(16);

/**
 * `text.toLowerCase().includes(lowerNeedle)`, lower-casing a copy of the memory only when it may matter: plain
 * ASCII text, or a plain ASCII name, is compared as it stands (A–Z folded while comparing; outside ASCII only
 * `LOWER_CASE_TO_ASCII` lower-cases to ASCII, so without one of those the folded comparison is the answer).
 */
function includesLowerCased(text: string, lowerNeedle: string): boolean {
  if (isAscii(text)) return holdsFolded(text, lowerNeedle);
  if (lowerNeedle.length > 0 && isAscii(lowerNeedle) && !holdsLowerCaseToAscii(text))
    return holdsFolded(text, lowerNeedle);
  return text.toLowerCase().includes(lowerNeedle);
}
