import type { Candidate, WorkItem } from "../../src/pipeline/types";
import { type Policy, type PolicyInput, policySchema } from "../../src/policy/schema";

/** A policy with defaults, overridden by `patch` (validated like a file). */
export function makePolicy(patch: Partial<PolicyInput> = {}): Policy {
  return policySchema.parse({ name: "test", version: 1, ...patch });
}

export function makeCandidate(patch: Partial<Candidate> & { id: string }): Candidate {
  return {
    content: `memory ${patch.id}`,
    score: 0.5,
    timestamp: "2026-01-01T00:00:00.000Z",
    sessionId: "s-1",
    type: "fact",
    ...patch,
  };
}

export function makeItem(patch: Partial<Candidate> & { id: string }): WorkItem {
  const c = makeCandidate(patch);
  return { ...c, timeMs: Date.parse(c.timestamp), originalLength: c.content.length, wasRedacted: false };
}
