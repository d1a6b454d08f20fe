/**
 * `endsWithQuestion` (src/backends/question.ts) reads a turn from its end; it must say exactly what the
 * `ASKS_QUESTION` regex says, for any text: question marks, closers, every kind of space and surrogate pairs mixed in.
 */
import fc from "fast-check";
import { ASKS_QUESTION, asksQuestion, endsWithQuestion } from "../../src/backends/question";

// The characters that matter, some that look alike (¿, ‘, “, (, [, «, ZWSP, NEL), astral ones, and any others.
const special = fc.constantFrom(
  ..."?？؟\"'”’)]»\t\n\v\f\r \u00a0\u1680\u2000\u2005\u200a\u2028\u2029\u202f\u205f\u3000\ufeff¿‘“([«\u200b\u0085x.!😀".split(
    "",
  ),
);
const text = fc
  .array(fc.oneof(special, fc.string({ unit: "grapheme", maxLength: 3 }), fc.string({ unit: "binary" })), {
    maxLength: 12,
  })
  .map((parts) => parts.join(""));

describe("a turn that asks a question", () => {
  test("endsWithQuestion says what ASKS_QUESTION says, for any text", () => {
    fc.assert(
      fc.property(text, (t) => {
        expect(endsWithQuestion(t)).toBe(ASKS_QUESTION.test(t));
      }),
      { numRuns: 5000 },
    );
  });

  test("examples: closers and spaces after the mark; a mark inside the text only with questionAt anywhere", () => {
    expect(asksQuestion("Did you name the puppy?", "end")).toBe(true);
    expect(asksQuestion("He asked “which brand？”)\u3000\n", undefined)).toBe(true);
    expect(asksQuestion("هل سميته؟ »", "end")).toBe(true);
    expect(asksQuestion("Which one? I need to tell them.", "end")).toBe(false);
    expect(asksQuestion("Which one? I need to tell them.", "anywhere")).toBe(true);
    expect(asksQuestion("¿Qué", "end")).toBe(false);
    expect(asksQuestion("", "end")).toBe(false);
    expect(asksQuestion("?\u200b", "end")).toBe(false);
  });
});
