/**
 * The time a question is about ("last month", "in May", "two weeks ago", "yesterday", "before the wedding"),
 * resolved against the turn's time (seed 001 "Temporal extraction"). Deterministic: the only clock is the
 * `turnTime` the caller passes; calendar arithmetic is in UTC. English first, then French, Spanish and German,
 * the golden set's languages. A phrase that names an event instead of a date ("before the wedding") is kept
 * as an anchor: the rank stage resolves it against the candidates (the first memory that mentions it).
 */

export interface TimeScope {
  /** Epoch ms, inclusive. `-Infinity` for "before …" with no lower bound. */
  start: number;
  /** Epoch ms, exclusive. `Infinity` for "after …". */
  end: number;
  /** The phrase as found (lower-cased), for explain. */
  phrase: string;
}

export interface EventAnchor {
  relation: "before" | "after";
  /** The words naming the event, lower-cased ("the wedding" → "wedding"). */
  words: string[];
  phrase: string;
}

const DAY = 86_400_000;

const MONTHS: Record<string, number> = {};
const MONTH_NAMES: string[][] = [
  ["january", "jan", "janvier", "janv", "enero", "januar", "jänner"],
  ["february", "feb", "février", "fevrier", "févr", "febrero", "februar"],
  ["march", "mar", "mars", "marzo", "märz", "maerz"],
  ["april", "apr", "avril", "abril"],
  ["may", "mai", "mayo"],
  ["june", "jun", "juin", "junio", "juni"],
  ["july", "jul", "juillet", "julio", "juli"],
  ["august", "aug", "août", "aout", "agosto"],
  ["september", "sep", "sept", "septembre", "septiembre", "setiembre"],
  ["october", "oct", "octobre", "octubre", "oktober", "okt"],
  ["november", "nov", "novembre", "noviembre"],
  ["december", "dec", "décembre", "decembre", "diciembre", "dezember", "dez"],
];
MONTH_NAMES.forEach((names, i) => {
  for (const n of names) MONTHS[n] = i;
});

const NUMBER_WORDS: Record<string, number> = {
  a: 1,
  an: 1,
  one: 1,
  two: 2,
  three: 3,
  four: 4,
  five: 5,
  six: 6,
  seven: 7,
  eight: 8,
  nine: 9,
  ten: 10,
  couple: 2,
  few: 3,
  several: 3,
  un: 1,
  une: 1,
  deux: 2,
  trois: 3,
  quatre: 4,
  cinq: 5,
  sept: 7,
  huit: 8,
  neuf: 9,
  dix: 10,
  quelques: 3,
  uno: 1,
  una: 1,
  dos: 2,
  tres: 3,
  cuatro: 4,
  cinco: 5,
  seis: 6,
  siete: 7,
  ocho: 8,
  nueve: 9,
  diez: 10,
  unos: 3,
  unas: 3,
  ein: 1,
  eine: 1,
  einem: 1,
  einer: 1,
  zwei: 2,
  drei: 3,
  vier: 4,
  fünf: 5,
  sechs: 6,
  sieben: 7,
  acht: 8,
  neun: 9,
  zehn: 10,
  paar: 2,
  einigen: 3,
};

const UNIT_DAYS: Record<string, number> = {};
for (const w of ["day", "days", "jour", "jours", "día", "dia", "días", "dias", "tag", "tagen", "tage"])
  UNIT_DAYS[w] = 1;
for (const w of ["week", "weeks", "semaine", "semaines", "semana", "semanas", "woche", "wochen"])
  UNIT_DAYS[w] = 7;
for (const w of ["month", "months", "mois", "mes", "meses", "monat", "monaten", "monate"]) UNIT_DAYS[w] = 30;
for (const w of ["year", "years", "an", "ans", "année", "années", "año", "años", "jahr", "jahren", "jahre"])
  UNIT_DAYS[w] = 365;

function startOfDay(t: number): number {
  return Math.floor(t / DAY) * DAY;
}

function monthRange(year: number, month: number): [number, number] {
  return [Date.UTC(year, month, 1), Date.UTC(year, month + 1, 1)];
}

/** Monday-based week start (UTC). */
function startOfWeek(t: number): number {
  const d = startOfDay(t);
  const dow = (new Date(d).getUTCDay() + 6) % 7;
  return d - dow * DAY;
}

const WORD = /[\p{L}\p{M}\p{N}]+/gu;

function words(text: string): string[] {
  return text.toLowerCase().match(WORD) ?? [];
}

const LAST = new Set([
  "last",
  "past",
  "dernier",
  "dernière",
  "derniere",
  "passé",
  "passée",
  "pasado",
  "pasada",
  "letzten",
  "letzte",
  "letztes",
  "letzter",
  "vergangenen",
  "vergangene",
]);
const THIS = new Set(["this", "ce", "cette", "este", "esta", "diesen", "diese", "dieses", "diesem"]);
const AGO_AFTER = new Set(["ago"]);
const AGO_BEFORE = new Set(["vor", "hace", "il"]); // "il y a", "hace", "vor"
const YESTERDAY = new Set(["yesterday", "hier", "ayer", "gestern"]);
const TODAY = new Set(["today", "tonight", "aujourd", "hoy", "heute"]);
const RECENT = new Set([
  "recently",
  "lately",
  "récemment",
  "recemment",
  "recientemente",
  "últimamente",
  "ultimamente",
  "kürzlich",
  "neulich",
  "letztens",
]);
const WEEKEND = new Set(["weekend", "week", "finde", "wochenende"]);
/** "last night" / "anoche": the evening before the turn (said that night or the morning after). */
const LAST_NIGHT = new Set(["anoche"]);
const NIGHT = new Set(["night", "evening"]);
/** Monday = 0 … Sunday = 6 (the week as `startOfWeek` counts it). */
const WEEKDAYS: Record<string, number> = {};
[
  ["monday", "lundi", "lunes", "montag"],
  ["tuesday", "mardi", "martes", "dienstag"],
  ["wednesday", "mercredi", "miércoles", "miercoles", "mittwoch"],
  ["thursday", "jeudi", "jueves", "donnerstag"],
  ["friday", "vendredi", "viernes", "freitag"],
  ["saturday", "samedi", "sábado", "sabado", "samstag"],
  ["sunday", "dimanche", "domingo", "sonntag"],
].forEach((names, i) => {
  for (const n of names) WEEKDAYS[n] = i;
});
/** Which part of a month a modifier before its name means ("early May", "fin mars", "a finales de mayo", "Ende Mai"). */
const MONTH_PART: Record<string, "early" | "mid" | "late"> = {};
for (const w of [
  "early",
  "start",
  "beginning",
  "début",
  "debut",
  "principios",
  "comienzos",
  "inicios",
  "anfang",
])
  MONTH_PART[w] = "early";
for (const w of ["mid", "middle", "mediados", "mitte"]) MONTH_PART[w] = "mid";
/** The words allowed between such a modifier and the month ("the end of August", "a principios de mayo"). */
const PART_LINK = new Set(["of", "the", "de", "del", "d", "in", "im"]);
for (const w of ["late", "end", "fin", "finales", "fines", "ende"]) MONTH_PART[w] = "late";
const BEFORE = new Set(["before", "avant", "antes", "vor"]);
const AFTER = new Set(["after", "après", "apres", "después", "despues", "nach"]);
const ARTICLES = new Set([
  "the",
  "my",
  "his",
  "her",
  "their",
  "our",
  "le",
  "la",
  "les",
  "l",
  "du",
  "de",
  "des",
  "mon",
  "ma",
  "son",
  "sa",
  "el",
  "los",
  "las",
  "mi",
  "su",
  "del",
  "der",
  "die",
  "das",
  "dem",
  "den",
  "des",
  "meiner",
  "meinem",
  "seiner",
  "ihrer",
  "a",
  "an",
]);
const EVENT_STOP = new Set(["it", "that", "this", "then", "ça", "cela", "eso", "esto", "dem", "das"]);

/** Resolves the question's time scope against `turnTime` (epoch ms). */
export function resolveTimeScope(query: string, turnTime: number): TimeScope | undefined {
  const w = words(query);
  const lower = query.toLowerCase();
  const today = startOfDay(turnTime);
  // Absolute ISO date: 2024-05-12.
  const iso = /\b(\d{4})-(\d{2})-(\d{2})\b/.exec(query);
  if (iso) {
    const start = Date.UTC(Number(iso[1]), Number(iso[2]) - 1, Number(iso[3]));
    if (!Number.isNaN(start)) return { start, end: start + DAY, phrase: iso[0] };
  }
  for (let i = 0; i < w.length; i++) {
    const a = w[i] ?? "";
    const b = w[i + 1] ?? "";
    const c = w[i + 2] ?? "";
    if (YESTERDAY.has(a)) return { start: today - DAY, end: today, phrase: a };
    if (LAST_NIGHT.has(a) || (LAST.has(a) && NIGHT.has(b)))
      return { start: today - DAY, end: today + DAY, phrase: LAST_NIGHT.has(a) ? a : `${a} ${b}` };
    // "last Saturday", "dimanche dernier", "el domingo pasado", "letzten Sonntag": the latest such day before
    // the turn's day (and the day after it, when it was told).
    const dayAfter = WEEKDAYS[b];
    const dayBefore = WEEKDAYS[a];
    if ((LAST.has(a) && dayAfter !== undefined) || (dayBefore !== undefined && LAST.has(b))) {
      const dow = (dayAfter ?? dayBefore) as number;
      const back = (((new Date(today).getUTCDay() + 6) % 7) - dow + 7) % 7 || 7;
      return { start: today - back * DAY, end: today - back * DAY + 2 * DAY, phrase: `${a} ${b}` };
    }
    // "early September", "at the start of August", "fin mars", "a finales de mayo", "Mitte Mai": that part of the
    // month (a few days' overlap either side).
    const part = MONTH_PART[a];
    if (part !== undefined) {
      let j = i + 1;
      while (j < i + 4 && PART_LINK.has(w[j] ?? "")) j++;
      const m = MONTHS[w[j] ?? ""];
      if (m !== undefined && (w[j] ?? "").length >= 3) {
        const yearWord = w[j + 1] ?? "";
        const year = /^\d{4}$/.test(yearWord) ? Number(yearWord) : yearOfLast(m, turnTime);
        const [monthStart, monthEnd] = monthRange(year, m);
        const start = part === "early" ? monthStart : monthStart + (part === "mid" ? 7 : 17) * DAY;
        const end = part === "late" ? monthEnd : monthStart + (part === "mid" ? 23 : 12) * DAY;
        return { start, end, phrase: w.slice(i, j + 1).join(" ") };
      }
    }
    if (TODAY.has(a)) return { start: today, end: today + DAY, phrase: a };
    if (RECENT.has(a)) return { start: today - 14 * DAY, end: today + DAY, phrase: a };
    // "two weeks ago", "3 days ago"
    if (AGO_AFTER.has(c)) {
      const n = NUMBER_WORDS[a] ?? (/^\d{1,3}$/.test(a) ? Number(a) : undefined);
      const unit = UNIT_DAYS[b];
      if (n !== undefined && unit !== undefined)
        return around(today - n * unit * DAY, unit, `${a} ${b} ${c}`);
    }
    // "il y a deux semaines", "hace dos semanas", "vor zwei Wochen"
    if (AGO_BEFORE.has(a)) {
      let j = i + 1;
      if (a === "il" && w[j] === "y" && w[j + 1] === "a") j += 2;
      else if (a === "il") continue;
      const nw = w[j] ?? "";
      const n = NUMBER_WORDS[nw] ?? (/^\d{1,3}$/.test(nw) ? Number(nw) : undefined);
      const unit = UNIT_DAYS[w[j + 1] ?? ""];
      if (n !== undefined && unit !== undefined)
        return around(today - n * unit * DAY, unit, w.slice(i, j + 2).join(" "));
    }
    // "last week / month / year / weekend", "la semaine dernière", "el mes pasado", "letzte Woche"
    const unitAfter = UNIT_DAYS[b];
    if (LAST.has(a) && (unitAfter !== undefined || WEEKEND.has(b))) return lastUnit(b, today, `${a} ${b}`);
    const unitBefore = UNIT_DAYS[a];
    if (unitBefore !== undefined && LAST.has(b)) return lastUnit(a, today, `${a} ${b}`);
    if ((a === "le" || a === "ce") && (b === "week" || b === "weekend") && LAST.has(c))
      return lastUnit("weekend", today, `${a} ${b} ${c}`);
    if (THIS.has(a) && unitAfter !== undefined) return thisUnit(b, today, `${a} ${b}`);
    // "in May", "en mai", "im Mai", "in May 2024"
    const month = MONTHS[b];
    if (
      (a === "in" || a === "en" || a === "im" || a === "during" || a === "de" || a === "del") &&
      month !== undefined &&
      b.length >= 3
    ) {
      const year = /^\d{4}$/.test(c) ? Number(c) : yearOfLast(month, turnTime);
      const [start, end] = monthRange(year, month);
      return { start, end, phrase: `${a} ${b}${/^\d{4}$/.test(c) ? ` ${c}` : ""}` };
    }
  }
  // "on May 12", "12 May", "le 12 mai", "el 12 de mayo", "am 12. Mai"
  const dayMonth = /\b(\d{1,2})\.?\s+(?:de\s+)?([\p{L}]{3,})\b/u.exec(lower);
  if (dayMonth) {
    const month = MONTHS[dayMonth[2] ?? ""];
    if (month !== undefined) return dayOf(Number(dayMonth[1]), month, turnTime, dayMonth[0]);
  }
  const monthDay = /\b([\p{L}]{3,})\s+(\d{1,2})(?:st|nd|rd|th)?\b/u.exec(lower);
  if (monthDay) {
    const month = MONTHS[monthDay[1] ?? ""];
    if (month !== undefined) return dayOf(Number(monthDay[2]), month, turnTime, monthDay[0]);
  }
  return undefined;
}

function dayOf(day: number, month: number, turnTime: number, phrase: string): TimeScope | undefined {
  if (day < 1 || day > 31) return undefined;
  const year = yearOfLast(month, turnTime);
  const start = Date.UTC(year, month, day);
  return { start, end: start + DAY, phrase };
}

/** The year of the latest `month` that began no later than the turn's month. */
function yearOfLast(month: number, turnTime: number): number {
  const d = new Date(turnTime);
  const y = d.getUTCFullYear();
  return month <= d.getUTCMonth() ? y : y - 1;
}

/** A window around a point `n units ago`: ± half a unit (at least a day either side). */
function around(point: number, unitDays: number, phrase: string): TimeScope {
  const half = Math.max(1, Math.round(unitDays / 2)) * DAY;
  return { start: point - half, end: point + half + DAY, phrase };
}

function lastUnit(unit: string, today: number, phrase: string): TimeScope {
  if (WEEKEND.has(unit) && unit !== "week") {
    const monday = startOfWeek(today);
    const saturday = monday - 2 * DAY;
    return { start: saturday, end: saturday + 2 * DAY, phrase };
  }
  const days = UNIT_DAYS[unit] ?? 7;
  if (days === 7) {
    const monday = startOfWeek(today);
    return { start: monday - 7 * DAY, end: monday, phrase };
  }
  if (days === 30) {
    const d = new Date(today);
    const [start, end] = monthRange(d.getUTCFullYear(), d.getUTCMonth() - 1);
    return { start, end, phrase };
  }
  if (days === 365) {
    const y = new Date(today).getUTCFullYear() - 1;
    return { start: Date.UTC(y, 0, 1), end: Date.UTC(y + 1, 0, 1), phrase };
  }
  return { start: today - DAY, end: today, phrase };
}

function thisUnit(unit: string, today: number, phrase: string): TimeScope {
  const days = UNIT_DAYS[unit] ?? 7;
  const d = new Date(today);
  if (days === 7) return { start: startOfWeek(today), end: today + DAY, phrase };
  if (days === 30)
    return { start: Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1), end: today + DAY, phrase };
  if (days === 365) return { start: Date.UTC(d.getUTCFullYear(), 0, 1), end: today + DAY, phrase };
  return { start: today, end: today + DAY, phrase };
}

/** "before the wedding", "avant le mariage", "nach der Hochzeit": the event named after the preposition. */
export function findEventAnchor(query: string): EventAnchor | undefined {
  const w = words(query);
  for (let i = 0; i < w.length; i++) {
    const a = w[i] ?? "";
    const relation = BEFORE.has(a) ? "before" : AFTER.has(a) ? "after" : undefined;
    if (relation === undefined) continue;
    // "vor zwei Wochen" is a time ago, not an event.
    const next = w[i + 1] ?? "";
    if (NUMBER_WORDS[next] !== undefined || /^\d+$/.test(next)) continue;
    const picked: string[] = [];
    for (let j = i + 1; j < w.length && picked.length < 2; j++) {
      const x = w[j] ?? "";
      if (ARTICLES.has(x)) continue;
      if (EVENT_STOP.has(x) || x.length < 3) break;
      picked.push(x);
    }
    if (picked.length > 0) return { relation, words: picked, phrase: `${a} ${picked.join(" ")}` };
  }
  return undefined;
}
