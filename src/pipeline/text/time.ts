/**
 * Deterministic timestamps for the system prompt (docs/policy.md#format): never the host's locale or time zone.
 *
 * - `timeZone === "UTC"`: ISO 8601 in UTC without milliseconds, `2026-03-01T14:05:00Z`.
 * - any other IANA zone: the wall time there with its UTC offset, `2026-03-01T15:05:00+01:00`
 *   (RFC 3339 form; the offset follows daylight saving time at that instant).
 */

const formatters = new Map<string, Intl.DateTimeFormat>();

/** One formatter per zone for the life of the process (building one costs far more than using it). */
function formatterFor(timeZone: string): Intl.DateTimeFormat {
  let formatter = formatters.get(timeZone);
  if (formatter === undefined) {
    formatter = new Intl.DateTimeFormat("en-US", {
      timeZone,
      hourCycle: "h23",
      era: "short",
      year: "numeric",
      month: "2-digit",
      day: "2-digit",
      hour: "2-digit",
      minute: "2-digit",
      second: "2-digit",
    });
    formatters.set(timeZone, formatter);
  }
  return formatter;
}

/** `2026-03-01T14:05` or `…:00(.000)`, no `Z` or offset: JavaScript would read it in the host's zone. */
const ZONELESS_DATE_TIME = /^[+-]?\d{4,6}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?$/;

const pad = (n: number, width = 2): string => String(n).padStart(width, "0");

/** `+01:00`, `-04:00`, `+05:30`; historical offsets with seconds (local mean time) keep them: `+00:09:21`. */
function formatOffset(offsetSeconds: number): string {
  const sign = offsetSeconds < 0 ? "-" : "+";
  const abs = Math.abs(offsetSeconds);
  const hours = Math.floor(abs / 3600);
  const minutes = Math.floor((abs % 3600) / 60);
  const seconds = abs % 60;
  return `${sign}${pad(hours)}:${pad(minutes)}${seconds === 0 ? "" : `:${pad(seconds)}`}`;
}

/** ISO 8601 without milliseconds or zone designator: `2026-03-01T14:05:00` (years outside 0–9999 signed). */
function isoWithoutZone(ms: number): string {
  const iso = new Date(ms).toISOString(); // always ends with ".sssZ"
  return iso.slice(0, iso.length - 5);
}

/** Offset of `timeZone` from UTC at the instant `ms` (a whole second), in seconds. */
function offsetSecondsAt(ms: number, timeZone: string): number {
  const parts: Partial<Record<Intl.DateTimeFormatPartTypes, string>> = {};
  for (const { type, value } of formatterFor(timeZone).formatToParts(ms)) parts[type] = value;
  const yearOfEra = Number(parts.year ?? 0);
  const year = parts.era?.startsWith("B") ? 1 - yearOfEra : yearOfEra;
  const wall = new Date(0);
  // setUTCFullYear, not Date.UTC: Date.UTC maps years 0–99 to 1900–1999.
  wall.setUTCFullYear(year, Number(parts.month ?? 1) - 1, Number(parts.day ?? 1));
  wall.setUTCHours(Number(parts.hour ?? 0), Number(parts.minute ?? 0), Number(parts.second ?? 0), 0);
  return Math.round((wall.getTime() - ms) / 1000);
}

/** `YYYY-MM-DDTHH:MM:SS.sssZ` or `YYYY-MM-DDTHH:MM:SSZ`: what `toISOString` writes (and backends send). */
const ISO_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{3})?Z$/;
/** Days in each month of a common year. */
const MONTH_DAYS = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

/** The number written by the ASCII digits `s[start, end)` (the caller has checked that they are digits). */
function digits(s: string, start: number, end: number): number {
  let n = 0;
  for (let i = start; i < end; i++) n = n * 10 + s.charCodeAt(i) - 48;
  return n;
}

/**
 * Whether `value` is in `toISOString`'s form (`YYYY-MM-DDTHH:MM:SS.sssZ`, or without `.sss`) with every field
 * in range: a real day of its month (proleptic Gregorian), hours 00–23, minutes and seconds 00–59. Such a
 * timestamp is what `toISOString` writes back for its instant (with `.000` when it has no milliseconds), so
 * it need not be parsed into a Date and written out again to be normalized or rendered.
 */
export function isIsoUtc(value: string): boolean {
  if ((value.length !== 24 && value.length !== 20) || !ISO_UTC.test(value)) return false;
  const year = digits(value, 0, 4);
  const month = digits(value, 5, 7);
  const day = digits(value, 8, 10);
  if (month < 1 || month > 12 || day < 1) return false;
  const leap = month === 2 && year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
  if (day > (MONTH_DAYS[month - 1] ?? 0) + (leap ? 1 : 0)) return false;
  return digits(value, 11, 13) <= 23 && digits(value, 14, 16) <= 59 && digits(value, 17, 19) <= 59;
}

/**
 * Epoch milliseconds of `iso` (any string `Date.parse` accepts), NaN when it does not parse. A date-time
 * without an offset is read as UTC: `Date.parse` would read it in the host's time zone, so the instant (and
 * every order or tie-break built on it) would change with `TZ`.
 */
export function parseTimestamp(iso: string): number {
  return Date.parse(ZONELESS_DATE_TIME.test(iso) ? `${iso}Z` : iso);
}

/**
 * Renders `iso` (any string `Date.parse` accepts) as described above. A date-time without an offset is read
 * as UTC (see `parseTimestamp`). A timestamp that does not parse is returned unchanged, which is still
 * deterministic.
 */
export function formatTimestamp(iso: string, timeZone: string): string {
  // Already ISO 8601 UTC: the same text without its milliseconds (what the general path below writes).
  if (timeZone === "UTC" && isIsoUtc(iso)) return `${iso.slice(0, 19)}Z`;
  const ms = parseTimestamp(iso);
  if (Number.isNaN(ms)) return iso;
  const seconds = Math.floor(ms / 1000) * 1000; // milliseconds are dropped, never rounded
  if (timeZone === "UTC") return `${isoWithoutZone(seconds)}Z`;
  const offset = offsetSecondsAt(seconds, timeZone);
  return `${isoWithoutZone(seconds + offset * 1000)}${formatOffset(offset)}`;
}
