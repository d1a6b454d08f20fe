/**
 * The expansion round's decision (src/pipeline/expansion.ts), shared by the retrieval core and `memgate eval`.
 */
import {
  expansionPlan,
  foundByBackend,
  keepExpanded,
  mergeExpanded,
  missingWords,
} from "../../src/pipeline/expansion";
import type { Sufficiency } from "../../src/pipeline/sufficiency";
import { policySchema } from "../../src/policy/schema";
import { makeCandidate, makePolicy } from "../helpers/items";

const cert = (verdict: Sufficiency["verdict"], completeness = 0.3, missing: string[] = []): Sufficiency => ({
  completeness,
  redundancy: 0,
  missing,
  verdict,
});
const expanding = makePolicy({ sufficiency: { enabled: true, expand: true, expandFactor: 3 } });
const withMissing = (expandWith: "more" | "missing" | "both") =>
  makePolicy({ sufficiency: { enabled: true, expand: true, expandFactor: 3, expandWith } });
const Q = "Which foreign cities has Aisha travelled to for work?";

describe("expansionPlan: more (unset)", () => {
  test("not sufficient, the backend gave all it was asked for: the question, expandFactor × the candidates", () => {
    expect(expansionPlan(expanding, cert("partial"), Q, 40, 40)).toEqual({
      with: "more",
      query: Q,
      limit: 120,
    });
    expect(expansionPlan(expanding, cert("insufficient"), Q, 40, 40)?.limit).toBe(120);
    // `more` given explicitly is the same round, missing words or not.
    expect(expansionPlan(withMissing("more"), cert("partial", 0.3, ["citi"]), Q, 40, 40)).toEqual({
      with: "more",
      query: Q,
      limit: 120,
    });
  });
  test("no round when sufficient, without a certificate, when off, or when the backend had no more", () => {
    expect(expansionPlan(expanding, cert("sufficient"), Q, 40, 40)).toBeUndefined();
    expect(expansionPlan(expanding, undefined, Q, 40, 40)).toBeUndefined();
    expect(
      expansionPlan(makePolicy({ sufficiency: { enabled: true } }), cert("partial"), Q, 40, 40),
    ).toBeUndefined();
    expect(expansionPlan(expanding, cert("partial"), Q, 40, 39)).toBeUndefined();
  });
});

describe("expansionPlan: missing and both", () => {
  test("missing: the question's missing words, as written, for as many candidates as the first search", () => {
    const first = cert("partial", 0.5, ["foreig", "citi"]);
    expect(expansionPlan(withMissing("missing"), first, Q, 40, 40)).toEqual({
      with: "missing",
      query: "foreign cities",
      limit: 40,
    });
    // A backend that had no more for the question may still hold the missing words.
    expect(expansionPlan(withMissing("missing"), first, Q, 40, 12)?.query).toBe("foreign cities");
  });
  test("missing: no round when nothing is missing, or when sufficient", () => {
    expect(expansionPlan(withMissing("missing"), cert("partial", 0.5, []), Q, 40, 40)).toBeUndefined();
    expect(
      expansionPlan(withMissing("missing"), cert("sufficient", 0.9, ["citi"]), Q, 40, 40),
    ).toBeUndefined();
  });
  test("both: the missing words for expandFactor × the candidates; nothing missing: as more", () => {
    expect(expansionPlan(withMissing("both"), cert("partial", 0.5, ["citi"]), Q, 40, 40)).toEqual({
      with: "missing",
      query: "cities",
      limit: 120,
    });
    expect(expansionPlan(withMissing("both"), cert("partial", 0.5, []), Q, 40, 40)).toEqual({
      with: "more",
      query: Q,
      limit: 120,
    });
    expect(expansionPlan(withMissing("both"), cert("partial", 0.5, []), Q, 40, 39)).toBeUndefined();
  });
  test("expandWith is validated: one of more, missing, both, and only with expand", () => {
    const base = { name: "p", version: 1 };
    expect(
      policySchema.safeParse({ ...base, sufficiency: { expand: true, expandWith: "missing" } }).success,
    ).toBe(true);
    expect(
      policySchema.safeParse({ ...base, sufficiency: { expand: true, expandWith: "fewer" } }).success,
    ).toBe(false);
    const off = policySchema.safeParse({ ...base, sufficiency: { expandWith: "missing" } });
    expect(off.success).toBe(false);
    expect(off.error?.issues[0]?.path).toEqual(["sufficiency", "expandWith"]);
    // Absent: the policy parses as before (no field added).
    expect(policySchema.parse(base).sufficiency).not.toHaveProperty("expandWith");
  });
});

describe("missingWords", () => {
  test("the query's words whose stemmed term or name is missing, in query order, each once, as written", () => {
    expect(missingWords(Q, ["citi", "foreig"])).toEqual(["foreign", "cities"]);
    expect(missingWords("Did Maya's sister call Maya?", ["Maya"])).toEqual(["Maya's"]);
    expect(missingWords("Welche Farbe hat Jonas' Simson?", ["Jonas'", "farb"])).toEqual(["Farbe", "Jonas'"]);
    expect(missingWords("¿Dónde vive Lucía ahora?", ["Lucía"])).toEqual(["Lucía"]);
  });
  test("nothing missing, nothing to search; a word whose term is held is not searched", () => {
    expect(missingWords(Q, [])).toEqual([]);
    expect(missingWords(Q, ["travel"])).toEqual(["travelled"]);
    expect(missingWords(Q, ["Rotterdam"])).toEqual([]);
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
