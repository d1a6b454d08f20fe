import { queryTermsForRelevance, relevanceQuery } from "../text/relevance";
import type { StopLanguage } from "../text/stopwords";
import { type EventAnchor, findEventAnchor, resolveTimeScope, type TimeScope } from "./time-scope";

/**
 * Query understanding (seed 001 stage 1, seed 004 complexity): what kind of answer a chat turn asks for, what it
 * names, what time it is about, and how much context it needs. Deterministic and cheap (tens of µs): word lists
 * and a few regular expressions, no model, no clock but the `turnTime` passed in. English first; French, Spanish
 * and German question words and time phrases too.
 */

export const INTENTS = ["factual", "procedural", "exploratory", "analytical"] as const;
export type Intent = (typeof INTENTS)[number];
export const ANSWER_TYPES = [
  "person",
  "place",
  "time",
  "number",
  "yesno",
  "list",
  "reason",
  "thing",
] as const;
export type AnswerType = (typeof ANSWER_TYPES)[number];

export interface QueryAnalysis {
  intent: Intent;
  answerType: AnswerType;
  /** Names, quoted titles and numbers the question mentions, as written. */
  entities: string[];
  /** Content terms as relevance scores them (stemmed, cut). */
  terms: string[];
  /** The language the query seems to be in (its function words); memories are stemmed the same way. */
  language: StopLanguage;
  timeScope?: TimeScope;
  /** "before the wedding": resolved against the candidates by the rank stage. */
  anchor?: EventAnchor;
  /** The question asks for the current state ("now", "currently", "latest", "still"). */
  wantsCurrent: boolean;
  /** Evidence likely spread over several memories (lists, "both", "and" between names, comparisons). */
  multiHop: boolean;
  /** Seed 004's complexity score, 0–1. */
  complexity: number;
  /** The turn's time (epoch ms) the scope was resolved against, when the caller gave one. */
  turnTime?: number;
}

const WORD = /[\p{L}\p{M}\p{N}']+/gu;

const TIME_Q = [
  /^(when|how long ago|since when)\b/,
  /\b(what|which) (time|date|dates|day|days|year|month|week|weekend)\b/,
  /\bthe (date|dates) of\b/,
  /\b(la date|les dates|quelles dates|quels jours|quel week-end)\b/,
  /\b(qué|que) (días|dias|fechas|fin de semana)\b/,
  /\b(welche tage|welches datum|welchem wochenende)\b/,
  /\b(quand|quelle date|en quelle année|quel jour|quelle année|quel mois|depuis quand|quelle heure)\b/,
  /(cuándo|\bcuando\b|\bqué año\b|\bque año\b|\bqué día\b|\bque dia\b|\bqué fecha\b|\bque fecha\b|\bqué mes\b|\bqué hora\b)/,
  /\b(wann|seit wann|an welchem tag|in welchem jahr|in welchem monat|welchem datum|um wie viel uhr)\b/,
];
const PERSON_Q = [
  /^(who|whom|whose|with whom)\b/,
  /\b(qui|avec qui|de qui)\b/,
  /\b(quién|quien|quiénes|con quién)\b/,
  /\b(wer|wem|wen|wessen|mit wem)\b/,
];
const PLACE_Q = [
  /^(where|which city|what city|which country|what country|which town|what town|what place|which place|which restaurant|what restaurant)\b/,
  /\b(où|ou est|dans quelle ville|quel pays|quelle ville)\b/,
  /\b(dónde|donde|adónde|en qué ciudad|qué país|que pais)\b/,
  /\b(wo|wohin|woher|in welcher stadt|welches land)\b/,
];
const NUMBER_Q = [
  /^(how many|how much|how old|how far|how long|what number|what percentage)\b/,
  /\b(combien|quel âge|quel age|quelle distance)\b/,
  /\b(cuántos|cuántas|cuánto|cuanto|cuantos|cuantas|qué edad|que edad)\b/,
  /\b(wie viele|wie viel|wieviel|wie alt|wie lange|wie weit)\b/,
];
const REASON_Q = [
  /^(why|what for|how come)\b/,
  /\b(pourquoi)\b/,
  /\b(por qué|porque|por que)\b/,
  /\b(warum|wieso|weshalb)\b/,
];
const YESNO_Q = [
  /^(is|are|was|were|do|does|did|can|could|has|have|had|will|would|should|am)\b/,
  /^(est-ce que|est-ce qu)/,
  /^(ist|sind|war|waren|hat|haben|hatte|kann|konnte|wird|würde|soll)\b/,
];
const LIST_Q = [
  /\b(what|which) (activities|hobbies|things|pets|books|sports|places|cities|countries|kinds|types|events|instruments|games|foods|dishes|gifts|items|people|friends|names|classes|courses|plans|ways)\b/,
  /\b(all|both|list|every|each|two|three|several)\b/,
  /\b(quelles activités|quels|quelles|tous|toutes|les deux)\b/,
  /\b(qué actividades|cuáles|cuales|todos|todas|ambos|ambas)\b/,
  /\b(welche|alle|beide)\b/,
];
const PROCEDURAL_Q = [
  /^how (do|can|should|did) (i|you|we)\b/,
  /\b(how to|steps|recipe|procedure)\b/,
  /\b(comment faire|comment)\b/,
  /\b(cómo|como se)\b/,
  /\b(wie (kann|mache|macht))\b/,
];
const EXPLORATORY_Q = [
  /\b(tell me about|what do you know|summar|overview|everything about)\b/,
  /\b(parle-moi|raconte)\b/,
  /\b(háblame|cuéntame)\b/,
  /\b(erzähl)\b/,
];
const ANALYTICAL_Q = [/^(why|how come)\b/, /\b(compare|trend|difference|changed|pourquoi|por qué|warum)\b/];
const CURRENT_Q =
  /\b(now|currently|current|latest|these days|still|nowadays|maintenant|actuellement|actuel|ahora|actualmente|jetzt|derzeit|aktuell|momentan)\b/;

/** Leading words a question may start with in capitals that are no names. */
const SENTENCE_WORDS = new Set(
  (
    "what when where who whom whose why how which is are was were do does did can could has have had will would should " +
    "i i'm i've tell please my the a an in on at for with and or but if so quand où qui que quoi quel quelle quels quelles " +
    "comment pourquoi combien est-ce est le la les un une mon ma mes son sa ses cuándo dónde quién qué cuál cuánto cuántos " +
    "cómo por el los las mi mis su sus wann wo wer was warum wie welche welcher welches ist sind hat haben der die das ein " +
    "eine mein meine sein seine ihr ihre am im zum pour dans sur avec chez après avant en del para con sin sobre desde für mit nach bei von zu " +
    "qu'est qu'ai qu'a quelle quels qué cuál cuáles dónde quién"
  ).split(" "),
);

/** `\b` that knows accented letters ("où", "cuándo"): JavaScript's own treats "ù" as a non-word character. */
function unicodeWords(re: RegExp): RegExp {
  const boundary = "(?:(?<![\\p{L}\\p{N}])(?=[\\p{L}\\p{N}])|(?<=[\\p{L}\\p{N}])(?![\\p{L}\\p{N}]))";
  return new RegExp(re.source.replaceAll("\\b", boundary), `${re.flags.replace("u", "")}u`);
}

const compiled = new WeakMap<readonly RegExp[], RegExp[]>();
function any(patterns: readonly RegExp[], text: string): boolean {
  let list = compiled.get(patterns);
  if (list === undefined) {
    list = patterns.map(unicodeWords);
    compiled.set(patterns, list);
  }
  return list.some((p) => p.test(text));
}

/** The question's shape, with leading "¿" / "¡" and trailing punctuation gone, lower-cased. */
function normalized(query: string): string {
  return query
    .normalize("NFKC")
    .toLowerCase()
    .replace(/^[\s¿¡"'«“]+/u, "")
    .replace(/\s+/g, " ")
    .trim();
}

function answerTypeOf(q: string): AnswerType {
  if (any(TIME_Q, q)) return "time";
  if (any(NUMBER_Q, q)) return "number";
  if (any(PERSON_Q, q)) return "person";
  if (any(PLACE_Q, q)) return "place";
  if (any(REASON_Q, q)) return "reason";
  if (any(LIST_Q, q)) return "list";
  if (any(YESNO_Q, q)) return "yesno";
  return "thing";
}

function intentOf(q: string): Intent {
  if (any(PROCEDURAL_Q, q) && !any(NUMBER_Q, q)) return "procedural";
  if (any(EXPLORATORY_Q, q)) return "exploratory";
  if (any(ANALYTICAL_Q, q)) return "analytical";
  return "factual";
}

/** German articles and determiners: a capitalized word after one is a noun (German capitalizes every noun). */
const GERMAN_DETERMINERS = new Set(
  "der die das den dem des ein eine einen einem einer eines kein keine welche welcher welches welchen meine meinen meinem meiner seine seinen seinem seiner ihre ihren ihrem ihrer unsere euer zum zur im am beim vom".split(
    " ",
  ),
);
const GERMAN_HINTS =
  /\b(der|die|das|und|ist|hat|wer|wie|wann|welche|welcher|nach|mit|von|zu|bei|sein|seine|ihre|ihr)\b/i;
/** French/Italian elision before an apostrophe: "qu'est", "l'atelier", "d'Inès". */
const ELISION = /^(qu|l|d|j|n|s|c|m|t|jusqu|lorsqu|puisqu)['’]/i;

/** `queryEntities`' patterns for one word: a possessive "'s", a number, a capital first letter. */
const POSSESSIVE = /['’]s$/u;
const NUMERAL = /^\d[\d.,:]*$/;
const CAPITALIZED = /^\p{Lu}/u;

/** Capitalized words not starting the question, quoted titles, numbers; each once, as written. */
export function queryEntities(query: string): string[] {
  const out: string[] = [];
  const seen = new Set<string>();
  const add = (e: string) => {
    const k = e.toLowerCase();
    if (k.length === 0 || seen.has(k)) return;
    seen.add(k);
    out.push(e);
  };
  const QUOTED = /["“«„]([^"”»“]{2,60})["”»“]/gu;
  for (const m of query.matchAll(QUOTED)) add((m[1] ?? "").trim());
  const rest = query.replace(QUOTED, " ");
  // German capitalizes nouns: there a capitalized word counts only when no determiner comes right before it.
  const german = GERMAN_HINTS.test(rest) && !/\b(the|what|who|where|le|la|el|qué)\b/i.test(rest);
  let first = true;
  let previous = "";
  // Each word read with `exec` on the shared WORD (its `lastIndex` reset first; nothing here is re-entered), and
  // the per-word patterns hoisted out of the loop: `matchAll` makes an iterator and a result object per word, and
  // a regex literal is a new object each time it is evaluated.
  WORD.lastIndex = 0;
  for (let m = WORD.exec(rest); m !== null; m = WORD.exec(rest)) {
    const w = m[0].replace(POSSESSIVE, "").replace(ELISION, "");
    const lower = w.toLowerCase();
    const noun = german && (GERMAN_DETERMINERS.has(previous) || previous === "");
    if (NUMERAL.test(w)) add(w);
    else if (!first && CAPITALIZED.test(w) && !SENTENCE_WORDS.has(lower) && !noun && w.length > 1) add(w);
    first = false;
    previous = lower;
  }
  return out;
}

/**
 * Everything the later stages need to know about the question. `turnTime`: the chat turn's time (epoch ms);
 * without it no time scope is resolved (the pipeline never reads the host clock).
 */
export function analyzeQuery(query: string, turnTime: number | undefined): QueryAnalysis {
  const q = normalized(query);
  const answerType = answerTypeOf(q);
  const intent = intentOf(q);
  const entities = queryEntities(query);
  const timeScope = turnTime === undefined ? undefined : resolveTimeScope(query, turnTime);
  // The words of a resolved time phrase ("last weekend") are the scope, not topic words to match.
  const scopeTerms = new Set(timeScope === undefined ? [] : queryTermsForRelevance(timeScope.phrase));
  const prepared = relevanceQuery(query);
  const all = prepared.terms;
  const kept = all.filter((t) => !scopeTerms.has(t));
  const terms = kept.length > 0 ? kept : all;
  const anchor = findEventAnchor(query);
  const wantsCurrent = CURRENT_Q.test(q);
  const names = entities.filter((e) => !/^\d/.test(e)).length;
  const multiHop =
    answerType === "list" ||
    names >= 2 ||
    (/\b(and|et|y|und)\b.*\?*$/.test(q.replace(/^[^ ]+ /, "")) && names >= 1 && terms.length >= 4) ||
    intent === "exploratory" ||
    intent === "analytical";
  // Seed 004: 0.2 length + 0.25 entities + 0.2 temporal + 0.25 multi-hop + 0.1 broad scope.
  const length = Math.min(terms.length / 10, 1);
  const entityShare = Math.min(entities.length / 4, 1);
  const temporal = timeScope !== undefined || anchor !== undefined || answerType === "time";
  const broad = intent === "exploratory" || answerType === "list";
  const complexity =
    Math.round(
      (0.2 * length +
        0.25 * entityShare +
        0.2 * (temporal ? 1 : 0) +
        0.25 * (multiHop ? 1 : 0) +
        0.1 * (broad ? 1 : 0)) *
        1000,
    ) / 1000;
  const out: QueryAnalysis = {
    intent,
    answerType,
    entities,
    terms,
    language: prepared.language,
    wantsCurrent,
    multiHop,
    complexity,
  };
  if (timeScope !== undefined) out.timeScope = timeScope;
  if (anchor !== undefined) out.anchor = anchor;
  if (turnTime !== undefined) out.turnTime = turnTime;
  return out;
}

/** Words that make a sentence a likely answer of each type (besides the structural tests in `answerFit`). */
const TIME_WORDS =
  /\b(yesterday|today|tonight|tomorrow|last|next|ago|week|weekend|month|year|morning|evening|monday|tuesday|wednesday|thursday|friday|saturday|sunday|january|february|march|april|may|june|july|august|september|october|november|december|hier|demain|semaine|mois|année|lundi|mardi|mercredi|jeudi|vendredi|samedi|dimanche|janvier|février|mars|avril|mai|juin|juillet|août|septembre|octobre|novembre|décembre|ayer|mañana|semana|mes|año|lunes|martes|miércoles|jueves|viernes|sábado|domingo|enero|febrero|marzo|abril|mayo|junio|julio|agosto|septiembre|octubre|noviembre|diciembre|gestern|morgen|woche|monat|jahr|montag|dienstag|mittwoch|donnerstag|freitag|samstag|sonntag|januar|februar|märz|juni|juli|oktober|dezember)\b/i;
const NUMBER_WORD =
  /\b(\d+|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|twenty|thirty|hundred|dozen|un|deux|trois|quatre|cinq|six|sept|huit|neuf|dix|vingt|cent|uno|dos|tres|cuatro|cinco|seis|siete|ocho|nueve|diez|veinte|cien|eins|zwei|drei|vier|fünf|sechs|sieben|acht|neun|zehn|zwanzig|hundert)\b/i;
const PLACE_WORDS =
  /\b(in|at|to|from|near|à|au|en|dans|chez|en|a|desde|cerca|nach|bei|im|am)\s+(the\s+|la\s+|le\s+|el\s+|der\s+|die\s+|das\s+)?\p{Lu}/u;
const REASON_WORDS = /\b(because|since|so that|due to|parce que|car|porque|ya que|weil|da|denn)\b/i;

/**
 * How well a sentence fits the answer type, 0–1 (seed 001's entity/temporal signals applied to the answer a
 * question wants): a "when" question prefers sentences with time expressions, "how many" numbers, "who" names,
 * "where" places, "why" reasons.
 */
export function answerFit(type: AnswerType, sentence: string): number {
  switch (type) {
    case "time":
      return TIME_WORDS.test(sentence) || /\b\d{1,2}[:h]\d{2}\b|\b(19|20)\d{2}\b/.test(sentence) ? 1 : 0;
    case "number":
      return NUMBER_WORD.test(sentence) ? 1 : 0;
    case "person":
      return capitalizedInside(sentence) ? 1 : 0;
    case "place":
      return PLACE_WORDS.test(sentence) ? 1 : capitalizedInside(sentence) ? 0.5 : 0;
    case "reason":
      return REASON_WORDS.test(sentence) ? 1 : 0;
    default:
      return 0;
  }
}

/** A capitalized word that is not the sentence's first word (nor after "Name: "): a name, most likely. */
function capitalizedInside(sentence: string): boolean {
  const body = sentence.replace(/^[^:]{1,40}:\s+/, "");
  let first = true;
  for (const m of body.matchAll(WORD)) {
    if (!first && /^\p{Lu}\p{Ll}/u.test(m[0]) && m[0] !== "I") return true;
    first = false;
  }
  return false;
}
