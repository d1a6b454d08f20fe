import fc from "fast-check";
import { toIsoTimestamp } from "../../src/backends/zep/map";

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

const pad = (n: number, width: number) => String(n).padStart(width, "0");

describe("toIsoTimestamp", () => {
  test("its fast path for toISOString's form answers as parsing and writing the date again would", () => {
    const edges = [
      "0000-01-01T00:00:00.000Z",
      "0001-01-01T00:00:00.000Z",
      "0001-01-01T00:00:00Z",
      "0001-01-01T00:00:00.001Z",
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
      "2026-01-01T10:00:00.123456Z",
      "2026-01-01 10:00:00Z",
      " 2026-01-01T10:00:00Z",
      "2026-01-01t10:00:00z",
      "2026-01-01T10:00Z",
      "2026-01-01T10:00:00+02:00",
    ];
    for (const value of edges) expect([value, toIsoTimestamp(value)]).toEqual([value, reference(value)]);
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
          expect(toIsoTimestamp(value)).toBe(reference(value));
        },
      ),
      { numRuns: 20_000 },
    );
  });
});
