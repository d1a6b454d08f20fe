/**
 * Seed 003's document-retrieval extras on `POST /memory/query`, applied by the gateway before the policy
 * (pure functions; the facts they need are gathered by ./upstream.ts or ./local.ts).
 *
 * 1. **Tags** (`filters.tags: [...]`): AND semantics, a memory is kept when it has every listed tag. When no
 *    memory has them all, the unfiltered set is used instead and the answer says so
 *    (`x-memgate-tag-fallback: true`).
 * 2. **as_of** (`as_of`, ISO 8601 with a zone, or epoch milliseconds): memories created after that instant are
 *    ignored; memories whose creation time is unknown are kept. When none is left, the set from step 1 is used
 *    instead (`x-memgate-as-of-fallback: true`).
 * 3. **Versions** (`version_strategy`: latest | earliest | longest | score): memories that are versions of the
 *    same document collapse to one. A memory's document is `metadata.doc_id` (a string or a number), else
 *    `metadata.filename` (seed 003's ingest convention); a memory with neither is a document of its own and is
 *    never collapsed. Which version stays:
 *    - `latest`: the newest creation time, then the longer content, then the higher score;
 *    - `earliest`: the oldest creation time;
 *    - `longest`: the longest content (UTF-16 code units), then the higher score;
 *    - `score`: the highest normalized score.
 *    Unknown creation times sort as the oldest for `latest` and the newest for `earliest`; remaining ties go to
 *    the smaller id, so the choice is deterministic.
 * A memory's creation time is `metadata.ingested_at` (seed 003) when it parses as ISO 8601, else the store's
 * `created_at`. Without any of the three fields a query behaves exactly as OpenMemory's own.
 */
import type { Candidate } from "../../pipeline/types";
import { isRecord } from "../json";

export const VERSION_STRATEGIES = ["latest", "earliest", "longest", "score"] as const;
export type VersionStrategy = (typeof VERSION_STRATEGIES)[number];

export interface Extras {
  tags?: readonly string[];
  asOfMs?: number;
  strategy?: VersionStrategy;
}

/** What the extras know about one memory besides its candidate. */
export interface ExtraFacts {
  tags: readonly string[];
  createdMs: number | undefined;
  docId: string | undefined;
}

export interface WithFacts {
  candidate: Candidate;
  facts: ExtraFacts;
}

export interface ExtrasOutcome<T> {
  items: T[];
  tagFallback: boolean;
  asOfFallback: boolean;
}

export const NO_FACTS: ExtraFacts = { tags: [], createdMs: undefined, docId: undefined };

export function hasExtras(extras: Extras): boolean {
  return (
    (extras.tags !== undefined && extras.tags.length > 0) || extras.asOfMs !== undefined || !!extras.strategy
  );
}

/** The document a memory is a version of (see the top of this file). */
export function docIdOf(metadata: unknown): string | undefined {
  if (!isRecord(metadata)) return undefined;
  const { doc_id: docId, filename } = metadata;
  if (typeof docId === "string" && docId !== "") return docId;
  if (typeof docId === "number" && Number.isFinite(docId)) return String(docId);
  return typeof filename === "string" && filename !== "" ? filename : undefined;
}

/** `metadata.ingested_at` when it parses, else `createdAt` (epoch ms or an ISO string). */
export function createdMsOf(metadata: unknown, createdAt: unknown): number | undefined {
  const ingested = isRecord(metadata) ? metadata.ingested_at : undefined;
  for (const v of [ingested, createdAt]) {
    if (typeof v === "number" && Number.isFinite(v)) return v;
    if (typeof v === "string") {
      const ms = Date.parse(v);
      if (!Number.isNaN(ms)) return ms;
    }
  }
  return undefined;
}

export function factsOf(item: Record<string, unknown>): ExtraFacts {
  const tags = Array.isArray(item.tags) ? item.tags.filter((t): t is string => typeof t === "string") : [];
  return { tags, createdMs: createdMsOf(item.metadata, item.created_at), docId: docIdOf(item.metadata) };
}

const idOrder = (a: WithFacts, b: WithFacts): number =>
  a.candidate.id < b.candidate.id ? -1 : a.candidate.id > b.candidate.id ? 1 : 0;

/** Negative when `a` is the better version under `strategy`. */
function compareVersions(strategy: VersionStrategy, a: WithFacts, b: WithFacts): number {
  const len = (x: WithFacts) => x.candidate.content.length;
  const score = (x: WithFacts) => x.candidate.score;
  const newest = (x: WithFacts) => x.facts.createdMs ?? Number.NEGATIVE_INFINITY;
  const oldest = (x: WithFacts) => x.facts.createdMs ?? Number.POSITIVE_INFINITY;
  const keys: Array<(x: WithFacts) => number> =
    strategy === "latest"
      ? [newest, len, score]
      : strategy === "earliest"
        ? [(x) => -oldest(x)]
        : strategy === "longest"
          ? [len, score]
          : [score];
  for (const key of keys) {
    const d = key(b) - key(a);
    if (d !== 0 && !Number.isNaN(d)) return d;
  }
  return idOrder(a, b);
}

/** One version per document; input order is kept for what stays. */
export function pickVersions<T extends WithFacts>(items: readonly T[], strategy: VersionStrategy): T[] {
  const best = new Map<string, T>();
  for (const item of items) {
    const doc = item.facts.docId;
    if (doc === undefined) continue;
    const current = best.get(doc);
    if (current === undefined || compareVersions(strategy, item, current) < 0) best.set(doc, item);
  }
  return items.filter((item) => item.facts.docId === undefined || best.get(item.facts.docId) === item);
}

/** Steps 1–3 of the top of this file. */
export function applyExtras<T extends WithFacts>(items: readonly T[], extras: Extras): ExtrasOutcome<T> {
  let out = [...items];
  let tagFallback = false;
  let asOfFallback = false;
  const required = extras.tags ?? [];
  if (required.length > 0) {
    const tagged = out.filter((i) => required.every((t) => i.facts.tags.includes(t)));
    if (tagged.length > 0) out = tagged;
    else tagFallback = out.length > 0;
  }
  const { asOfMs } = extras;
  if (asOfMs !== undefined) {
    const before = out.filter((i) => i.facts.createdMs === undefined || i.facts.createdMs <= asOfMs);
    if (before.length > 0) out = before;
    else asOfFallback = out.length > 0;
  }
  if (extras.strategy !== undefined) out = pickVersions(out, extras.strategy);
  return { items: out, tagFallback, asOfFallback };
}
