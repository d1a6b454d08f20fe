/**
 * The sufficiency certificate (src/pipeline/sufficiency.ts) on its own: a name the question asks about is missing
 * exactly when no kept memory's lower case holds it, whatever the memories are written in (the certificate
 * lower-cases a copy of a memory outside ASCII only when one of the characters whose lower case is ASCII is in it).
 */
import fc from "fast-check";
import { analyzeQuery } from "../../src/pipeline/query/analyze";
import { certify } from "../../src/pipeline/sufficiency";
import { makeItem } from "../helpers/items";

const TURN = Date.parse("2024-06-19T12:00:00Z");
const analysis = analyzeQuery("Where does Karl live now?", TURN);

/** Text made of pieces that matter for lower-casing: ASCII case, Kelvin sign, Turkish İ, accents, CJK. */
const PIECES = [
  "karl",
  "KARL",
  "Karl",
  "\u212Aarl",
  "k",
  "arl",
  "İk",
  "i",
  "\u0307",
  "é",
  "É",
  "中文",
  " ",
  ".",
  "s",
];
const text = fc.array(fc.constantFrom(...PIECES), { maxLength: 12 }).map((p) => p.join(""));
const NAMES = ["Karl", "İk", "i\u0307k", "ik", "Émile", "中文", "s.k"];

describe("certify", () => {
  test("a name is missing exactly when no kept memory's lower case holds it", () => {
    fc.assert(
      fc.property(
        fc.array(text, { minLength: 1, maxLength: 4 }),
        fc.subarray(NAMES, { minLength: 1 }),
        (contents, names) => {
          const kept = contents.map((content, i) => makeItem({ id: `m${i}`, content }));
          const { missing } = certify(kept, { ...analysis, entities: names }, 0.6, () => 0);
          const expected = names.filter(
            (name) => !contents.some((c) => c.toLowerCase().includes(name.toLowerCase())),
          );
          expect(missing.slice(0, expected.length)).toEqual(expected);
        },
      ),
      { numRuns: 500 },
    );
  });

  test("a name outside ASCII case is found in a memory outside ASCII", () => {
    const kept = [makeItem({ id: "a", content: "I met \u212Aarl in São Paulo." })];
    const { missing } = certify(kept, { ...analysis, entities: ["Karl", "Paulo", "Lisbon"] }, 0.6, () => 0);
    expect(missing.filter((m) => ["Karl", "Paulo", "Lisbon"].includes(m))).toEqual(["Lisbon"]);
  });
});
