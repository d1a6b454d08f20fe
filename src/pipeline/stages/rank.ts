import { IdSlots, IdValues } from "../ids";
import { byRecency, compareIds, descending } from "../order";
import type { Intent, QueryAnalysis } from "../query/analyze";
import type { TimeScope } from "../query/time-scope";
import { isAscii, lowerAt, mayHoldAscii } from "../text/ascii";
import { unscored } from "../text/relevance";
import { RequestIndex } from "../text/request-index";
import { parseTimestamp } from "../text/time";
import type { MemoryType, StageResult, WorkItem } from "../types";

/**
 * Multi-signal ranking (seed 001 stage 3): each memory's relevance is a weighted mean of signals in [0, 1],
 * with weights per query intent from the policy; a signal the question gives nothing to (no names, no time)
 * drops out and the others are re-weighted. Pure: the signals come from the memories, the query analysis and the
 * turn's time only.
 *
 * - backend: the adapter's normalized score (one scale on every backend, docs/policy.md#fetch);
 * - lexical: half the IDF-weighted share of the query's terms the memory holds, half its best sentence's BM25
 *   against the best of all candidates (IDF over the candidates' sentences, text/relevance.ts);
 * - entity: per name the question mentions, 1 when the memory's speaker is that name ("Maya: …"), 0.6 when the
 *   text mentions it; averaged. With `ranking.entitySpecificity` each name's match counts (1 − the share of the
 *   candidates it is the speaker of): a speaker of the conversation, in half the turns, tells little apart;
 * - time: inside the question's time scope 1, else e^(−days outside / 14); for "now/currently" questions without a
 *   scope, newest 1 down to oldest 0 by rank. A fact with a validity (`validAt`/`invalidAt`, Zep edges) is judged
 *   by it instead (`validityFit`): valid at any time in the scope 1; for "now" questions 1 while valid at the
 *   turn's time, 0 once invalidated before it;
 * - answer: the best-matching sentence (or the one after it) holds what the question asks for: a time
 *   expression for "when", a number for "how many", a name for "who", a place for "where", a reason for "why";
 * - type: the memory type the intent prefers (summaries for "tell me about", messages and facts for facts).
 *
 * - reinforcement (policy `ranking.reinforcement`, off by default): how often the memory was kept before for this
 *   user, min(1, ln(1 + n) / ln(1 + saturation)), with its own weight for every intent; 0 for every memory when
 *   the counts could not be read (the store down). The counts are read by the caller and passed in.
 *
 * A reply turn (`replyTo`, the next turn after a kept question turn, from backends that know the order) ranks at
 * least as high as 0.95 × its question: the answer to "what did you name the puppy?" rarely repeats its words.
 *
 * - neighbours (policy `ranking.neighbours`, off by default): after that, each message gains w × (s − r), where r is
 *   its relevance and s the best of r' × e^(−|Δt| / τ) over the other messages of its session at most 3τ apart
 *   (r' their relevance before this step) when s > r: the turn that holds the answer sits beside the one that
 *   repeats the question's words, a few turns on. Messages without a session are left as they are.
 */

export const SIGNALS = ["backend", "lexical", "entity", "time", "answer", "type"] as const;
export type Signal = (typeof SIGNALS)[number] | "reinforcement";
export type Weights = Record<(typeof SIGNALS)[number], number>;

/** The reinforcement signal's input: counts read before the run, and how to weigh them. */
export interface Reinforcement {
  counts: ReadonlyMap<string, number>;
  /** False when the counts could not be read: the signal is then 0 for every memory. */
  available: boolean;
  weight: number;
  saturation: number;
}

/** The reinforcement signal of a memory kept `n` times before. */
export function reinforcementSignal(n: number, saturation: number): number {
  return n <= 0 ? 0 : round6(Math.min(1, Math.log1p(n) / Math.log1p(saturation)));
}

export interface RankedSignals {
  id: string;
  rank: number;
  relevance: number;
  signals: Partial<Record<Signal, number>>;
}

/** What the selection and sufficiency steps read of the ranking. */
export interface RankContext {
  /** IDF of each query term over the candidates (memory level). */
  idf: number[];
  /** Each memory's relevance by id (the last one set for a repeated id, as a Map by id would keep). */
  relevance: IdValues;
}

const TYPE_PREFERENCE: Record<Intent, Record<MemoryType, number>> = {
  factual: { message: 1, fact: 1, summary: 0.5 },
  procedural: { message: 0.7, fact: 1, summary: 0.7 },
  exploratory: { message: 0.5, fact: 0.8, summary: 1 },
  analytical: { message: 0.6, fact: 0.8, summary: 1 },
};

const DAY = 86_400_000;
const round6 = (x: number) => Math.round(x * 1e6) / 1e6;

function timeFit(t: number, scope: Pick<TimeScope, "start" | "end">): number {
  if (t >= scope.start && t < scope.end) return 1;
  const outside = t < scope.start ? scope.start - t : t - scope.end;
  return Math.exp(-outside / DAY / 14);
}

/** A fact's validity as epoch ms: [validAt (else its timestamp), invalidAt (else open)); undefined without either. */
function validityOf(item: WorkItem): { start: number; end: number } | undefined {
  if (item.validAt === undefined && item.invalidAt === undefined) return undefined;
  const start = item.validAt === undefined ? item.timeMs : parseTimestamp(item.validAt);
  const end = item.invalidAt === undefined ? Number.POSITIVE_INFINITY : parseTimestamp(item.invalidAt);
  if (Number.isNaN(start) || Number.isNaN(end)) return undefined;
  return { start, end: Math.max(start, end) };
}

/**
 * The time signal of a fact with a validity. In a scope: 1 when the fact held at some time in it, else
 * e^(−days between / 14). For a "now" question (no scope): 0 when it stopped holding at or before the turn's time
 * (any end, when the request gave no time), else 1.
 */
function validityFit(
  v: { start: number; end: number },
  scope: Pick<TimeScope, "start" | "end"> | undefined,
  turnTime: number | undefined,
): number {
  if (scope === undefined) return Number.isFinite(v.end) && v.end <= (turnTime ?? v.end) ? 0 : 1;
  if (v.start < scope.end && v.end > scope.start) return 1;
  const gap = v.start >= scope.end ? v.start - scope.end : scope.start - v.end;
  return Math.exp(-gap / DAY / 14);
}

function wordIn(haystack: string, needle: string): boolean {
  let from = 0;
  for (;;) {
    const i = haystack.indexOf(needle, from);
    if (i < 0) return false;
    const before = i === 0 ? "" : (haystack[i - 1] ?? "");
    const after = haystack[i + needle.length] ?? "";
    if (!/[\p{L}\p{N}]/u.test(before) && !/[\p{L}\p{N}]/u.test(after)) return true;
    from = i + 1;
  }
}

/**
 * `wordIn(haystack.toLowerCase(), needle)` for plain ASCII `haystack` and a non-empty lower-case ASCII `needle`:
 * A–Z folded while comparing, a letter or digit on either side rules a match out.
 */
function asciiWordIn(haystack: string, needle: string): boolean {
  const m = needle.length;
  const last = haystack.length - m;
  const c0 = needle.charCodeAt(0);
  outer: for (let i = 0; i <= last; i++) {
    if (lowerAt(haystack, i) !== c0) continue;
    for (let k = 1; k < m; k++) if (lowerAt(haystack, i + k) !== needle.charCodeAt(k)) continue outer;
    if (i > 0 && isAsciiAlnum(haystack.charCodeAt(i - 1))) continue;
    if (i + m < haystack.length && isAsciiAlnum(haystack.charCodeAt(i + m))) continue;
    return true;
  }
  return false;
}

function isAsciiAlnum(c: number): boolean {
  return (c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122);
}

/** Each signal's position in `SIGNALS`. */
const SIGNAL_AT = Object.fromEntries(SIGNALS.map((signal, at) => [signal, at])) as Record<
  (typeof SIGNALS)[number],
  number
>;
/** One memory's signal values and whether each applies (`rankStage`; it is synchronous and never re-entered). */
const SIGNAL_VALUES = new Float64Array(SIGNALS.length);
const SIGNAL_PRESENT = new Uint8Array(SIGNALS.length);

/** Sets one signal of the memory being ranked (`SIGNAL_VALUES`, `SIGNAL_PRESENT`). */
function put(signal: (typeof SIGNALS)[number], v: number): void {
  const at = SIGNAL_AT[signal];
  SIGNAL_VALUES[at] = v;
  SIGNAL_PRESENT[at] = 1;
}

/** The signals in `SIGNAL_VALUES` as the explain trace shows them: in `SIGNALS` order, then reinforcement. */
function signalObject(reinforcement: number | undefined): Partial<Record<Signal, number>> {
  const signals: Partial<Record<Signal, number>> = {};
  for (let at = 0; at < SIGNALS.length; at++)
    if (SIGNAL_PRESENT[at] === 1) signals[SIGNALS[at] as Signal] = SIGNAL_VALUES[at] as number;
  if (reinforcement !== undefined) signals.reinforcement = reinforcement;
  return signals;
}

/** Policy `ranking.neighbours`: the share of the gap gained, and the time constant τ in minutes. */
export interface Neighbours {
  weight: number;
  minutes: number;
}

/**
 * `ranking.neighbours`: raises each message's relevance in `relevanceAt` (in place) by `weight` × the gap to its
 * best neighbour's (relevance before this step × e^(−minutes apart / τ), same session, at most 3τ apart). Returns
 * how many were raised. Messages are visited in (session, time, position) order, each scanning its neighbours on
 * both sides within 3τ, nearest first, until even the best relevance of all, decayed that far, could not beat the
 * best found: the result does not depend on the input order.
 */
export function liftByNeighbours(
  items: readonly WorkItem[],
  relevanceAt: Float64Array,
  { weight, minutes }: Neighbours,
): number {
  if (weight <= 0) return 0;
  const tau = minutes * 60_000;
  const reach = 3 * tau;
  const order: number[] = [];
  for (let i = 0; i < items.length; i++) {
    const item = items[i] as WorkItem;
    if (item.type === "message" && item.sessionId !== "") order.push(i);
  }
  order.sort((a, b) => {
    const x = items[a] as WorkItem;
    const y = items[b] as WorkItem;
    return x.sessionId < y.sessionId ? -1 : x.sessionId > y.sessionId ? 1 : x.timeMs - y.timeMs || a - b;
  });
  const before = Float64Array.from(relevanceAt);
  // No neighbour is above the best relevance of all: a scan stops once that, decayed, cannot beat the best so far.
  let top = 0;
  for (const i of order) if ((before[i] as number) > top) top = before[i] as number;
  let raised = 0;
  for (let x = 0; x < order.length; x++) {
    const i = order[x] as number;
    const item = items[i] as WorkItem;
    const own = before[i] as number;
    let best = own;
    for (let step = -1; step <= 1; step += 2) {
      for (let y = x + step; y >= 0 && y < order.length; y += step) {
        const j = order[y] as number;
        const other = items[j] as WorkItem;
        const apart = Math.abs(other.timeMs - item.timeMs);
        if (other.sessionId !== item.sessionId || apart > reach) break;
        if (top * Math.exp(-apart / tau) <= best) break;
        const support = (before[j] as number) * Math.exp(-apart / tau);
        if (support > best) best = support;
      }
    }
    if (best > own) {
      const r = round6(own + weight * (best - own));
      if (r > own) {
        relevanceAt[i] = r;
        raised++;
      }
    }
  }
  return raised;
}

/** The event anchor ("before the wedding") as a scope: before/after the first memory that mentions it. */
function anchorScope(items: readonly WorkItem[], analysis: QueryAnalysis): TimeScope | undefined {
  const anchor = analysis.anchor;
  if (anchor === undefined) return undefined;
  let first = Number.POSITIVE_INFINITY;
  for (const item of items) {
    const text = item.content.toLowerCase();
    if (
      anchor.words.every((w) => text.includes(w.slice(0, Math.max(4, w.length - 2)))) &&
      item.timeMs < first
    )
      first = item.timeMs;
  }
  if (!Number.isFinite(first)) return undefined;
  return anchor.relation === "before"
    ? { start: Number.NEGATIVE_INFINITY, end: first + DAY, phrase: anchor.phrase }
    : { start: first, end: Number.POSITIVE_INFINITY, phrase: anchor.phrase };
}

export function rankStage(
  items: WorkItem[],
  analysis: QueryAnalysis,
  weightsByIntent: Record<Intent, Weights>,
  reinforcement?: Reinforcement,
  /** The request's shared text index (runPipeline's); a stage run alone builds its own. */
  index: RequestIndex = new RequestIndex(""),
  /**
   * `entitySpecificity`: policy `ranking.entitySpecificity`. `signals: false`: no per-memory signal list (`ranking`
   * comes back empty) — only the explain trace shows it, and its objects were most of what this stage allocated.
   */
  opts: { entitySpecificity?: boolean; signals?: boolean; neighbours?: Neighbours } = {},
): StageResult & { ranking: RankedSignals[]; context: RankContext } {
  const specific = opts.entitySpecificity === true;
  const withSignals = opts.signals !== false;
  const weights = weightsByIntent[analysis.intent];
  const terms = analysis.terms;
  const spans = items.map((item) => index.spans(item.content));
  // Every sentence's BM25 and matched terms, flat (`SentenceScores`: memory i's sentences are entries
  // `first[i]` to `first[i + 1]`).
  const {
    first,
    score,
    termsAt,
    terms: matchedTerms,
  } = terms.length === 0
    ? unscored(spans.map((own) => own.length))
    : index.scores(
        items.map((item) => item.content),
        terms,
        analysis.language,
      );
  // Memory-level matches and IDF: `distinctTerms(i)` leaves memory i's distinct matched terms, in the order first
  // met (sentence by sentence), in `termList` and returns how many (a mark per term: no Set, no list per memory).
  const n = items.length;
  const seenTerm = new Int32Array(terms.length);
  const termList = new Int32Array(terms.length);
  let mark = 0;
  const distinctTerms = (i: number): number => {
    mark++;
    let count = 0;
    for (let e = first[i] as number; e < (first[i + 1] as number); e++) {
      for (let x = termsAt[e] as number; x < (termsAt[e + 1] as number); x++) {
        const k = matchedTerms[x] as number;
        if (seenTerm[k] !== mark) {
          seenTerm[k] = mark;
          termList[count++] = k;
        }
      }
    }
    return count;
  };
  const df = new Array<number>(terms.length).fill(0);
  for (let i = 0; i < n; i++) {
    const count = distinctTerms(i);
    for (let x = 0; x < count; x++) {
      const k = termList[x] as number;
      df[k] = (df[k] ?? 0) + 1;
    }
  }
  const idf = df.map((d) => Math.log(1 + (n - d + 0.5) / (d + 0.5)));
  const idfTotal = idf.reduce((a, b) => a + b, 0);
  // Each memory's best sentence score, and the best of all. The maximum is kept in a local while looping: a
  // variable that closures read lives in their context, where every new number is a new heap object.
  const bestOwn = new Float64Array(n);
  let top = 0;
  for (let i = 0; i < n; i++) {
    let best = 0;
    for (let e = first[i] as number; e < (first[i + 1] as number); e++)
      if ((score[e] as number) > best) best = score[e] as number;
    bestOwn[i] = best;
    if (best > top) top = best;
  }
  const bestSentence = top;

  const scope = analysis.timeScope ?? anchorScope(items, analysis);
  const recencyRank = new Map<string, number>();
  if (scope === undefined && analysis.wantsCurrent && n > 1) {
    const byTime = [...items].sort(byRecency);
    byTime.forEach((item, i) => {
      recencyRank.set(item.id, 1 - i / (n - 1));
    });
  }
  const entities = analysis.entities.filter((e) => !/^\d/.test(e)).map((e) => e.toLowerCase());

  // `ranking.entitySpecificity`: a name that speaks most candidates (a speaker of the conversation) tells little
  // apart — each name's match counts (1 − the share of the candidates it is the speaker of).
  // Each (name, memory) match computed once: the signal and the specificity read the same table. A memory's
  // speaker (or its first name) is a full match, a mention 0.6.
  const entityMatches: number[][] = entities.map(() => new Array<number>(n).fill(0));
  if (entities.length > 0) {
    for (let i = 0; i < n; i++) {
      const content = (items[i] as WorkItem).content;
      // The speaker, lower-cased, and its first word: read once per text (the request index shares them).
      const { speaker, first } = index.speaker(content);
      // Plain ASCII text is searched as it stands (A–Z folded while comparing), not lower-cased into a copy;
      // other text is lower-cased only when a name could be in it (`mayHoldAscii`, for an ASCII name).
      const ascii = index.isAscii(content);
      let lower: string | undefined;
      for (let k = 0; k < entities.length; k++) {
        const e = entities[k] as string;
        const row = entityMatches[k] as number[];
        if (speaker === e || first === e) row[i] = 1;
        else if (ascii) {
          if (isAscii(e) && e.length > 0 ? asciiWordIn(content, e) : wordIn(content, e)) row[i] = 0.6;
        } else if (!(isAscii(e) && e.length > 0) || mayHoldAscii(content, e)) {
          lower ??= content.toLowerCase();
          if (wordIn(lower, e)) row[i] = 0.6;
        }
      }
    }
  }
  const specificity = entityMatches.map((row) => {
    if (!specific || n === 0) return 1;
    let df = 0;
    for (const m of row) if (m === 1) df++;
    return 1 - df / n;
  });

  // One memory's signals at a time, by their position in SIGNALS (`present`: whether the signal applies), in
  // buffers reused for every memory and every request: the signals become an object only for the explain trace.
  const values = SIGNAL_VALUES;
  const present = SIGNAL_PRESENT;
  const signalsOf = (item: WorkItem, i: number): void => {
    present.fill(0);
    put("backend", item.score);
    if (terms.length > 0) {
      // The IDF of its distinct matched terms, summed in the order first met.
      let covered = 0;
      const count = distinctTerms(i);
      for (let x = 0; x < count; x++) covered += idf[termList[x] as number] ?? 0;
      const coverage = idfTotal > 0 ? covered / idfTotal : 0;
      const concentration = bestSentence > 0 ? (bestOwn[i] ?? 0) / bestSentence : 0;
      put("lexical", round6(0.5 * coverage + 0.5 * concentration));
    }
    if (entities.length > 0) {
      let sum = 0;
      for (let k = 0; k < entities.length; k++) sum += (specificity[k] ?? 1) * (entityMatches[k]?.[i] ?? 0);
      put("entity", round6(sum / entities.length));
    }
    const validity = validityOf(item);
    if (validity !== undefined && (scope !== undefined || analysis.wantsCurrent))
      put("time", round6(validityFit(validity, scope, analysis.turnTime)));
    else if (scope !== undefined) put("time", round6(timeFit(item.timeMs, scope)));
    else if (recencyRank.size > 0) put("time", round6(recencyRank.get(item.id) ?? 0));
    if (
      analysis.answerType !== "thing" &&
      analysis.answerType !== "list" &&
      analysis.answerType !== "yesno"
    ) {
      const base = first[i] as number;
      const sp = spans[i] ?? [];
      let bestIdx = 0;
      for (let j = 1; base + j < (first[i + 1] as number); j++)
        if ((score[base + j] as number) > (score[base + bestIdx] as number)) bestIdx = j;
      let fit = 0;
      for (let j = bestIdx; j <= bestIdx + 1; j++) {
        if (sp[j] !== undefined) fit = Math.max(fit, index.answerFit(item.content, j, analysis.answerType));
      }
      put("answer", fit);
    }
    put("type", TYPE_PREFERENCE[analysis.intent][item.type]);
  };

  const ranking: RankedSignals[] = [];
  // Each memory's relevance by position, and by id (as a Map keeps the last of a repeated id).
  const relevanceAt = new Float64Array(n);
  const relevance = new IdValues(new IdSlots(items));
  for (let i = 0; i < n; i++) {
    const item = items[i] as WorkItem;
    signalsOf(item, i);
    let num = 0;
    let den = 0;
    for (let at = 0; at < SIGNALS.length; at++) {
      const w = weights[SIGNALS[at] as (typeof SIGNALS)[number]];
      if (present[at] === 0 || w <= 0) continue;
      num += w * (values[at] as number);
      den += w;
    }
    let reinforced: number | undefined;
    if (reinforcement !== undefined && reinforcement.weight > 0) {
      reinforced = reinforcement.available
        ? reinforcementSignal(reinforcement.counts.get(item.id) ?? 0, reinforcement.saturation)
        : 0;
      num += reinforcement.weight * reinforced;
      den += reinforcement.weight;
    }
    const r = den > 0 ? round6(num / den) : item.score;
    relevanceAt[i] = r;
    relevance.setAt(i, r);
    if (withSignals) ranking.push({ id: item.id, rank: 0, relevance: r, signals: signalObject(reinforced) });
  }
  // Replies inherit from their question.
  for (let i = 0; i < n; i++) {
    const item = items[i] as WorkItem;
    const parent = item.replyTo === undefined ? undefined : relevance.get(item.replyTo);
    if (parent !== undefined && parent * 0.95 > (relevanceAt[i] as number)) {
      const r = round6(parent * 0.95);
      relevanceAt[i] = r;
      relevance.setAt(i, r);
      const signals = ranking[i];
      if (signals !== undefined) signals.relevance = r;
    }
  }
  // `ranking.neighbours`: a turn beside a relevant one in its session gains part of the gap.
  const raised =
    opts.neighbours === undefined ? undefined : liftByNeighbours(items, relevanceAt, opts.neighbours);
  if (raised !== undefined && raised > 0)
    for (let i = 0; i < n; i++) {
      const r = relevanceAt[i] as number;
      relevance.setAt(i, r);
      const signals = ranking[i];
      if (signals !== undefined) signals.relevance = r;
    }
  // Positions by relevance (then id): a sorted list of small integers, not one object per memory.
  const order = items.map((_, i) => i);
  order.sort(
    (a, b) =>
      descending(relevanceAt[a] as number, relevanceAt[b] as number) ||
      compareIds((items[a] as WorkItem).id, (items[b] as WorkItem).id),
  );
  const ranked: RankedSignals[] = [];
  if (withSignals)
    for (let x = 0; x < n; x++) {
      const r = ranking[order[x] as number] as RankedSignals;
      r.rank = x + 1;
      ranked.push(r);
    }
  const detail: Record<string, string | number | boolean> = {
    intent: analysis.intent,
    answerType: analysis.answerType,
    complexity: analysis.complexity,
  };
  if (scope !== undefined) detail.timeScope = scope.phrase;
  // Explain and the playground only (text from the query: never a span attribute, src/telemetry/tracing.ts).
  if (analysis.entities.length > 0) detail.entities = analysis.entities.join(", ");
  if (specific && entities.length > 0)
    detail.entitySpecificity = entities.map((e, k) => `${e} ${round6(specificity[k] ?? 1)}`).join(", ");
  if (raised !== undefined) detail.neighbours = raised;
  if (reinforcement !== undefined)
    detail.reinforcement = reinforcement.available ? "available" : "unavailable";
  return {
    items: order.map((i) => items[i] as WorkItem),
    ranking: ranked,
    context: { idf, relevance },
    trace: { stage: "rank", in: items.length, out: items.length, changes: [], detail },
  };
}
