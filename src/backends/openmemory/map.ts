/**
 * OpenMemory query matches → gateway candidates.
 *
 * ## Score normalization
 * OpenMemory answers `POST /memory/query` with **z-scores computed within each result set**: a match's score is
 * how many standard deviations its relevance lies above the mean of that answer. They can be negative or above 1,
 * a lone match always scores 0, and they are not comparable across queries. The adapter maps each z to [0,1] with
 *
 *     score = 1 / (1 + e^(−1.702·z))
 *
 * the logistic curve scaled by 1.702, the classic close fit to the standard normal CDF Φ(z) (they differ by at
 * most 0.01). Why this function:
 * - It is strictly increasing, so it keeps the server's ranking exactly; it only looks at the match's own z, so
 *   it does not depend on other queries or on the other matches beyond what the server already put into z.
 * - z = 0 (a lone match, or a match at the set's mean) maps to exactly 0.5; z = ±1 → 0.85 / 0.15; z = ±2 → 0.97 / 0.03.
 * - It does not saturate within what OpenMemory can send: with k ≤ 200 matches |z| ≤ √199 ≈ 14.1, and 0.5 ± 0.5 is
 *   reached in double precision only beyond |z| ≈ 21, so distinct z-scores keep distinct normalized scores.
 * - Like Φ(z), the value reads roughly as the match's percentile inside its own result set.
 *
 * What `minScore` then means for OpenMemory: a match is kept when 1.702·z ≥ ln(minScore / (1 − minScore)).
 * The default `minScore: 0.3` keeps matches with z ≥ −0.50, i.e. it drops those more than about half a standard
 * deviation below the average of their own result set (for a bell-shaped set, roughly the weakest 30 %). A lone
 * match (0.5) always passes any `minScore ≤ 0.5`. Because the scale is **relative**, it cannot tell that a whole
 * answer is irrelevant (about half of any answer sits above 0.5), and with two matches the weaker one has z = −1
 * (0.15) and is dropped at 0.3. Operators who want every match OpenMemory returns use `minScore: 0` (or ≤ 0.1,
 * which keeps z ≥ −1.29).
 *
 * ## Field mapping
 * - `id`, `sourceId` ← match `id`; `content` ← `content`; `backend` = "openmemory"; `backendScore` ← the z-score
 *   as OpenMemory sent it.
 * - `timestamp` ← ISO 8601 (UTC) of `last_seen_at` (epoch ms). Matches carry no `created_at`; note that a query
 *   refreshes `last_seen_at`, so recency means "last recalled or written".
 * - `type` ← `primary_sector`: episodic → "message" (events, things said); semantic, procedural, emotional →
 *   "fact" (knowledge, how-tos, preferences and feelings about things); reflective → "summary" (the server's own
 *   consolidated insights); a missing or unknown sector → "fact". No `role` (OpenMemory does not keep one).
 * - `sessionId` = `openmemory:<primary_sector>`: OpenMemory has no sessions, and the sector is the only grouping a
 *   match carries; it stays stable for the same memory and tells a reader where the memory came from.
 * - Output order: normalized score descending, then id ascending; at most `limit` candidates. Should the server
 *   repeat an id, only its best-scored match is kept.
 *
 * A 200 body that is not `{ matches: [...] }` with a string `id`, string `content`, finite `score` and finite
 * `last_seen_at` on every match is rejected as a whole (the adapter reports the backend unavailable).
 */
import type { Candidate, MemoryType } from "../../pipeline/types";
import { isRecord } from "../json";

/** Slope that makes the logistic curve track the standard normal CDF within 0.01. */
export const LOGISTIC_SCALE = 1.702;

/** Maps a within-result-set z-score to [0,1] (see the comment at the top of this file). */
export function normalizeZScore(z: number): number {
  return 1 / (1 + Math.exp(-LOGISTIC_SCALE * z));
}

export const SECTOR_TYPES: Readonly<Record<string, MemoryType>> = {
  episodic: "message",
  semantic: "fact",
  procedural: "fact",
  emotional: "fact",
  reflective: "summary",
};

export function sectorToType(sector: string | undefined): MemoryType {
  if (sector === undefined || !Object.hasOwn(SECTOR_TYPES, sector)) return "fact";
  return SECTOR_TYPES[sector] ?? "fact";
}

/** The fields of a query match the adapter reads. */
export interface OpenMemoryMatch {
  id: string;
  content: string;
  score: number;
  lastSeenAt: number;
  primarySector?: string;
}

const MAX_EPOCH_MS = 8.64e15;

/**
 * Validates a `POST /memory/query` 200 body. Returns the matches, or a short reason (never containing any of
 * the body's contents) when the body is malformed.
 */
export function parseQueryBody(body: unknown): OpenMemoryMatch[] | { malformed: string } {
  if (!isRecord(body)) return { malformed: "body is not a JSON object" };
  const matches = body.matches;
  if (!Array.isArray(matches)) return { malformed: "`matches` is not an array" };
  const out: OpenMemoryMatch[] = [];
  for (const [i, m] of matches.entries()) {
    if (!isRecord(m)) return { malformed: `matches[${i}] is not an object` };
    const { id, content, score, last_seen_at: lastSeenAt, primary_sector: sector } = m;
    if (typeof id !== "string" || id.length === 0) return { malformed: `matches[${i}].id is not a string` };
    if (typeof content !== "string") return { malformed: `matches[${i}].content is not a string` };
    if (typeof score !== "number" || !Number.isFinite(score)) {
      return { malformed: `matches[${i}].score is not a finite number` };
    }
    if (
      typeof lastSeenAt !== "number" ||
      !Number.isFinite(lastSeenAt) ||
      Math.abs(lastSeenAt) > MAX_EPOCH_MS
    ) {
      return { malformed: `matches[${i}].last_seen_at is not an epoch-ms number` };
    }
    out.push({
      id,
      content,
      score,
      lastSeenAt,
      primarySector: typeof sector === "string" ? sector : undefined,
    });
  }
  return out;
}

export function toCandidate(m: OpenMemoryMatch): Candidate {
  const sector = m.primarySector ?? "unknown";
  return {
    id: m.id,
    content: m.content,
    score: normalizeZScore(m.score),
    timestamp: new Date(m.lastSeenAt).toISOString(),
    sessionId: `openmemory:${sector}`,
    type: sectorToType(m.primarySector),
    backend: "openmemory",
    sourceId: m.id,
    backendScore: m.score,
  };
}

/** Normalizes, orders (score desc, then id asc) and caps the matches. */
export function toCandidates(matches: readonly OpenMemoryMatch[], limit: number): Candidate[] {
  const best = new Map<string, Candidate>();
  for (const m of matches) {
    const c = toCandidate(m);
    const seen = best.get(c.id);
    if (seen === undefined || c.score > seen.score) best.set(c.id, c);
  }
  const out = [...best.values()];
  out.sort((a, b) => b.score - a.score || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  return out.slice(0, Math.max(0, limit));
}
