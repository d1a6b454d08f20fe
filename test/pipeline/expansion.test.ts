/**
 * The expansion round's decision (src/pipeline/expansion.ts), shared by the retrieval core and `memgate eval`.
 */
import { expansionLimit, foundByBackend, keepExpanded, mergeExpanded } from "../../src/pipeline/expansion";
import type { Sufficiency } from "../../src/pipeline/sufficiency";
import { makeCandidate, makePolicy } from "../helpers/items";

const cert = (verdict: Sufficiency["verdict"], completeness = 0.3): Sufficiency => ({
  completeness,
  redundancy: 0,
  missing: [],
  verdict,
});
const expanding = makePolicy({ sufficiency: { enabled: true, expand: true, expandFactor: 3 } });

describe("expansionLimit", () => {
  test("not sufficient, the backend gave all it was asked for: expandFactor × the candidates", () => {
    expect(expansionLimit(expanding, cert("partial"), 40, 40)).toBe(120);
    expect(expansionLimit(expanding, cert("insufficient"), 40, 40)).toBe(120);
  });
  test("no round when sufficient, without a certificate, when off, or when the backend had no more", () => {
    expect(expansionLimit(expanding, cert("sufficient"), 40, 40)).toBeUndefined();
    expect(expansionLimit(expanding, undefined, 40, 40)).toBeUndefined();
    expect(
      expansionLimit(makePolicy({ sufficiency: { enabled: true } }), cert("partial"), 40, 40),
    ).toBeUndefined();
    expect(expansionLimit(expanding, cert("partial"), 40, 39)).toBeUndefined();
  });
});

describe("merging and keeping", () => {
  test("the second search's new candidates after the first ones, each id once", () => {
    const a = [makeCandidate({ id: "a" }), makeCandidate({ id: "b" })];
    const b = [makeCandidate({ id: "b" }), makeCandidate({ id: "c" }), makeCandidate({ id: "a" })];
    expect(mergeExpanded(a, b).map((c) => c.id)).toEqual(["a", "b", "c"]);
  });
  test("replies the backend added do not count as found", () => {
    const list = [
      makeCandidate({ id: "q" }),
      makeCandidate({ id: "r", origin: "reply", replyTo: "q" }),
      makeCandidate({ id: "x" }),
    ];
    expect(foundByBackend(list)).toBe(2);
  });
  test("the expanded answer replaces the first only when at least as complete", () => {
    expect(keepExpanded(cert("partial", 0.4), cert("partial", 0.4))).toBe(true);
    expect(keepExpanded(cert("partial", 0.4), cert("sufficient", 0.7))).toBe(true);
    expect(keepExpanded(cert("partial", 0.4), cert("insufficient", 0.2))).toBe(false);
    expect(keepExpanded(cert("partial", 0.4), undefined)).toBe(false);
  });
});
