import { IdSlots, type ValuesById } from "../ids";
import type { QueryAnalysis } from "../query/analyze";
import { jaccardOfIds, RequestIndex } from "../text/request-index";
import type { StageResult, TraceChange, WorkItem } from "../types";

/**
 * Selection after ranking: how many memories (dynamic K, seed 004) and which (MMR diversity, seed 001).
 *
 * - K = round(minK + (maxK − minK) × complexity): a simple question gets few memories, a multi-hop one many, so
 *   the token budget is spent where it pays. Without `dynamicK`, K is the policy's `topK`.
 * - MMR: the next memory maximizes λ · relevance − (1 − λ) · (its highest similarity to one already chosen), with
 *   relevance scaled to the best candidate's and similarity the Jaccard index of the two memories' word sets
 *   (words of three characters or more, lower-cased). λ = 1 is plain rank order. Near-duplicates that the hash dedup does not
 *   catch ("I love my new job at the bakery!" / "I really love the new bakery job") stop eating the budget.
 * - A reply turn (`replyTo`) chosen with its question follows it directly; it counts towards K.
 * - Memories beyond K: `reserve` for `budget.fill` (in MMR order), else `beyond_topK`.
 *
 * Ties: the smaller id. Pure and deterministic.
 */
export interface SelectOptions {
  lambda: number;
  k: number;
  /** Keep the rest as reserve (budget.fill) up to this many in all. */
  reserveUpTo: number;
}

export function dynamicK(analysis: QueryAnalysis, minK: number, maxK: number): number {
  return Math.max(1, Math.round(minK + (maxK - minK) * analysis.complexity));
}

/**
 * The word-set Jaccard similarity of two memories by id (words of three letters or digits or more, lower-cased;
 * each set built once, as word ids in the request's text index): MMR and the certificate's redundancy.
 */
export function similarityOf(
  items: readonly WorkItem[],
  index: RequestIndex = new RequestIndex(""),
): (a: string, b: string) => number {
  const byId = new Map(items.map((item) => [item.id, item]));
  return (a, b) => {
    const x = byId.get(a);
    const y = byId.get(b);
    return x === undefined || y === undefined
      ? 0
      : jaccardOfIds(index.wordIds(x.content), index.wordIds(y.content));
  };
}

/** The MMR loop's marks over word ids, one table for every call (it is synchronous and never re-entered). */
let MARKS = new Uint8Array(4096);

export function selectStage(
  ranked: WorkItem[],
  relevance: ValuesById,
  opts: SelectOptions,
  /** The request's shared text index (runPipeline's); a stage run alone builds its own. */
  index: RequestIndex = new RequestIndex(""),
): StageResult & { similarity: (a: string, b: string) => number } {
  // One word set per memory (by id, as `similarity` compares them), built when first compared. The loop works on
  // positions in `ranked`: relevance, word sets and the highest similarity so far (by id) in arrays.
  const n = ranked.length;
  // Each id's last position: the memory that id stands for (as a Map by id keeps the last), and the slot of the
  // highest similarity so far that every memory with that id shares.
  const ids = new IdSlots(ranked);
  // `similarityOf(ranked, index)`, reading the same positions (no Map by id).
  const similarity = (a: string, b: string): number => {
    const x = ids.slot(a);
    const y = ids.slot(b);
    return x < 0 || y < 0
      ? 0
      : jaccardOfIds(
          index.wordIds((ranked[x] as WorkItem).content),
          index.wordIds((ranked[y] as WorkItem).content),
        );
  };
  const slotOf = ids.slotOf;
  const rel = new Float64Array(n);
  let top = 1e-9;
  for (let p = 0; p < n; p++) {
    const item = ranked[p] as WorkItem;
    const r = relevance.get(item.id) ?? 0;
    rel[p] = r;
    if (r > top) top = r;
  }
  const words: Array<readonly number[] | undefined> = new Array(n);
  const wordsAt = (p: number): readonly number[] => {
    let w = words[p];
    if (w === undefined) {
      w = index.wordIds((ranked[slotOf[p] ?? p] as WorkItem).content);
      words[p] = w;
    }
    return w;
  };
  const pool: number[] = ranked.map((_, p) => p);
  const inPool = new Uint8Array(n).fill(1);
  const chosen: WorkItem[] = [];
  const maxSim = new Float64Array(n);
  /** The position of the (last) reply to each id. */
  const repliesOf = new Map<string, number>();
  for (let p = 0; p < n; p++) {
    const replyTo = (ranked[p] as WorkItem).replyTo;
    if (replyTo !== undefined) repliesOf.set(replyTo, p);
  }
  let marks: Uint8Array | undefined;
  const take = (p: number) => {
    const idx = pool.indexOf(p);
    if (idx >= 0) {
      // Removed in place (no `splice`: it allocates the array of what it removes).
      for (let x = idx + 1; x < pool.length; x++) pool[x - 1] = pool[x] as number;
      pool.length--;
    }
    inPool[p] = 0;
    chosen.push(ranked[p] as WorkItem);
    if (opts.lambda < 1) {
      // Jaccard against every memory left: the chosen one's words marked in a table over the word ids, each
      // other set's intersection counted by lookups (the same integers as a merge, so the same index). The
      // table is shared by every call (all zeros between uses).
      const own = wordsAt(p);
      if (marks === undefined) {
        for (const q of pool) wordsAt(q);
        if (MARKS.length < index.wordCount())
          MARKS = new Uint8Array(Math.max(index.wordCount(), 2 * MARKS.length));
        marks = MARKS;
      }
      for (let k = 0; k < own.length; k++) marks[own[k] ?? 0] = 1;
      for (const q of pool) {
        const other = wordsAt(q);
        let inter = 0;
        for (let k = 0; k < other.length; k++) inter += marks[other[k] ?? 0] ?? 0;
        const sim = own.length === 0 || other.length === 0 ? 0 : inter / (own.length + other.length - inter);
        const slot = slotOf[q] ?? 0;
        if (sim > (maxSim[slot] ?? 0)) maxSim[slot] = sim;
      }
      for (let k = 0; k < own.length; k++) marks[own[k] ?? 0] = 0;
    }
  };
  /** `p` when it is a position still in the pool, else −1. */
  const pooled = (p: number | undefined): number => (p !== undefined && inPool[p] === 1 ? p : -1);
  const limit = Math.min(opts.reserveUpTo, n);
  while (chosen.length < limit && pool.length > 0) {
    let best = -1;
    let bestScore = Number.NEGATIVE_INFINITY;
    for (const q of pool) {
      const r = (rel[q] ?? 0) / top;
      const score =
        Math.round((opts.lambda * r - (1 - opts.lambda) * (maxSim[slotOf[q] ?? 0] ?? 0)) * 1e6) / 1e6;
      if (
        score > bestScore ||
        (score === bestScore && best >= 0 && (ranked[q] as WorkItem).id < (ranked[best] as WorkItem).id)
      ) {
        best = q;
        bestScore = score;
      }
    }
    if (best < 0) break;
    const item = ranked[best] as WorkItem;
    // A reply chosen first pulls its question in before it: the question gives the reply its meaning.
    const question = pooled(item.replyTo === undefined ? undefined : ids.slot(item.replyTo));
    if (question >= 0 && chosen.length + 1 < limit) take(question);
    take(best);
    const reply = pooled(repliesOf.get(item.id));
    if (reply >= 0 && chosen.length < limit) take(reply);
  }
  const changes: TraceChange[] = [];
  const out: WorkItem[] = chosen.map((item, i) => (i < opts.k ? item : reserveCopy(item)));
  for (const p of pool) changes.push({ id: (ranked[p] as WorkItem).id, reason: "beyond_topK" });
  return {
    items: out,
    similarity,
    trace: {
      stage: "select",
      in: ranked.length,
      out: out.length,
      changes,
      detail: { k: opts.k, lambda: opts.lambda, reserve: Math.max(0, out.length - opts.k) },
    },
  };
}

/**
 * `{ ...item, reserve: true }`, built field by field: V8 made that spread-and-add ~700 bytes a copy here (a new
 * hidden class for every one), against ~230 for this, and a request marks up to 20 reserve memories.
 * Every `WorkItem` field is copied when present (test/pipeline/select.copy.test.ts checks it against the spread, for an
 * item with every field set: a field added to `WorkItem` fails that test until it is copied here).
 */
export function reserveCopy(item: WorkItem): WorkItem {
  const copy: WorkItem = {
    id: item.id,
    content: item.content,
    score: item.score,
    timestamp: item.timestamp,
    sessionId: item.sessionId,
    type: item.type,
    timeMs: item.timeMs,
    originalLength: item.originalLength,
    wasRedacted: item.wasRedacted,
  };
  if (item.messageId !== undefined) copy.messageId = item.messageId;
  if (item.role !== undefined) copy.role = item.role;
  if (item.backend !== undefined) copy.backend = item.backend;
  if (item.sourceId !== undefined) copy.sourceId = item.sourceId;
  if (item.replyTo !== undefined) copy.replyTo = item.replyTo;
  if (item.origin !== undefined) copy.origin = item.origin;
  if (item.backendScore !== undefined) copy.backendScore = item.backendScore;
  if (item.validAt !== undefined) copy.validAt = item.validAt;
  if (item.invalidAt !== undefined) copy.invalidAt = item.invalidAt;
  if (item.arrivedLength !== undefined) copy.arrivedLength = item.arrivedLength;
  if (item.flags !== undefined) copy.flags = item.flags;
  copy.reserve = true;
  return copy;
}
