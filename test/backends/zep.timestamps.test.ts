import fc from "fast-check";
import { toIsoTimestamp } from "../../src/backends/zep/map";
import { ISO_EDGE_CASES, isoLikeTimestamp } from "../helpers/iso-timestamps";

/** `toIsoTimestamp` as written before its fast path for timestamps already in `toISOString`'s form. */
function reference(value: unknown): string | undefined {
  if (typeof value !== "string") return undefined;
  const m = /^(\d{4}-\d{2}-\d{2})[T ](\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?)(Z|[+-]\d{2}:?\d{2})?$/i.exec(
    value.trim(),
  );
  if (m === null) return undefined;
  const ms = Date.parse(`${m[1]}T${m[2]}${m[3] ?? "Z"}`);
  if (
    Number.isNaN(ms) ||
    ms <= Date.parse("0001-01-01T00:00:00Z") ||
    ms > Date.UTC(9999, 11, 31, 23, 59, 59, 999)
  )
    return undefined;
  return new Date(ms).toISOString();
}

describe("toIsoTimestamp", () => {
  test("its fast path for toISOString's form answers as parsing and writing the date again would", () => {
    for (const value of ISO_EDGE_CASES)
      expect([value, toIsoTimestamp(value)]).toEqual([value, reference(value)]);
    fc.assert(
      fc.property(isoLikeTimestamp, (value) => {
        expect(toIsoTimestamp(value)).toBe(reference(value));
      }),
      { numRuns: 20_000 },
    );
  });
});
