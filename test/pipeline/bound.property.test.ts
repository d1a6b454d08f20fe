/**
 * The per-memory work bound (src/pipeline/bound.ts): a memory over the bound becomes a marked prefix of itself, never
 * longer than the bound plus its marker, never splitting a grapheme cluster when a boundary is near; one under it
 * is left alone. Issue 26, finding 3 (the HTTP-level proof: test/security/finding-03-huge-memory.test.ts).
 */
import fc from "fast-check";
import { boundText, WORK_BOUND_MARKER, workBoundChars } from "../../src/pipeline/bound";

const graphemes = (text: string) =>
  Array.from(new Intl.Segmenter("en", { granularity: "grapheme" }).segment(text), (s) => s.index);

describe("boundText", () => {
  test("text within the bound is returned as it is", () => {
    fc.assert(
      fc.property(
        fc.string({ unit: "grapheme", maxLength: 200 }),
        fc.integer({ min: 200, max: 400 }),
        (t, limit) => {
          expect(boundText(t, Math.max(limit, t.length))).toBe(t);
        },
      ),
    );
  });

  test("longer text: a prefix at a grapheme boundary, at most limit + the marker, ending with the marker", () => {
    fc.assert(
      fc.property(
        fc.string({ unit: "grapheme", minLength: 50, maxLength: 600 }),
        fc.integer({ min: 1, max: 300 }),
        (t, limit) => {
          // (A first cluster longer than the bound, or than the 64 units looked at, is split: no other cut exists.)
          fc.pre(t.length > limit && (graphemes(t)[1] ?? t.length) <= limit);
          const out = boundText(t, limit);
          expect(out.endsWith(WORK_BOUND_MARKER) || out.endsWith("…")).toBe(true);
          const kept = out.endsWith(WORK_BOUND_MARKER) && !t.startsWith(out) ? out.slice(0, -3) : out;
          expect(t.startsWith(kept)).toBe(true);
          expect(kept.length).toBeLessThanOrEqual(limit);
          expect(graphemes(t)).toContain(kept.length);
        },
      ),
    );
  });

  test("cuts at the last whitespace before the bound, without trailing whitespace", () => {
    expect(boundText("alpha beta gamma delta", 13)).toBe("alpha beta...");
    expect(boundText("alpha beta  \n gamma", 14)).toBe("alpha beta...");
  });

  test("one long word is cut at the bound, outside any cluster", () => {
    expect(boundText("a".repeat(100), 10)).toBe(`${"a".repeat(10)}...`);
    const family = "👨‍👩‍👧";
    const out = boundText(family.repeat(10), family.length * 3 + 2);
    expect(out).toBe(`${family.repeat(3)}...`);
  });

  test("costs the bound, not the text: 7 MB in well under a millisecond per call", () => {
    const huge = "a".repeat(7_000_000);
    const limit = workBoundChars(1500);
    const started = process.cpuUsage(); // CPU time: a loaded machine's wall clock does not count
    for (let i = 0; i < 100; i++) boundText(huge, limit);
    expect(boundText(huge, limit)).toHaveLength(limit + 3);
    const { user, system } = process.cpuUsage(started);
    expect((user + system) / 1000 / 100).toBeLessThan(5);
  });
});
