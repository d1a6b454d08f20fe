import fc from "fast-check";
import { formatTimestamp } from "../../src/pipeline/text/time";

/** `formatTimestamp(iso, "UTC")` as written before its fast path: parsed into a Date and written out again. */
function reference(iso: string): string {
  const ms = Date.parse(
    /^[+-]?\d{4,6}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?$/.test(iso) ? `${iso}Z` : iso,
  );
  if (Number.isNaN(ms)) return iso;
  const text = new Date(Math.floor(ms / 1000) * 1000).toISOString();
  return `${text.slice(0, text.length - 5)}Z`;
}

const pad = (n: number, width: number) => String(n).padStart(width, "0");

describe("formatTimestamp in UTC", () => {
  test("its fast path for toISOString's form renders as parsing the date would", () => {
    const edges = [
      "0000-01-01T00:00:00.000Z",
      "0000-02-29T00:00:00Z",
      "9999-12-31T23:59:59.999Z",
      "2024-02-29T12:00:00Z",
      "2023-02-29T12:00:00Z",
      "1900-02-29T00:00:00.000Z",
      "2000-02-29T00:00:00.000Z",
      "2026-04-31T00:00:00.000Z",
      "2026-01-01T24:00:00.000Z",
      "2026-01-01T23:60:00Z",
      "2026-01-01T23:59:60Z",
      "2026-00-10T00:00:00Z",
      "2026-13-10T00:00:00Z",
      "2026-01-00T00:00:00Z",
      "2026-01-01T10:00:00.5Z",
      "2026-01-01T10:00:00+02:00",
    ];
    for (const value of edges)
      expect([value, formatTimestamp(value, "UTC")]).toEqual([value, reference(value)]);
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 9999 }),
        fc.integer({ min: 0, max: 13 }),
        fc.integer({ min: 0, max: 32 }),
        fc.integer({ min: 0, max: 24 }),
        fc.integer({ min: 0, max: 60 }),
        fc.integer({ min: 0, max: 60 }),
        fc.option(fc.integer({ min: 0, max: 999 })),
        (y, mo, d, h, mi, s, millis) => {
          const value = `${pad(y, 4)}-${pad(mo, 2)}-${pad(d, 2)}T${pad(h, 2)}:${pad(mi, 2)}:${pad(s, 2)}${millis === null ? "" : `.${pad(millis, 3)}`}Z`;
          expect(formatTimestamp(value, "UTC")).toBe(reference(value));
        },
      ),
      { numRuns: 20_000 },
    );
  });
});
