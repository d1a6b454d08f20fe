import type { Policy } from "../policy/schema";
import type { Sufficiency } from "./sufficiency";
import type { Candidate } from "./types";

/**
 * The expansion round (policy `sufficiency.expand`, seed 004), decided in one place for the retrieval core
 * (`RetrievalService.expand`) and `memgate eval`, which emulates it on recorded candidates:
 *
 * - `expansionLimit`: a first answer that is not `sufficient` gets one more search for `expandFactor` × the
 *   candidates it asked for — unless the backend already returned fewer than asked (it has no more to give);
 * - `mergeExpanded`: the second search's candidates after the first ones, each id once;
 * - `keepExpanded`: the second answer replaces the first only when it is at least as complete.
 *
 * What only the core knows (the deadline left, a door's own upstream call) stays in the core.
 */
export function expansionLimit(
  policy: Policy,
  first: Sufficiency | undefined,
  asked: number,
  found: number,
): number | undefined {
  if (!policy.sufficiency.expand || first === undefined || first.verdict === "sufficient") return undefined;
  if (found < asked) return undefined;
  return asked * policy.sufficiency.expandFactor;
}

/** The first candidates, then the second search's ones not already among them (by id), in their order. */
export function mergeExpanded(first: readonly Candidate[], second: readonly Candidate[]): Candidate[] {
  const seen = new Set(first.map((c) => c.id));
  return [...first, ...second.filter((c) => !seen.has(c.id))];
}

/** Whether the expanded answer replaces the first: it must be at least as complete. */
export function keepExpanded(first: Sufficiency, second: Sufficiency | undefined): boolean {
  return second !== undefined && second.completeness >= first.completeness;
}

/** How many of the candidates a search returned the backend found itself (reply turns it added do not count). */
export function foundByBackend(candidates: readonly Candidate[]): number {
  let n = 0;
  for (const c of candidates) if (c.origin !== "reply") n++;
  return n;
}
