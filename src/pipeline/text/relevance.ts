import { stemmer as frenchStemmer } from "@orama/stemmers/french";
import { stemmer as germanStemmer } from "@orama/stemmers/german";
import { stemmer as spanishStemmer } from "@orama/stemmers/spanish";
import { stem } from "porter2";
import { CJK_SCRIPT, classOf, LETTER_OR_MARK, NUMBER } from "./classes";
import { detached } from "./detach";
import { RecentCache } from "./recent";
import { queryStopwords, STOPWORDS, type StopLanguage } from "./stopwords";

/**
 * Lexical relevance of sentences to a query, for the clip stage's `relevant` mode (docs/policy.md#clip).
 *
 * Terms: NFKC, lower case (locale-free `toLowerCase`), words split at anything that is not a letter, mark or
 * digit; runs of Han, kana and Hangul become overlapping character bigrams, as in the local backend's index
 * (text/terms.ts). The query keeps its distinct content words: the function words of the language it seems
 * to be in are dropped (text/stopwords.ts), and that language chooses the stemmer for the query and the
 * memories alike (`STEMMERS`): Porter2 for English ("weddings", "wedding" → "wed"), Snowball for French,
 * Spanish and German ("mariages" → "mariag"); every term is then cut to its first six characters (see
 * `PREFIX_CHARS`).
 *
 * Weights: BM25 (k1 = 1.2, b = 0.75) with every sentence of every memory being clipped as one document: IDF
 * comes from the candidate set itself, so a word that every memory repeats (the user's cat's name, on a
 * question about the cat) weighs little and the rarer words of the question decide. Scores are rounded to
 * 1e-6 before they are compared, so the order never depends on the last bits of a floating-point sum.
 *
 * Deterministic and host-independent: no locale, no Intl, no clock. Invariant under what the payload cache key
 * normalizes in a query (whitespace runs, NFC), so two requests sharing a cache entry always clip alike.
 */

/** At most this many distinct query terms are scored (the first ones), like the local backend's search. */
export const MAX_QUERY_TERMS = 64;

const K1 = 1.2;
const B = 0.75;

/** Han, Hiragana, Katakana (with the prolonged sound mark) and Hangul: written without spaces between words. */
const CJK_RUN = /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Hangul}\u30fc]+/gu;
const ASCII_LOWER = /^[a-z]+$/;
const ASCII_WORD = /^[a-z0-9]+$/;

/** Porter2 stems of the words seen, shared by every request (bounded; cleared when full). */
const stems = new Map<string, string>();
const MAX_STEMS = 50_000;

/**
 * Terms are cut to their first `PREFIX_CHARS` characters (after the language's stemmer): a light stemmer for
 * every other language written with spaces, so Spanish "adoptamos" meets "adoptado", French "inscription"
 * meets "inscrite", German "Geburtstags" meets "Geburtstag". Chosen on the golden set (`npm run eval`): 6 kept
 * the answer in one more question of 398 than no cut, 5 and 7 in none more; within one user's candidates
 * the words it merges by accident are rare and BM25's IDF weighs them down.
 */
const PREFIX_CHARS = 6;

/** The Porter2 stem of a lower-cased plain ASCII word of three letters or more; any other word as it is. */
function fullStem(word: string): string {
  if (word.length < 3 || !ASCII_LOWER.test(word)) return word;
  let s = stems.get(word);
  if (s === undefined) {
    s = detached(stem(word));
    if (stems.size >= MAX_STEMS) stems.clear();
    stems.set(detached(word), s);
  }
  return s;
}

/** A stemmer: a lower-cased word (NFKC) to its stem. */
export type Stem = (word: string) => string;

/**
 * A Snowball stemmer (@orama/stemmers) with its own bounded cache, for words of three characters or more.
 * Snowball rewrites suffixes only, so a plain ASCII word's stem begins with its first two characters (true of
 * all 3,601 such words of the golden set's memories in French, Spanish and German); should one not, the word
 * stays whole, so that `prefixKey` still rules out every ASCII word that cannot match (see `scanTerms`).
 * Non-ASCII words may lose their accents or umlauts ("frère" → "frer", "häuser" → "haus"): those are always
 * read in full.
 */
function snowball(snow: Stem): Stem {
  const cache = new Map<string, string>();
  return (word) => {
    if (word.length < 3) return word;
    let s = cache.get(word);
    if (s === undefined) {
      s = detached(snow(word));
      if (
        ASCII_WORD.test(word) &&
        !(s.length >= 2 && s.charCodeAt(0) === word.charCodeAt(0) && s.charCodeAt(1) === word.charCodeAt(1))
      )
        s = detached(word);
      if (cache.size >= MAX_STEMS) cache.clear();
      cache.set(detached(word), s);
    }
    return s;
  };
}
/**
 * Each language's stemmer. French, Spanish and German use Snowball's (then the cut, as every term): on the
 * golden set it kept the answer as often as Porter2 and the cut alone in every language, with evidence recall
 * 96.8 % instead of 96.7 %; Snowball without the cut did no better. Italian, Portuguese and Dutch keep Porter2
 * and the cut until a golden set measures them.
 */
const STEMMERS: Readonly<Record<StopLanguage, Stem>> = {
  en: fullStem,
  fr: snowball(frenchStemmer),
  es: snowball(spanishStemmer),
  de: snowball(germanStemmer),
  it: fullStem,
  pt: fullStem,
  nl: fullStem,
};

/** A term cut to `PREFIX_CHARS` code units (one more rather than split a surrogate pair). */
function cutTerm(s: string): string {
  if (s.length <= PREFIX_CHARS) return s;
  const last = s.charCodeAt(PREFIX_CHARS - 1);
  return s.slice(0, last >= 0xd800 && last <= 0xdbff ? PREFIX_CHARS + 1 : PREFIX_CHARS);
}

/** A term hit: the term (stemmed and cut), its stem before the cut and the word (NFKC, lower case) it is of. */
type Hit = (term: string, whole: string, word: string) => void;

/**
 * A lower-cased ASCII word's first two characters as a number (one character: itself), the key of the
 * `firsts` table: 0–127 for one character, 128 + 128·c1 + c2 for two. Porter2 keeps a word's first two
 * characters (it rewrites suffixes and leaves at least two), except dying, lying, tying → die, lie, tie and
 * a vowel before "ed"/"ing" ("oed" → "o"; the table then holds every key the stem can come from), so a word
 * whose key is not in the table cannot stem to a query term.
 */
function prefixKey(text: string, start: number, end: number): number {
  const c1 = text.charCodeAt(start) | (text.charCodeAt(start) >= 65 && text.charCodeAt(start) <= 90 ? 32 : 0);
  if (end - start === 1) return c1;
  const raw = text.charCodeAt(start + 1);
  const c2 = raw >= 65 && raw <= 90 ? raw | 32 : raw;
  return 128 + c1 * 128 + c2;
}
/** Set in `firsts` when a wanted term is not plain ASCII (every non-ASCII word must then be read). */
const NON_ASCII = 128 + 128 * 128;
const PREFIX_KEYS = NON_ASCII + 1;

/** The terms of one word that is not plain ASCII: NFKC, lower case, CJK runs as bigrams, the rest stemmed. */
function wordTerms(raw: string, hit: Hit, stemOf: Stem): number {
  const word = raw.normalize("NFKC").toLowerCase();
  CJK_RUN.lastIndex = 0;
  let last = 0;
  let count = 0;
  const part = (text: string) => {
    const whole = stemOf(text);
    hit(cutTerm(whole), whole, text);
    count++;
  };
  for (let c = CJK_RUN.exec(word); c !== null; c = CJK_RUN.exec(word)) {
    if (c.index > last) part(word.slice(last, c.index));
    const chars = Array.from(c[0]);
    if (chars.length === 1) {
      hit(c[0], c[0], c[0]);
      count++;
    }
    for (let i = 0; i + 1 < chars.length; i++) {
      const bigram = `${chars[i]}${chars[i + 1]}`;
      hit(bigram, bigram, bigram);
      count++;
    }
    last = c.index + c[0].length;
  }
  if (last === 0 || last < word.length) part(last === 0 ? word : word.slice(last));
  return count;
}

/** The class of the code point starting at `i` (a lone surrogate is no word character). */
function classAt(text: string, i: number, c: number): number {
  if (c >= 0xd800 && c <= 0xdfff) {
    const cp = text.codePointAt(i) ?? c;
    return cp > 0xffff ? classOf(cp) : 0;
  }
  return classOf(c);
}
const WORD_CHAR = LETTER_OR_MARK | NUMBER;

/**
 * Whether NFKC maps this CJK code unit (a surrogate: an ideograph beyond the BMP) to exactly one character,
 * so that a word of them has as many terms before NFKC as after: Han, kana and Hangul syllables do; Hangul
 * jamo (conjoining, compatibility and halfwidth: ㄱㅏ becomes 가) and the kana digraphs ゟ ヿ (they expand)
 * do not, and their words are read in full.
 */
function nfkcKeepsCount(u: number): boolean {
  if (u >= 0x1100 && u <= 0x11ff) return false;
  if (u >= 0x3131 && u <= 0x318e) return false;
  if (u === 0x309f || u === 0x30ff) return false;
  if (u >= 0xa960 && u <= 0xa97f) return false;
  if (u >= 0xd7b0 && u <= 0xd7ff) return false;
  return !(u >= 0xffa0 && u <= 0xffdc);
}

/** ASCII letters and digits (a lookup, not three range tests, in the loop every character goes through). */
const ASCII_ALNUM = new Uint8Array(128);
for (let c = 0; c < 128; c++) {
  ASCII_ALNUM[c] = (c >= 97 && c <= 122) || (c >= 65 && c <= 90) || (c >= 48 && c <= 57) ? 1 : 0;
}

/**
 * Counts the terms of `text[start, end)` and calls `hit(term)` for those that may be wanted. With `firsts`
 * (the `prefixKey`s of the wanted ASCII terms), a plain ASCII word whose key is not in it is only counted —
 * neither lower-cased, stemmed nor allocated: on ordinary text that is most words, and what keeps scoring 40
 * memories well under a millisecond; so are the terms of an all-CJK word (one per character bigram, or one
 * for a lone character) when no wanted term is non-ASCII. Without `firsts` every term is a hit.
 */
export function scanTerms(
  text: string,
  start: number,
  end: number,
  hit: Hit,
  stemOf: Stem,
  firsts?: Uint8Array,
  /**
   * Called for every plain ASCII word `text[i, j)` instead of `hit` (which its term would be
   * `asciiWordTerm(text.slice(i, j).toLowerCase())`): the request index's word ids (text/request-index.ts).
   */
  ascii?: (text: string, i: number, j: number) => void,
): number {
  const skipNonAscii = firsts !== undefined && firsts[NON_ASCII] !== 1;
  let count = 0;
  let i = start;
  while (i < end) {
    const c = text.charCodeAt(i);
    if (c < 128) {
      if (ASCII_ALNUM[c] !== 1) {
        i++;
        continue;
      }
      let j = i + 1;
      let d = 0;
      while (j < end) {
        d = text.charCodeAt(j);
        if (d >= 128 || ASCII_ALNUM[d] !== 1) break;
        j++;
      }
      if (j >= end || d < 128) {
        // Plain ASCII letters and digits: the common case, decided without allocating when it cannot match.
        count++;
        if (ascii !== undefined) ascii(text, i, j);
        else if (firsts === undefined || firsts[prefixKey(text, i, j)] === 1) {
          const word = text.slice(i, j).toLowerCase();
          const whole = stemOf(word);
          hit(cutTerm(whole), whole, word);
        }
        i = j;
        continue;
      }
    }
    // A word with non-ASCII characters, or a non-ASCII character that is no letter (skipped): the run of
    // letters, marks and digits from `i`, read with the class table (no regex, no allocation).
    let j = i;
    let chars = 0;
    let allCjk = true;
    while (j < end) {
      const u = text.charCodeAt(j);
      const k = u < 128 ? (ASCII_ALNUM[u] === 1 ? WORD_CHAR : 0) : classAt(text, j, u);
      if ((k & WORD_CHAR) === 0) break;
      if (allCjk && !((k & CJK_SCRIPT) !== 0 && nfkcKeepsCount(u))) allCjk = false;
      chars++;
      j += u >= 0xd800 && u <= 0xdbff && j + 1 < end ? 2 : 1;
    }
    if (j === i) {
      i++;
      continue;
    }
    // All-CJK words (NFKC leaves them CJK) cannot hold an ASCII query term; anything else may (fullwidth
    // Latin, an ASCII word next to "’" or "。"), so it is read in full.
    if (skipNonAscii && allCjk) count += Math.max(1, chars - 1);
    else count += wordTerms(text.slice(i, j), hit, stemOf);
    i = j;
  }
  return count;
}

/** The stemmer `scanTerms` takes for `language`. */
export function stemmerFor(language: StopLanguage): Stem {
  return STEMMERS[language];
}

/** The term of a plain ASCII word, lower-cased, for `language` (what `scanTerms` hits it with). */
export function asciiWordTerm(word: string, language: StopLanguage): string {
  return cutTerm(STEMMERS[language](word));
}

/** The terms of `text`, in order (repeats kept), stemmed for `language` (English: Porter2). */
export function relevanceTerms(text: string, language: StopLanguage = "en"): string[] {
  const out: string[] = [];
  scanTerms(
    text,
    0,
    text.length,
    (t) => {
      out.push(t);
    },
    STEMMERS[language],
  );
  return out;
}

/** A query made ready for `scoreSentences`: its terms, and the language they were stemmed for. */
export interface RelevanceQuery {
  terms: string[];
  language: StopLanguage;
}

/**
 * The query's distinct terms, first occurrence first, without the function words of the language it seems to
 * be in (text/stopwords.ts; all of them if the query has nothing else), at most MAX_QUERY_TERMS, stemmed for
 * that language; `scoreSentences` must read the memories with the same `language`.
 */
export function relevanceQuery(query: string): RelevanceQuery {
  // Read once per query (the query analysis and the request's text index both ask, and an expansion round asks
  // again): a copy of what was found, so that no caller can change what the next one reads.
  let found = QUERIES.get(query);
  if (found === undefined) {
    found = readQuery(query);
    QUERIES.set(query, found);
  }
  return { terms: [...found.terms], language: found.language };
}

/** `relevanceQuery`'s recent results (a pure function of the query; at most 2 × 1,024 queries of up to 4,000 characters). */
const QUERIES = new RecentCache<RelevanceQuery>(1024, 1 << 20);

function readQuery(query: string): RelevanceQuery {
  const words: string[] = [];
  scanTerms(query, 0, query.length, (_t, _w, word) => words.push(word), fullStem);
  const stops = queryStopwords(words);
  const language = stops.language;
  const hits: Array<{ term: string; whole: string; word: string }> = [];
  scanTerms(
    query,
    0,
    query.length,
    (term, whole, word) => hits.push({ term, whole, word }),
    STEMMERS[language],
  );
  const english = language === "en";
  // Each distinct term, first occurrence first, and whether one of its words is no stopword. English ones are
  // also matched on the stem before the cut ("shoulder" is cut to "should", and is no stopword).
  const order: string[] = [];
  const content = new Map<string, boolean>();
  for (const { term, whole, word } of hits) {
    const stop = stops.has(word) || (english && (STOPWORDS.has(whole) || STOP_STEMS.has(whole)));
    const known = content.get(term);
    if (known === undefined) {
      order.push(term);
      content.set(term, !stop);
    } else if (!stop) {
      content.set(term, true);
    }
  }
  const kept = order.filter((t) => content.get(t) === true);
  return { terms: (kept.length > 0 ? kept : order).slice(0, MAX_QUERY_TERMS), language };
}

/** `relevanceQuery`'s terms alone. */
export function queryTermsForRelevance(query: string): string[] {
  return relevanceQuery(query).terms;
}
const STOP_STEMS: ReadonlySet<string> = new Set([...STOPWORDS].map((w) => fullStem(w)));

/** A document: a half-open range `[start, end)` of one text. */
export interface TextRange {
  start: number;
  end: number;
}

/** One memory's sentences for scoring. */
export interface SentenceDocs {
  text: string;
  /** Its sentences, in order, not overlapping. */
  sentences: readonly TextRange[];
}

/** A sentence's score and the query terms it contains. */
export interface SentenceScore {
  score: number;
  /** Indexes into the query terms, ascending. */
  matched: readonly number[];
}

/** The score of every sentence that holds no query term (shared: it is never changed). */
const NO_MATCH: SentenceScore = Object.freeze({ score: 0, matched: Object.freeze([]) });

/**
 * What one memory's sentences hold of a list of wanted terms: per sentence its length in terms and, for the
 * few that hold a wanted term, `[term index, frequency]` pairs in the order first seen (null: none). The raw
 * counts BM25 is computed from (`bm25Scores`), kept apart so that one scan can serve several scorings (the
 * rank and clip stages score different candidate sets with different IDF, see text/request-index.ts).
 */
export interface MemoryTerms {
  lengths: ArrayLike<number>;
  found: ReadonlyArray<readonly number[] | null>;
}

/** `scanMemoryTerms` made ready for one list of wanted terms (stemmed for `language` and cut). */
export type TermScanner = (memory: SentenceDocs) => MemoryTerms;

/**
 * A scanner for `queryTerms` (as `relevanceQuery` makes them). A word that cannot stem to a wanted term is only
 * counted (see `scanTerms`), so lengths never depend on the list and the hits for a sub-list are the hits for
 * the whole list restricted to it.
 */
export function termScanner(queryTerms: readonly string[], language: StopLanguage = "en"): TermScanner {
  // Made once per list of terms while it recurs (the rank and clip stages, the certificate and the answer slot
  // of one request, and of the next one with the same question): a scanner is a pure function of its terms, and
  // making one allocates its 16 KB table of prefixes.
  const key = `${language}\u0000${queryTerms.join("\u0000")}`;
  let scanner = SCANNERS.get(key);
  if (scanner === undefined) {
    scanner = makeTermScanner(queryTerms, language);
    if (SCANNERS.size >= MAX_SCANNERS) SCANNERS.clear();
    SCANNERS.set(key, scanner);
  }
  return scanner;
}

/** Recent scanners by language and terms (at most `MAX_SCANNERS`, then the table starts afresh). */
const SCANNERS = new Map<string, TermScanner>();
const MAX_SCANNERS = 64;

function makeTermScanner(queryTerms: readonly string[], language: StopLanguage): TermScanner {
  const stemOf = STEMMERS[language];
  const index = new Map<string, number>();
  const firsts = new Uint8Array(PREFIX_KEYS);
  for (let i = 0; i < queryTerms.length; i++) {
    const term = queryTerms[i] ?? "";
    index.set(term, i);
    if (!/^[a-z0-9]+$/.test(term)) {
      firsts[NON_ASCII] = 1;
      continue;
    }
    firsts[prefixKey(term, 0, term.length)] = 1;
    // Porter2's exceptions: dying, lying, tying → die, lie, tie, and a vowel before "ed"/"ing" ("aed" → "a",
    // "oing" → "o"): a one-letter stem is the first letter of words with any second letter.
    if (term.length === 3 && term.endsWith("ie")) firsts[prefixKey(`${term[0]}y`, 0, 2)] = 1;
    if (term.length === 1)
      for (let c = 97; c <= 122; c++) firsts[prefixKey(`${term}${String.fromCharCode(c)}`, 0, 2)] = 1;
  }
  // The pairs of the sentence being scanned, collected in a scratch list (`count` long) and copied out at their
  // exact size (see `exactCopy`). The scanner is synchronous and never re-entered.
  const pairs: number[] = [];
  let count = 0;
  const hit = (term: string): void => {
    const k = index.get(term);
    if (k === undefined) return;
    for (let p = 0; p < count; p += 2) {
      if (pairs[p] === k) {
        pairs[p + 1] = (pairs[p + 1] ?? 0) + 1;
        return;
      }
    }
    pairs[count++] = k;
    pairs[count++] = 1;
  };
  return (memory) => {
    const n = memory.sentences.length;
    const lengths = new Array<number>(n);
    const found = new Array<number[] | null>(n);
    for (let s = 0; s < n; s++) {
      const sentence = memory.sentences[s] as TextRange;
      count = 0;
      lengths[s] = scanTerms(memory.text, sentence.start, sentence.end, hit, stemOf, firsts);
      found[s] = count === 0 ? null : exactCopy(pairs, count);
    }
    return { lengths, found };
  };
}

/** `bm25Scores`' term frequencies of the sentence being scored. */
let FREQ_SCRATCH = new Float64Array(64);

/**
 * The first `count` values of a scratch list as an array of exactly that size. A small list built by `push` from
 * empty reserves 17 slots (V8 grows an array to 1.5 × its length + 16), ~150 bytes for the one to three numbers a
 * sentence's matches usually are; these lists are made for every matching sentence of every request.
 */
export function exactCopy(scratch: readonly number[], count: number): number[] {
  return scratch.slice(0, count);
}

/**
 * BM25 scores of every sentence of a set of memories, flat (four typed arrays a scoring, not an object and a list
 * for every matching sentence): sentence j of memory m is entry `e = first[m] + j` (memory m has
 * `first[m + 1] − first[m]` sentences), its score is `score[e]` and the query terms it holds (indexes, ascending)
 * are `terms[termsAt[e], termsAt[e + 1])`.
 */
export interface SentenceScores {
  first: Int32Array;
  score: Float64Array;
  termsAt: Int32Array;
  terms: Int32Array;
}

/** Scores of memories with `counts[m]` sentences each, none of which holds a query term (a query without terms). */
export function unscored(counts: ArrayLike<number>): SentenceScores {
  const first = new Int32Array(counts.length + 1);
  for (let m = 0; m < counts.length; m++) first[m + 1] = (first[m] as number) + (counts[m] ?? 0);
  const docs = first[counts.length] as number;
  return {
    first,
    score: new Float64Array(docs),
    termsAt: new Int32Array(docs + 1),
    terms: new Int32Array(0),
  };
}

/** `bm25Scores`' IDF per query term (a buffer shared by every call: it is synchronous and never re-entered). */
let IDF_SCRATCH = new Float64Array(64);

/**
 * BM25 scores of every sentence of `memories` (as a scanner read them) with the IDF and average length taken
 * over all the sentences given. `q` query terms; with `map`, the scanned term index `k` is query term `map[k]`
 * (−1: not one of them), for a query that is a sub-list of the scanned one.
 */
export function bm25Scores(memories: readonly MemoryTerms[], q: number, map?: Int32Array): SentenceScores {
  if (IDF_SCRATCH.length < q) IDF_SCRATCH = new Float64Array(Math.max(q, 2 * IDF_SCRATCH.length));
  const df = IDF_SCRATCH.fill(0, 0, q);
  const first = new Int32Array(memories.length + 1);
  let docs = 0;
  let totalLength = 0;
  let hits = 0;
  for (let m = 0; m < memories.length; m++) {
    const { lengths, found } = memories[m] as MemoryTerms;
    for (let i = 0; i < lengths.length; i++) {
      docs++;
      totalLength += lengths[i] ?? 0;
      const seen = found[i];
      if (seen === null || seen === undefined) continue;
      for (let p = 0; p < seen.length; p += 2) {
        const k = map === undefined ? (seen[p] ?? 0) : (map[seen[p] ?? 0] ?? -1);
        if (k >= 0) {
          df[k] = (df[k] ?? 0) + 1;
          hits++;
        }
      }
    }
    first[m + 1] = docs;
  }
  const avgLength = docs > 0 ? totalLength / docs : 0;
  // The IDF in place of the document frequency (`df` is `idf` from here on).
  const idf = df;
  for (let k = 0; k < q; k++)
    idf[k] = Math.log(1 + (docs - (df[k] as number) + 0.5) / ((df[k] as number) + 0.5));
  const score = new Float64Array(docs);
  const termsAt = new Int32Array(docs + 1);
  const terms = new Int32Array(hits);
  if (FREQ_SCRATCH.length < q) FREQ_SCRATCH = new Float64Array(Math.max(q, 2 * FREQ_SCRATCH.length));
  const freq = FREQ_SCRATCH;
  let e = 0;
  let at = 0;
  for (let m = 0; m < memories.length; m++) {
    const { lengths, found } = memories[m] as MemoryTerms;
    for (let i = 0; i < found.length; i++, e++) {
      const seen = found[i];
      termsAt[e] = at;
      if (seen === null || seen === undefined) continue;
      // Matched query terms, ascending (written in place into `terms` from `at`), with their frequencies in a
      // buffer shared by every call (at most one entry per query term).
      let count = 0;
      for (let p = 0; p < seen.length; p += 2) {
        const k = map === undefined ? (seen[p] ?? 0) : (map[seen[p] ?? 0] ?? -1);
        if (k < 0) continue;
        // Insertion in place.
        let x = count++;
        while (x > 0 && (terms[at + x - 1] as number) > k) {
          terms[at + x] = terms[at + x - 1] as number;
          freq[x] = freq[x - 1] as number;
          x--;
        }
        terms[at + x] = k;
        freq[x] = seen[p + 1] ?? 0;
      }
      if (count === 0) continue;
      const norm = K1 * (1 - B + (B * (lengths[i] ?? 0)) / (avgLength || 1));
      // Summed in query-term order, so the rounding never depends on the order words were met.
      let sum = 0;
      for (let x = 0; x < count; x++) {
        const f = freq[x] ?? 0;
        sum += ((idf[terms[at + x] as number] ?? 0) * (f * (K1 + 1))) / (f + norm);
      }
      score[e] = Math.round(sum * 1e6) / 1e6;
      at += count;
    }
  }
  termsAt[e] = at;
  return { first, score, termsAt, terms };
}

/** `scores` as one list per memory of one `SentenceScore` per sentence (a sentence holding no term: `NO_MATCH`). */
export function sentenceScoreLists(scores: SentenceScores): SentenceScore[][] {
  const { first, score, termsAt, terms } = scores;
  const lists: SentenceScore[][] = [];
  for (let m = 0; m + 1 < first.length; m++) {
    const list: SentenceScore[] = [];
    for (let e = first[m] as number; e < (first[m + 1] as number); e++) {
      const from = termsAt[e] as number;
      const to = termsAt[e + 1] as number;
      list.push(
        from === to ? NO_MATCH : { score: score[e] as number, matched: Array.from(terms.subarray(from, to)) },
      );
    }
    lists.push(list);
  }
  return lists;
}

/**
 * BM25 scores of every sentence of every memory against `queryTerms` (terms as `relevanceQuery` makes them:
 * stemmed for `language` and cut, see the top of this file), with the IDF and average length taken over all
 * the sentences given. Result: `scores[memory][sentence]`.
 */
export function scoreSentences(
  memories: readonly SentenceDocs[],
  queryTerms: readonly string[],
  language: StopLanguage = "en",
): SentenceScore[][] {
  const scan = termScanner(queryTerms, language);
  return sentenceScoreLists(bm25Scores(memories.map(scan), queryTerms.length));
}
