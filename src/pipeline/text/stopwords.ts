import { stopwords as dutch } from "@orama/stopwords/dutch";
import { stopwords as french } from "@orama/stopwords/french";
import { stopwords as german } from "@orama/stopwords/german";
import { stopwords as italian } from "@orama/stopwords/italian";
import { stopwords as portuguese } from "@orama/stopwords/portuguese";
import { stopwords as spanish } from "@orama/stopwords/spanish";

/**
 * Function words per language, and which of them a query drops (backends/local/query.ts `queryTerms` for the local
 * backend and text/relevance.ts for the clip stage: the same reading). Memories keep theirs; only a query loses them.
 *
 * Lists: English is memgate's own (below, chosen on the golden set before there were others); French, German,
 * Italian, Portuguese and Dutch are Snowball's lists as @orama/stopwords ships them, Spanish is its longer
 * list less the content words it holds (numbers, days and hours, "trabajo", "nuevo", …), and each one gains
 * its question words where the list lacks them ("combien", "wann", "hoeveel"): English drops "what", "when",
 * "how", so the others drop theirs.
 *
 * Why not one union of every list: it would drop real content words of another language: English "son", "die",
 * "once", "hat", French "son", "est", German "die" ("who is my son's teacher?" would lose "son"). A query drops
 * only the function words of the language it seems to be in (`queryStopwords`).
 */

/** Languages with a stopword list, in the order ties are broken (English first). */
export const STOP_LANGUAGES = ["en", "fr", "es", "de", "it", "pt", "nl"] as const;
export type StopLanguage = (typeof STOP_LANGUAGES)[number];

/**
 * English function words: they carry no topic. A query ("what do I usually order?") keeps only its content
 * words for search and sentence scoring.
 */
const ENGLISH =
  "a about above after again all am an and any are as at be been before being below between both but by " +
  "can could did do does doing down during each few for from further had has have having he her here hers " +
  "him his how i if in into is it its just me more most my no nor not now of off on once " +
  "only or other our ours out over own please same she should so some such than that the their theirs them " +
  "then there these they this those through to too under until up very was we were what when where which " +
  "while who whom why will with would you your yours " +
  // Fragments left by splitting contractions at the apostrophe: don't → don + t, I'd → i + d.
  "d don ll m re s t ve";

/** Question words and the like that a list lacks; "a" is French's "has" (Snowball lists only "ai", "as"). */
const ADDED: Readonly<Partial<Record<StopLanguage, string>>> = {
  fr: "a où combien comment quand pourquoi quoi dont lequel laquelle lesquels lesquelles jusqu",
  es: "adónde",
  de: "ab wann warum wieso weshalb wer wen wem wessen woher wohin wofür womit viele",
  it: "quando cosa",
  pt: "é onde aonde porque porquê quanto quanta quantos quantas quais",
  nl: "wanneer waar waarom welke welk hoeveel",
};

/** Words of a list that carry a topic: a question about them must keep them ("¿Qué día…?", "¿A qué hora…?"). */
const REMOVED: Readonly<Partial<Record<StopLanguage, string>>> = {
  es:
    "dos tres cuatro cinco seis siete ocho ayer hoy tarde temprano dia dias día días horas tiempo momento " +
    "pronto primer primera primero primeros segunda segundo tercera último última últimos últimas ultimo " +
    "próximo proximo próximos pasada pasado trabajo trabaja trabajar trabajan trabajamos trabajas trabajais " +
    "lugar pais paìs valor verdad verdadera verdadero ejemplo final fin total lado parte general gran grandes " +
    "mayor mejor peor bueno buena buenos buenas buen mal nueva nuevas nuevo nuevos largo medio",
};

/** Words as query terms are: NFKC, lower case (text/terms.ts). */
function normalized(words: readonly string[]): string[] {
  return words.map((w) => w.normalize("NFKC").toLowerCase()).filter((w) => w !== "");
}

function list(language: StopLanguage, base: readonly string[]): ReadonlySet<string> {
  const removed = new Set(normalized((REMOVED[language] ?? "").split(" ")));
  const words = normalized([...base, ...(ADDED[language] ?? "").split(" ")]);
  return new Set(words.filter((w) => !removed.has(w)));
}

/** Each language's function words (NFKC, lower case). */
export const STOPWORD_LISTS: Readonly<Record<StopLanguage, ReadonlySet<string>>> = {
  en: list("en", ENGLISH.split(" ")),
  fr: list("fr", french),
  es: list("es", spanish),
  de: list("de", german),
  it: list("it", italian),
  pt: list("pt", portuguese),
  nl: list("nl", dutch),
};

/** English function words (the list a query with no function word of any language falls back on). */
export const STOPWORDS: ReadonlySet<string> = STOPWORD_LISTS.en;

/** The function words one query drops, and the language they were chosen for. */
export interface QueryStopwords {
  readonly language: StopLanguage;
  /** Whether `word` (NFKC, lower case, unstemmed) is one of them. */
  has(word: string): boolean;
}

const BY_LANGUAGE: Readonly<Record<StopLanguage, QueryStopwords>> = Object.fromEntries(
  STOP_LANGUAGES.map((language) => {
    const words = STOPWORD_LISTS[language];
    return [language, { language, has: (word: string) => words.has(word) }];
  }),
) as Record<StopLanguage, QueryStopwords>;

/** For each function word, the languages that list it (bit `l` for `STOP_LANGUAGES[l]`): one lookup a word. */
const LANGUAGES_OF: ReadonlyMap<string, number> = (() => {
  const of = new Map<string, number>();
  STOP_LANGUAGES.forEach((language, l) => {
    for (const word of STOPWORD_LISTS[language]) of.set(word, (of.get(word) ?? 0) | (1 << l));
  });
  return of;
})();

/**
 * A cheap, deterministic guess of a query's language from its words (NFKC, lower case): the language whose
 * list holds the most of its distinct words; a tie, or no function word at all, is English. Words such as
 * "la", "de", "die" belong to several lists; it is the whole query's count that decides, so "when did my son
 * die" is English (when, did, my) and keeps "son" and "die", and "la date du mariage" is French.
 */
export function queryStopwords(words: Iterable<string>): QueryStopwords {
  const counts = new Array<number>(STOP_LANGUAGES.length).fill(0);
  const seen = new Set<string>();
  for (const word of words) {
    const mask = LANGUAGES_OF.get(word);
    if (mask === undefined || seen.has(word)) continue;
    seen.add(word);
    for (let l = 0; l < STOP_LANGUAGES.length; l++) if ((mask >> l) & 1) counts[l] = (counts[l] ?? 0) + 1;
  }
  let best = 0;
  let tied = false;
  for (let l = 1; l < counts.length; l++) {
    const c = counts[l] ?? 0;
    const top = counts[best] ?? 0;
    if (c > top) {
      best = l;
      tied = false;
    } else if (c === top) {
      tied = true;
    }
  }
  return BY_LANGUAGE[tied ? "en" : (STOP_LANGUAGES[best] ?? "en")];
}
