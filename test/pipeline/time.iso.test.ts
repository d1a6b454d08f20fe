import fc from "fast-check";
import { formatTimestamp } from "../../src/pipeline/text/time";
import { ISO_EDGE_CASES, isoLikeTimestamp } from "../helpers/iso-timestamps";

/** `formatTimestamp(iso, "UTC")` as written before its fast path: parsed into a Date and written out again. */
function reference(iso: string): string {
  const ms = Date.parse(
    /^[+-]?\d{4,6}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?$/.test(iso) ? `${iso}Z` : iso,
  );
  if (Number.isNaN(ms)) return iso;
  const text = new Date(Math.floor(ms / 1000) * 1000).toISOString();
  return `${text.slice(0, text.length - 5)}Z`;
}

describe("formatTimestamp in UTC", () => {
  test("its fast path for toISOString's form renders as parsing the date would", () => {
    for (const value of ISO_EDGE_CASES)
      expect([value, formatTimestamp(value, "UTC")]).toEqual([value, reference(value)]);
    fc.assert(
      fc.property(isoLikeTimestamp, (value) => {
        expect(formatTimestamp(value, "UTC")).toBe(reference(value));
      }),
      { numRuns: 20_000 },
    );
  });
});
