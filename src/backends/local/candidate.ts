import type { Candidate } from "../../pipeline/types";
import type { MemoryRecord } from "./schema";

/**
 * A stored record as a search candidate (also used by the OpenMemory surface over the local store): `score` the
 * calibrated one (score.ts), `raw` MiniSearch's BM25+ score, kept as `backendScore`.
 */
export function toCandidate(record: MemoryRecord, score: number, raw: number): Candidate {
  const candidate: Candidate = {
    id: record.id,
    content: record.content,
    score,
    timestamp: record.timestamp,
    sessionId: record.sessionId,
    type: record.type,
    backend: "local",
    sourceId: record.id,
  };
  if (record.messageId !== undefined) candidate.messageId = record.messageId;
  if (record.role !== undefined) candidate.role = record.role;
  if (Number.isFinite(raw)) candidate.backendScore = raw;
  return candidate;
}
