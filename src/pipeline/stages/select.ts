import type { QueryAnalysis } from "../query/analyze";
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

/** A memory's words of three characters or more, lower-cased (no stemming: near-duplicates share their words). */
const WORDS = /[\p{L}\p{N}]{3,}/gu;
function wordSet(text: string): Set<string> {
  const set = new Set<string>();
  for (const m of text.toLowerCase().matchAll(WORDS)) set.add(m[0]);
  return set;
}

function jaccard(a: ReadonlySet<string>, b: ReadonlySet<string>): number {
  if (a.size === 0 || b.size === 0) return 0;
  let inter = 0;
  const [small, large] = a.size <= b.size ? [a, b] : [b, a];
  for (const t of small) if (large.has(t)) inter++;
  return inter / (a.size + b.size - inter);
}

/** The word-set Jaccard similarity of two memories by id, each set built once (MMR, the certificate's redundancy). */
export function similarityOf(items: readonly WorkItem[]): (a: string, b: string) => number {
  const byId = new Map(items.map((item) => [item.id, item]));
  const sets = new Map<string, Set<string>>();
  const setOf = (id: string): Set<string> | undefined => {
    let set = sets.get(id);
    if (set === undefined) {
      const item = byId.get(id);
      if (item === undefined) return undefined;
      set = wordSet(item.content);
      sets.set(id, set);
    }
    return set;
  };
  return (a, b) => {
    const x = setOf(a);
    const y = setOf(b);
    return x === undefined || y === undefined ? 0 : jaccard(x, y);
  };
}

export function selectStage(
  ranked: WorkItem[],
  relevance: ReadonlyMap<string, number>,
  opts: SelectOptions,
): StageResult & { similarity: (a: string, b: string) => number } {
  // One word set per memory, built when first compared (the similarity returned is the same function).
  const similarity = similarityOf(ranked);
  const top = Math.max(1e-9, ...ranked.map((item) => relevance.get(item.id) ?? 0));
  const pool = [...ranked];
  const chosen: WorkItem[] = [];
  const maxSim = new Map<string, number>();
  const byId = new Map(ranked.map((item) => [item.id, item]));
  const repliesOf = new Map<string, WorkItem>();
  for (const item of ranked) if (item.replyTo !== undefined) repliesOf.set(item.replyTo, item);
  const take = (item: WorkItem) => {
    const idx = pool.indexOf(item);
    if (idx >= 0) pool.splice(idx, 1);
    chosen.push(item);
    if (opts.lambda < 1) {
      for (const other of pool) {
        const sim = similarity(item.id, other.id);
        if (sim > (maxSim.get(other.id) ?? 0)) maxSim.set(other.id, sim);
      }
    }
  };
  const limit = Math.min(opts.reserveUpTo, ranked.length);
  while (chosen.length < limit && pool.length > 0) {
    let best: WorkItem | undefined;
    let bestScore = Number.NEGATIVE_INFINITY;
    for (const item of pool) {
      const rel = (relevance.get(item.id) ?? 0) / top;
      const score =
        Math.round((opts.lambda * rel - (1 - opts.lambda) * (maxSim.get(item.id) ?? 0)) * 1e6) / 1e6;
      if (score > bestScore || (score === bestScore && best !== undefined && item.id < best.id)) {
        best = item;
        bestScore = score;
      }
    }
    if (best === undefined) break;
    // A reply chosen first pulls its question in before it: the question gives the reply its meaning.
    const question = best.replyTo === undefined ? undefined : byId.get(best.replyTo);
    if (question !== undefined && pool.includes(question) && chosen.length + 1 < limit) take(question);
    take(best);
    const reply = repliesOf.get(best.id);
    if (reply !== undefined && pool.includes(reply) && chosen.length < limit) take(reply);
  }
  const changes: TraceChange[] = [];
  const out: WorkItem[] = chosen.map((item, i) => (i < opts.k ? item : { ...item, reserve: true }));
  for (const item of pool) changes.push({ id: item.id, reason: "beyond_topK" });
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
