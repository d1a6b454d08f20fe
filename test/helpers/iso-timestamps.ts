import fc from "fast-check";

/**
 * Timestamps at the edges of `toISOString`'s form, for the fast paths that keep such a timestamp as its own text
 * (src/pipeline/text/time.ts `isIsoUtc`, used by the Zep mapping and the prompt's times): years 0000/0001/9999,
 * leap days that are and are not, out-of-range fields, fractions other than milliseconds, other forms.
 */
export const ISO_EDGE_CASES: readonly string[] = [
  "0000-01-01T00:00:00.000Z",
  "0000-02-29T00:00:00Z",
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

const pad = (n: number, width: number) => String(n).padStart(width, "0");

/** `YYYY-MM-DDTHH:MM:SS[.sss]Z` with every field from 0 to one past its range: valid dates and near misses. */
export const isoLikeTimestamp: fc.Arbitrary<string> = fc
  .tuple(
    fc.integer({ min: 0, max: 9999 }),
    fc.integer({ min: 0, max: 13 }),
    fc.integer({ min: 0, max: 32 }),
    fc.integer({ min: 0, max: 24 }),
    fc.integer({ min: 0, max: 60 }),
    fc.integer({ min: 0, max: 60 }),
    fc.option(fc.integer({ min: 0, max: 999 })),
  )
  .map(
    ([y, mo, d, h, mi, s, millis]) =>
      `${pad(y, 4)}-${pad(mo, 2)}-${pad(d, 2)}T${pad(h, 2)}:${pad(mi, 2)}:${pad(s, 2)}${millis === null ? "" : `.${pad(millis, 3)}`}Z`,
  );
