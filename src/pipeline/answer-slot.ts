import type { QueryAnalysis } from "./query/analyze";
import { answerFit } from "./query/analyze";
import { relevanceTerms } from "./text/relevance";
import { RequestIndex } from "./text/request-index";
import { SPEAKER_LABEL } from "./text/speaker";
import type { WorkItem } from "./types";

/**
 * The answer slot (policy `sufficiency.answerSlot`): a question that asks for a name, a number, a person or a place
 * is answered only where the thing it is about and an answer of that kind stand together. "What is the name of
 * Chloe's dog?" is not answered by memories that talk about the dog (or about a name) apart; it is answered by a
 * sentence about the dog followed by a name ("We adopted a dog. She is called Pepper."). The check:
 *
 * - the kind asked: `name` ("what is the name of", "what is … called", "wie heißt", "cómo se llama",
 *   "comment s'appelle", …), else the query analysis's `number`, `person` or `place` answer type; other
 *   questions are not checked;
 * - the focus: the query's rarest content term (highest IDF over the candidates) that is neither one of its names
 *   nor a word of the question form ("name", "called", "heißt", "many", "combien", …);
 * - the slot is filled when a kept sentence holding the focus, or one of the `after` sentences after it, or (with
 *   `nextMemory`) the first sentence of the reply turn kept right after it (`replyTo`), holds an answer
 *   of that kind: a number for `number`, a capitalized word that is not a word of the question (nor the first of a
 *   sentence of more than three words) for `name`, `person` and `place`;
 * - no kept sentence holds the focus: not decided (the answer may be worded otherwise).
 *
 * Lexical and deterministic; English, French, Spanish and German question forms.
 */
export const SLOT_KINDS = ["name", "number", "person", "place"] as const;
export type SlotKind = (typeof SLOT_KINDS)[number];

export interface AnswerSlotOptions {
  kinds: readonly SlotKind[];
  after: number;
  nextMemory: boolean;
}

export interface AnswerSlot {
  kind: SlotKind;
  /** The focus term as scored (stemmed, cut). */
  focus: string;
  /** true: an answer of that kind stands by the focus; false: the focus is kept, but no such answer near it. */
  filled: boolean;
}

/** Questions that ask for what something or someone is called. */
const NAME_Q =
  /(what(?:'s| is| was| are| were)? (?:the |their |his |her |your |my |its )?names?\b|\bwhat (?:is|was|are|were|did) .{1,60} (?:called|named?)\b|\bwie (?:heißt|heisst|heißen|heissen|hieß|hiess|hießen)\b|\bcomment (?:s'|s’)appel|\bcomment (?:il|elle|ils|elles) s(?:'|’)appel|\bquel(?:le)? est (?:le|son|leur) nom\b|\bc[oó]mo se llama|\bqu[eé] nombre\b|\bcu[aá]l es el nombre\b)/iu;

/** Words of the question form: never the focus (English, French, Spanish, German). */
const FORM_WORDS =
  "name names named call called old much many long far who whom whose where nom noms appelle appellent appelait combien qui où nombre llama llaman llamaba cuánto cuántos cuántas cuanto quién dónde heißt heisst heißen hieß wie viel viele alt wer wo";

const WORD = /[\p{L}\p{M}\p{N}'’]+/gu;

/** The kind of answer the question asks for, when it is one the slot check knows. */
export function slotKindOf(query: string, analysis: QueryAnalysis): SlotKind | undefined {
  if (NAME_Q.test(query.normalize("NFKC"))) return "name";
  const t = analysis.answerType;
  return t === "number" || t === "person" || t === "place" ? t : undefined;
}

/** The question-form words as terms, per language (made once: they never change). */
function formTerms(language: QueryAnalysis["language"]): ReadonlySet<string> {
  let terms = FORM_TERMS.get(language);
  if (terms === undefined) {
    terms = new Set(relevanceTerms(FORM_WORDS, language));
    FORM_TERMS.set(language, terms);
  }
  return terms;
}
const FORM_TERMS = new Map<QueryAnalysis["language"], ReadonlySet<string>>();

/**
 * A capitalized word that the question does not contain: inside the sentence (its first word is capitalized anyway),
 * or the first of a sentence of at most three words — a reply such as "Pickle!" is a name.
 */
function newName(sentence: string, queryWords: ReadonlySet<string>): boolean {
  const words = [...sentence.replace(SPEAKER_LABEL, "").matchAll(WORD)].map((m) =>
    m[0].replace(/['’]s$/u, ""),
  );
  const from = words.length <= 3 ? 0 : 1;
  for (let i = from; i < words.length; i++) {
    const w = words[i] ?? "";
    if (/^\p{Lu}\p{Ll}/u.test(w) && !queryWords.has(w.toLowerCase().slice(0, 4))) return true;
  }
  return false;
}

function holds(kind: SlotKind, sentence: string, queryWords: ReadonlySet<string>): boolean {
  if (kind === "number") return answerFit("number", sentence.replace(SPEAKER_LABEL, "")) > 0;
  return newName(sentence, queryWords);
}

/** The answer slot of the question in the kept memories; undefined when not checked or not decided. */
export function answerSlot(
  kept: readonly WorkItem[],
  query: string,
  analysis: QueryAnalysis,
  options: AnswerSlotOptions,
  idfOf?: readonly number[],
  /** The request's shared text index (runPipeline's: the kept memories' sentences are known); alone, its own. */
  index: RequestIndex = new RequestIndex(""),
): AnswerSlot | undefined {
  const kind = slotKindOf(query, analysis);
  if (kind === undefined || !options.kinds.includes(kind) || kept.length === 0) return undefined;
  const { terms, language } = analysis;
  const nameTerms = new Set(analysis.entities.flatMap((e) => relevanceTerms(e, language)));
  const form = formTerms(language);
  let focus = -1;
  terms.forEach((t, k) => {
    if (nameTerms.has(t) || form.has(t)) return;
    if (focus < 0 || (idfOf?.[k] ?? 1) > (idfOf?.[focus] ?? 1)) focus = k;
  });
  if (focus < 0) return undefined;
  const queryWords = new Set<string>();
  for (const m of query.normalize("NFKC").matchAll(WORD))
    queryWords.add(
      m[0]
        .replace(/['’]s$/u, "")
        .toLowerCase()
        .slice(0, 4),
    );
  const spans = kept.map((item) => index.spans(item.content));
  const scores = index.scores(
    kept.map((item) => item.content),
    [terms[focus] ?? ""],
    language,
  );
  let present = false;
  for (let i = 0; i < kept.length; i++) {
    const item = kept[i] as WorkItem;
    const own = spans[i] ?? [];
    const base = scores.first[i] as number;
    for (let j = 0; j < own.length; j++) {
      // Sentence j holds the focus term when it has matched terms (`SentenceScores`).
      if (scores.termsAt[base + j + 1] === scores.termsAt[base + j]) continue;
      present = true;
      const window = own.slice(j, j + 1 + options.after).map((s) => item.content.slice(s.start, s.end));
      const next = kept[i + 1];
      const nextFirst = next === undefined ? undefined : spans[i + 1]?.[0];
      if (options.nextMemory && next?.replyTo === item.id && nextFirst !== undefined)
        window.push(next.content.slice(nextFirst.start, nextFirst.end));
      if (window.some((s) => holds(kind, s, queryWords)))
        return { kind, focus: terms[focus] ?? "", filled: true };
    }
  }
  return present ? { kind, focus: terms[focus] ?? "", filled: false } : undefined;
}
