import type { Policy } from "../../policy/schema";
import type { AnswerType } from "../query/analyze";
import type { SentenceScore } from "../text/relevance";
import { RequestIndex } from "../text/request-index";
import { type SentenceSpan, sentenceSpans } from "../text/sentences";
import { SPEAKER_LABEL } from "../text/speaker";
import { holdsNewSpecific, questionKeys } from "../text/specifics";
import type { KeptSentence, StageContext, StageResult, Tokenizer, TraceChange, WorkItem } from "../types";

export const CLIP_MARKER = "...";
/** Between two kept sentences of `relevant` mode that were not next to each other, and where its ends were cut. */
export const OMISSION = " ... ";
/** `OMISSION` before the first kept sentence and after the last, trimmed once here rather than per memory. */
const LEADING_OMISSION = OMISSION.trimStart();
const TRAILING_OMISSION = OMISSION.trimEnd();

export interface ClipResult {
  content: string;
  clipped: boolean;
}

function limitOf(maxSentences: number): number {
  return Number.isFinite(maxSentences) ? Math.max(1, Math.floor(maxSentences)) : 1;
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
  const max = limitOf(maxSentences);
  const spans = sentenceSpans(text, max);
  const last = spans[spans.length - 1];
  if (spans.length < max || last === undefined || text.slice(last.end).trim() === "") {
    return { content: text, clipped: false };
  }
  const first = spans[0] ?? last;
  let content = text.slice(first.start, last.end);
  if (!endsWithEllipsis(content)) content += CLIP_MARKER;
  return { content, clipped: true };
}

function endsWithEllipsis(text: string): boolean {
  return text.endsWith(CLIP_MARKER) || text.endsWith("…");
}

/**
 * How much of a sentence's score the sentence right after it inherits. An answer often follows the sentence
 * that names its topic ("I talked to the adviser at the bank. She is called Frau Demir."), and shares no word
 * with the question. Chosen on the golden set (`npm run eval`): 0.5 kept the answer in 98.4 % of the first 318 questions
 * with 3 sentences per memory against 97.2 % without (0.3: 97.8 %, 0.8: 98.1 %).
 */
export const CARRY = 0.5;

/** `clip.answerAware`: a sentence that holds the kind of answer asked for weighs this much more (× 1 + boost). */
export const ANSWER_BOOST = 0.6;

/** A sentence's own score plus `CARRY` × the score of the sentence before it, rounded like the scores. */
export function effectiveScores(scores: readonly SentenceScore[], boost?: readonly number[]): number[] {
  return scores.map(
    (s, i) =>
      Math.round((s.score + CARRY * (scores[i - 1]?.score ?? 0)) * (1 + (boost?.[i] ?? 0)) * 1e6) / 1e6,
  );
}

/**
 * Which `max` sentences `relevant` mode keeps, given each sentence's score: the best by effective score (its
 * own BM25 score plus half the previous sentence's, see `CARRY`; ties: the earlier sentence). A kept sentence
 * that matches the query itself is a `match`, one kept for what precedes it is `context`. When fewer than
 * `max` sentences score at all, the free slots go to the sentences next to a kept one (the one after first,
 * then the one before, nearest first); when none does, to the first sentences (seed 000). Returned in the
 * original order.
 */
export function selectSentences(
  /** Each sentence's BM25 score. */
  scores: ArrayLike<number>,
  max: number,
  boost?: ArrayLike<number>,
  /** Added to each sentence's effective score (`clip.answerNeighbour`, see `answerValues`). */
  extra?: ArrayLike<number>,
  /** How many sentences (`scores` may be a longer buffer). */
  n = scores.length,
): KeptSentence[] {
  // `effectiveScores`, into a buffer shared by every call.
  if (EFFECTIVE_SCRATCH.length < n)
    EFFECTIVE_SCRATCH = new Float64Array(Math.max(n, 2 * EFFECTIVE_SCRATCH.length));
  const effective = EFFECTIVE_SCRATCH;
  for (let i = 0; i < n; i++)
    effective[i] =
      Math.round(((scores[i] ?? 0) + CARRY * (scores[i - 1] ?? 0)) * (1 + (boost?.[i] ?? 0)) * 1e6) / 1e6;
  if (extra !== undefined)
    for (let i = 0; i < n; i++)
      effective[i] = Math.round(((effective[i] ?? 0) + (extra[i] ?? 0)) * 1e6) / 1e6;
  // Why each sentence is kept (0: it is not): chosen by repeated selection of the best remaining one (at most
  // five picks over a memory's sentences, no sorting, nothing allocated per pick).
  if (WHY_SCRATCH.length < n) WHY_SCRATCH = new Uint8Array(Math.max(n, 2 * WHY_SCRATCH.length));
  const why = WHY_SCRATCH;
  why.fill(0, 0, n);
  // The picks, in order, in a buffer shared by every call (each a different sentence: at most `n` of them).
  if (ANCHOR_SCRATCH.length < n) ANCHOR_SCRATCH = new Int32Array(Math.max(n, 2 * ANCHOR_SCRATCH.length));
  const anchors = ANCHOR_SCRATCH;
  let picked = 0;
  while (picked < max) {
    let best = -1;
    for (let i = 0; i < n; i++) {
      const e = effective[i] ?? 0;
      if (e > 0 && why[i] === 0 && (best < 0 || e > (effective[best] ?? 0))) best = i;
    }
    if (best < 0) break;
    why[best] = (scores[best] ?? 0) > 0 ? MATCH : CONTEXT;
    anchors[picked++] = best;
  }
  let kept = picked;
  if (kept === 0) {
    for (let i = 0; i < Math.min(max, n); i++) why[i] = LEADING;
  } else {
    for (let distance = 1; kept < max && distance < n; distance++) {
      for (let p = 0; p < picked; p++) {
        const a = anchors[p] ?? 0;
        for (let side = 0; side < 2 && kept < max; side++) {
          const i = side === 0 ? a + distance : a - distance;
          if (i >= 0 && i < n && why[i] === 0) {
            why[i] = CONTEXT;
            kept++;
          }
        }
      }
    }
  }
  // Made at its final size: a list grown by `push` from empty reserves 17 slots for the few kept sentences.
  let total = 0;
  for (let i = 0; i < n; i++) if (why[i] !== 0) total++;
  const out: KeptSentence[] = new Array(total);
  let o = 0;
  for (let i = 0; i < n; i++) {
    const w = why[i] ?? 0;
    if (w === 0) continue;
    const k: KeptSentence = { sentence: i, why: WHY[w] ?? "leading", score: effective[i] ?? 0 };
    const added = extra?.[i] ?? 0;
    if (added > 0) k.answer = Math.round(added * 1e6) / 1e6;
    out[o++] = k;
  }
  return out;
}

/** `selectSentences`' per-sentence marks, one buffer for every call (it is synchronous and never re-entered). */
let WHY_SCRATCH = new Uint8Array(64);
/** `selectSentences`' picks, likewise. */
let ANCHOR_SCRATCH = new Int32Array(8);
/** `selectSentences`' effective scores, likewise. */
let EFFECTIVE_SCRATCH = new Float64Array(64);
/** The clip stage's scores per sentence of the memory being clipped, likewise. */
let SCORE_SCRATCH = new Float64Array(64);
/** The clip stage's answer boosts per sentence of the memory being clipped, likewise. */
let BOOST_SCRATCH = new Float64Array(64);
const MATCH = 1;
const CONTEXT = 2;
const LEADING = 3;
const WHY: ReadonlyArray<KeptSentence["why"] | undefined> = [undefined, "match", "context", "leading"];

/**
 * `clip.answerNeighbour`: how much of an answer the sentence `text.slice(start, end)` holds, 0–1. A sentence that
 * asks something ("Tu pars de Lyon ?") holds none; for a "when" or "how many" question, the kind asked for alone
 * (`fit`: a time, a number); else the kind asked for (1) or, short of it, a name, number or quoted title the
 * question does not say (`SPECIFIC`: text/specifics.ts).
 */
export function answerValue(
  text: string,
  start: number,
  end: number,
  answerType: AnswerType | undefined,
  fit: number,
  questionWords: ReadonlySet<string>,
): number {
  if (asks(text, start, end)) return 0;
  if (answerType === "time" || answerType === "number") return fit;
  return fit >= 1 ? fit : Math.max(fit, SPECIFIC * holdsNewSpecific(text, questionWords, start, end));
}

/**
 * Whether a code unit closes a quote or bracket that may follow a sentence's question mark: `"'”’»)]`. Compared
 * as char codes: `charAt` would make a string of each (a new one for a character past U+00FF).
 */
function closes(c: number): boolean {
  return c === 0x22 || c === 0x27 || c === 0x201d || c === 0x2019 || c === 0xbb || c === 0x29 || c === 0x5d;
}

/** Whether the sentence ends in a question mark (`?` or `？`; closing quotes or brackets after it allowed). */
function asks(text: string, start: number, end: number): boolean {
  let i = end - 1;
  while (i >= start && (closes(text.charCodeAt(i)) || text.charCodeAt(i) <= 32)) i--;
  const c = text.charCodeAt(i);
  return i >= start && (c === 0x3f || c === 0xff1f);
}

/**
 * What a name, number or title the question does not say is worth against the kind of answer asked for (1): less,
 * so the asked kind wins a tie, and beside a match (which passes on `CARRY`) a name alone outweighs it only from a
 * weight of about 0.7. Chosen on the golden sets (docs/eval.md#sentence-choice-under-a-tight-allowance): against
 * 0.75, 1 kept 1.3 points more answers on the long set at 25 tokens a memory but 0.5 fewer on the basic set with
 * the default (1.5 at 25 tokens); 0.5 kept 0.5 fewer on the long set.
 */
export const SPECIFIC = 0.75;

/** `clip.answerNeighbour` for a sentence two or more away from every matching one: this share of the weight. */
export const FAR = 0.5;

/**
 * `clip.answerNeighbour`: what each sentence adds to its effective score for holding an answer — `weight` × its
 * `value[j]` (0–1, `answerValue`) × the memory's best effective score (so the added part is on the memory's own
 * scale; 1 when no sentence matches, e.g. a reply turn), in full for a sentence that matches or is next to one
 * that does (or when none does), `FAR` of it further away. A sentence beside the best match that holds the kind
 * of answer asked for then outranks the match when the match holds none (CARRY + weight > 1), and a match that
 * holds it outranks both. Written into a buffer shared by every call (read before the next).
 */
export function answerValues(
  /** Each sentence's BM25 score. */
  scores: ArrayLike<number>,
  boost: ArrayLike<number> | undefined,
  weight: number,
  /** Each sentence's `answerValue`. */
  value: ArrayLike<number>,
  /** How many sentences (`scores` may be a longer buffer). */
  n = scores.length,
): Float64Array {
  if (EXTRA_SCRATCH.length < n) EXTRA_SCRATCH = new Float64Array(Math.max(n, 2 * EXTRA_SCRATCH.length));
  const out = EXTRA_SCRATCH;
  let best = 0;
  for (let i = 0; i < n; i++) {
    const e = ((scores[i] ?? 0) + CARRY * (scores[i - 1] ?? 0)) * (1 + (boost?.[i] ?? 0));
    if (e > best) best = e;
  }
  const unit = best > 0 ? best : 1;
  for (let i = 0; i < n; i++) {
    out[i] = 0;
    const v = value[i] ?? 0;
    if (v === 0) continue;
    const near =
      best === 0 ||
      (scores[i] ?? 0) > 0 ||
      (scores[i - 1] ?? 0) > 0 ||
      (i + 1 < n && (scores[i + 1] ?? 0) > 0);
    out[i] = weight * unit * v * (near ? 1 : FAR);
  }
  return out;
}

/** `answerValues`' buffer. */
let EXTRA_SCRATCH = new Float64Array(64);
/** The clip stage's `answerValue` per sentence of the memory being clipped, read by `answerValues` (likewise). */
let VALUE_SCRATCH = new Float64Array(64);

/**
 * The kept sentences as they stand in `text`: each run of consecutive kept sentences is one verbatim slice
 * (the whitespace between them included), runs are joined by " ... ", and "... " / " ..." mark sentences left
 * out before the first run and after the last (not doubled when the text there already ends with an
 * ellipsis). Never a re-join of adjacent text: a value the redactor saw whole stays whole or is left out.
 */
export function assembleSentences(
  text: string,
  spans: readonly SentenceSpan[],
  kept: ArrayLike<number>,
  /** How many of `kept` (a shared buffer may be longer). */
  length = kept.length,
): string {
  let out = "";
  let i = 0;
  while (i < length) {
    let j = i;
    while (j + 1 < length && (kept[j + 1] ?? 0) === (kept[j] ?? 0) + 1) j++;
    const start = spans[kept[i] ?? 0]?.start ?? 0;
    const end = spans[kept[j] ?? 0]?.end ?? text.length;
    if (i === 0) {
      if ((kept[0] ?? 0) > 0) out += LEADING_OMISSION;
    } else {
      out += OMISSION;
    }
    out += text.slice(start, end);
    i = j + 1;
  }
  const last = kept[length - 1] ?? 0;
  if (last < spans.length - 1 && !endsWithEllipsis(out)) out += TRAILING_OMISSION;
  return out;
}

/**
 * Stage 6: clip every memory to `retrieval.clipSentences` sentences — the first ones (`clip.mode: leading`,
 * seed 000) or the ones that best match `query` (`relevant`, see `selectSentences` and text/relevance.ts) —
 * and record `originalLength` (UTF-16 code units before clipping). Pure: returns new items, order kept.
 * Mode `off` is not run as a stage (runPipeline skips it).
 */
export function clipStage(
  items: WorkItem[],
  policy: Policy,
  ctx?: StageContext,
  query = "",
  answerType?: AnswerType,
  /** The request's shared text index (runPipeline's, built for this `query`); a stage run alone builds its own. */
  index: RequestIndex = new RequestIndex(query),
  /**
   * `terms: false`: the kept sentences in the trace leave out the query terms each matched (`KeptSentence.terms`)
   * — only the explain trace shows them (runPipeline passes its `explain`), and they were lists for every
   * matching kept sentence of every request. Which sentences are kept does not change.
   */
  opts: { terms?: boolean } = {},
): StageResult {
  const max = limitOf(policy.retrieval.clipSentences);
  const withTerms = opts.terms !== false;
  const prepared = policy.clip.mode === "relevant" ? index.relevance() : undefined;
  const relevant = prepared?.terms ?? [];
  const { answerAware, maxTokensPerMemory, speakerLabel, answerNeighbour: neighbour } = policy.clip;
  let keys: Set<string> | undefined;
  const allowance = ctx === undefined ? undefined : maxTokensPerMemory;
  if (relevant.length === 0) {
    const changes: TraceChange[] = [];
    const out = items.map((item): WorkItem => {
      const { content, clipped } = clipContent(item.content, max);
      if (clipped) changes.push({ id: item.id, reason: "clipped" });
      return { ...item, content, originalLength: item.content.length };
    });
    return clipResult(items, out, changes, { clipSentences: max, mode: "leading" });
  }

  // Every sentence of every memory is a document for the query's IDF, clipped or not.
  const spans = items.map((item) => index.spans(item.content));
  const scores = index.scores(
    items.map((item) => item.content),
    relevant,
    prepared?.language ?? "en",
  );
  const changes: TraceChange[] = [];
  const tokenizer = ctx?.tokenizer;
  const count = (text: string) => tokenizer?.count(text) ?? 0;
  const out = items.map((item, i): WorkItem => {
    const text = item.content;
    const own = spans[i] ?? [];
    const last = own[own.length - 1];
    // Each sentence counted once, when first needed; a memory's count is estimated as their sum (BPE across a
    // joint differs by a token or so), and the clipped text is counted exactly once at the end.
    const counted = tokenizer !== undefined && allowance !== undefined && own.length > 1;
    const costing = counted ? tokenizer : undefined;
    // Whether all its sentences are over the allowance: the sum only grows, so counting stops once it is over
    // (and a memory with more sentences than `clipSentences` is clipped anyway).
    let overAllowance = false;
    if (allowance !== undefined && counted && own.length <= max) {
      let sum = 0;
      for (let j = 0; j < own.length && sum <= allowance; j++)
        sum += index.sentenceTokens(text, j, tokenizer) + 1;
      overAllowance = sum > allowance;
    }
    if ((own.length <= max && !overAllowance) || last === undefined)
      return { ...item, originalLength: text.length };
    let boost: Float64Array | undefined;
    if (answerAware && answerType !== undefined) {
      if (BOOST_SCRATCH.length < own.length)
        BOOST_SCRATCH = new Float64Array(Math.max(own.length, 2 * BOOST_SCRATCH.length));
      boost = BOOST_SCRATCH;
      for (let j = 0; j < own.length; j++) boost[j] = ANSWER_BOOST * index.answerFit(text, j, answerType);
    }
    // This memory's sentence scores, copied out of the flat scores (`SentenceScores`) into a buffer shared by
    // every call (`scored` long).
    const base = scores.first[i] as number;
    const scored = (scores.first[i + 1] as number) - base;
    if (SCORE_SCRATCH.length < scored)
      SCORE_SCRATCH = new Float64Array(Math.max(scored, 2 * SCORE_SCRATCH.length));
    const ownScores = SCORE_SCRATCH;
    for (let j = 0; j < scored; j++) ownScores[j] = scores.score[base + j] as number;
    let extra: Float64Array | undefined;
    if (neighbour !== undefined) {
      keys ??= questionKeys(query);
      const n = scored;
      if (VALUE_SCRATCH.length < n) VALUE_SCRATCH = new Float64Array(Math.max(n, 2 * VALUE_SCRATCH.length));
      const values = VALUE_SCRATCH;
      for (let j = 0; j < n; j++) {
        const span = own[j] as SentenceSpan;
        const fit = answerType === undefined ? 0 : index.answerFit(text, j, answerType);
        values[j] = answerValue(text, span.start, span.end, answerType, fit, keys);
      }
      extra = answerValues(ownScores, boost, neighbour, values, scored);
    }
    // This memory's own list (and entries): trimmed, reordered and renumbered in place below.
    const kept = selectSentences(ownScores, Math.min(max, own.length), boost, extra, scored);
    if (withTerms)
      for (const k of kept) {
        const from = scores.termsAt[base + k.sentence] as number;
        const to = scores.termsAt[base + k.sentence + 1] as number;
        if (to > from) {
          k.terms = [];
          for (let x = from; x < to; x++) k.terms.push(relevant[scores.terms[x] as number] ?? "");
        }
      }
    let content: string;
    if (allowance !== undefined && kept.length > 1 && estimate(index, text, kept, costing) + 2 > allowance) {
      // Best sentences first while the memory stays within its allowance (estimated from the sentences'
      // counts, then checked exactly: the worst kept sentence goes while the text is over); at least the best one.
      insertionSorted(kept, BY_VALUE);
      let sum = sentenceCost(index, text, (kept[0] as KeptSentence).sentence, costing);
      let taken = 1;
      for (let r = 1; r < kept.length; r++) {
        const k = kept[r] as KeptSentence;
        const cost = sentenceCost(index, text, k.sentence, costing);
        if (sum + cost + 2 <= allowance) {
          kept[taken++] = k;
          sum += cost;
        }
      }
      kept.length = taken;
      insertionSorted(kept, BY_SENTENCE);
      content = assembleKept(text, own, kept, speakerLabel);
      while (kept.length > 1 && count(content) > allowance) {
        // The worst: the lowest score, ties the later sentence.
        let worst = 0;
        for (let x = 1; x < kept.length; x++) {
          const a = kept[x] as KeptSentence;
          const w = kept[worst] as KeptSentence;
          if (a.score < w.score || (a.score === w.score && a.sentence > w.sentence)) worst = x;
        }
        for (let x = worst + 1; x < kept.length; x++) kept[x - 1] = kept[x] as KeptSentence;
        kept.length--;
        content = assembleKept(text, own, kept, speakerLabel);
      }
    } else {
      content = assembleKept(text, own, kept, speakerLabel);
    }
    if (content === text) return { ...item, originalLength: text.length };
    // The trace numbers sentences from 1, as people count them (docs/policy.md#the-explain-trace).
    for (const k of kept) k.sentence += 1;
    changes.push({ id: item.id, reason: "clipped", sentences: { total: own.length, kept } });
    return { ...item, content, originalLength: text.length };
  });
  const detail: Record<string, string | number> = {
    clipSentences: max,
    mode: "relevant",
    queryTerms: relevant.length,
  };
  if (allowance !== undefined) detail.maxTokensPerMemory = allowance;
  if (answerAware && answerType !== undefined) detail.answerType = answerType;
  if (neighbour !== undefined) detail.answerNeighbour = neighbour;
  return clipResult(items, out, changes, detail);
}

/**
 * `list.sort(order)` for the few kept sentences of one memory (stable, like `Array.prototype.sort`, which
 * allocates a work array per call).
 */
function insertionSorted<T>(list: T[], order: (a: T, b: T) => number): T[] {
  for (let i = 1; i < list.length; i++) {
    const x = list[i] as T;
    let j = i;
    while (j > 0 && order(list[j - 1] as T, x) > 0) {
      list[j] = list[j - 1] as T;
      j--;
    }
    list[j] = x;
  }
  return list;
}

/** Best first (ties: the earlier sentence): the order in which the allowance takes kept sentences. */
const BY_VALUE = (a: KeptSentence, b: KeptSentence): number => b.score - a.score || a.sentence - b.sentence;
/** In the memory's order. */
const BY_SENTENCE = (a: KeptSentence, b: KeptSentence): number => a.sentence - b.sentence;

/** What a sentence adds to a memory's estimated count: its tokens (with a `tokenizer`, else none) and 1. */
function sentenceCost(
  index: RequestIndex,
  text: string,
  sentence: number,
  tokenizer: Tokenizer | undefined,
): number {
  return (tokenizer === undefined ? 0 : index.sentenceTokens(text, sentence, tokenizer)) + 1;
}

/** A memory's estimated count with these sentences kept: the sum of their `sentenceCost`s. */
function estimate(
  index: RequestIndex,
  text: string,
  kept: readonly KeptSentence[],
  tokenizer: Tokenizer | undefined,
): number {
  let sum = 0;
  for (const k of kept) sum += sentenceCost(index, text, k.sentence, tokenizer);
  return sum;
}

/**
 * `assembleSentences` of these kept sentences, after the text's speaker label (`Maya: `) when `speakerLabel` is on
 * and the first sentence is left out (looked for only then: most clipped memories keep their first sentence).
 * Their indexes go through one buffer shared by every call (synchronous, never re-entered): a memory may be
 * assembled a few times while its allowance is fitted, and each would otherwise make its own list.
 */
function assembleKept(
  text: string,
  spans: readonly SentenceSpan[],
  kept: readonly KeptSentence[],
  speakerLabel: boolean,
): string {
  if (KEPT_SCRATCH.length < kept.length)
    KEPT_SCRATCH = new Int32Array(Math.max(kept.length, 2 * KEPT_SCRATCH.length));
  for (let k = 0; k < kept.length; k++) KEPT_SCRATCH[k] = (kept[k] as KeptSentence).sentence;
  const assembled = assembleSentences(text, spans, KEPT_SCRATCH, kept.length);
  const label = speakerLabel && (kept[0]?.sentence ?? 0) > 0 ? SPEAKER_LABEL.exec(text)?.[0] : undefined;
  return label === undefined ? assembled : `${label}${assembled}`;
}

/** `assembleKept`'s indexes. */
let KEPT_SCRATCH = new Int32Array(8);

function clipResult(
  input: readonly WorkItem[],
  out: WorkItem[],
  changes: TraceChange[],
  detail: Record<string, string | number>,
): StageResult {
  return { items: out, trace: { stage: "clip", in: input.length, out: out.length, changes, detail } };
}
