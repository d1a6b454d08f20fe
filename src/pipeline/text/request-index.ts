import type { AnswerType } from "../query/analyze";
import { answerFit } from "../query/analyze";
import type { Tokenizer } from "../types";
import { isAscii } from "./ascii";
import { detached } from "./detach";
import { RecentCache } from "./recent";
import {
  asciiWordTerm,
  bm25Scores,
  exactCopy,
  type MemoryTerms,
  type RelevanceQuery,
  relevanceQuery,
  type SentenceScores,
  scanTerms,
  scoreSentences,
  stemmerFor,
  type TermScanner,
  termScanner,
} from "./relevance";
import { type SentenceSpan, sentenceSpans } from "./sentences";
import type { StopLanguage } from "./stopwords";

/**
 * One request's text index, shared by the stages that read the same memories (rank, select, clip; the
 * sufficiency certificate through the similarity it is given): each content's sentence spans, its sentences'
 * query-term counts, answer fits and token counts, and its word set for MMR, each computed once per request
 * and only when a stage first asks. Everything here is a pure function of a content string (and of the query),
 * so entries are keyed by content: a rewritten content (redaction, clipping) is simply another entry, and the
 * results are exactly what each stage computed on its own before (test/pipeline/equivalence.test.ts).
 *
 * - Query terms are scanned once against the query's own term list (`relevanceQuery`, what clip scores); the
 *   rank stage's terms are a sub-list of it (the query analysis drops the words of a time phrase), so its BM25
 *   is computed from the same counts through an index map (`bm25Scores`). IDF stays per scoring: rank scores
 *   every candidate, clip the selected ones.
 * - Token counts: per sentence on demand, and whole texts remembered (`tokenizer`), so a text clip counted is
 *   not counted again by the budget.
 * - Word sets (select's MMR, the certificate's redundancy): words of three letters or digits or more,
 *   lower-cased, as lists of distinct word ids, so a Jaccard index counts integers marked in one table.
 *
 * What depends on the text alone (spans, answer fits, sentence token counts, word ids) is shared across
 * requests in a bounded cache (`SHARED_FACTS`); what depends on the query (term counts) stays with the request.
 * The table of word ids is shared too (a bounded cache of strings).
 */
export class RequestIndex {
  private readonly entries = new Map<string, IndexedText>();
  private prepared: RelevanceQuery | undefined;
  /** The word ids of the query's own terms (`relevance()`), interned when first needed. */
  private queryIds: Int32Array | undefined;
  private scanner: TermScanner | undefined;
  /** `termsIn`'s results for the `terms` list `wholeFor`, by text. */
  private readonly wholeTerms = new Map<string, readonly number[]>();
  private wholeFor: readonly string[] | undefined;
  private lastSub: { terms: readonly string[]; map: Int32Array | true | undefined } | undefined;
  private readonly counts = new Map<string, number>();
  private base: Tokenizer | undefined;
  private counting: Tokenizer | undefined;

  constructor(private readonly query: string) {
    // The word table is shared by every request (words recur) and starts afresh when full, only here, between
    // requests: ids are compared within one request only, so what they are never shows in a result.
    if (WORD_TABLE.list.length >= MAX_WORDS) resetWordTable();
  }

  /** `relevanceQuery(query)`, computed once. */
  relevance(): RelevanceQuery {
    this.prepared ??= relevanceQuery(this.query);
    return this.prepared;
  }

  private entry(text: string): IndexedText {
    let e = this.entries.get(text);
    if (e === undefined) {
      e = { facts: factsOf(text) };
      this.entries.set(text, e);
    }
    return e;
  }

  /** The sentence spans of `text` (`sentenceSpans`). */
  spans(text: string): readonly SentenceSpan[] {
    const facts = this.entry(text).facts;
    facts.spans ??= sentenceSpans(text);
    return facts.spans;
  }

  /**
   * `scoreSentences` of `texts` as flat `SentenceScores`, each split into its sentences, against `terms` stemmed
   * for `language`: from the counts scanned once per text when `terms` is a sub-list of the query's own terms in
   * its language, else scanned afresh.
   */
  scores(
    texts: readonly string[],
    terms: readonly string[],
    language: RelevanceQuery["language"],
  ): SentenceScores {
    const own = this.relevance();
    const map = this.subList(terms, language);
    if (map === undefined) {
      const scan = termScanner(terms, language);
      return bm25Scores(
        texts.map((text) => scan({ text, sentences: this.spans(text) })),
        terms.length,
      );
    }
    const queryIds = this.ownTermIds();
    const memories: MemoryTerms[] = new Array(texts.length);
    for (let m = 0; m < texts.length; m++) {
      const text = texts[m] as string;
      const e = this.entry(text);
      if (e.terms === undefined) {
        // A text met for the first time is scanned for the query's terms alone (most words ruled out by their
        // first letters, nothing kept); one met again has its terms kept as word ids, then read as integers.
        const facts = e.facts;
        if (facts.terms?.[own.language] !== undefined || facts.scanned === true)
          e.terms = queryHits(this.termIds(text, facts, own.language), queryIds);
        else {
          this.scanner ??= termScanner(own.terms, own.language);
          e.terms = this.scanner({ text, sentences: this.spans(text) });
          facts.scanned = true;
        }
      }
      memories[m] = e.terms;
    }
    return bm25Scores(memories, terms.length, map === true ? undefined : map);
  }

  /**
   * The indexes of `terms` (ascending, distinct) that `text` holds anywhere, the whole text read as one document:
   * the `matched` of `scoreSentences` of it as one sentence (the sufficiency certificate, which the budget's
   * `stop` asks again for every memory it adds). When `terms` is a sub-list of the query's own terms in its
   * language, from the query's own scanner (the hits of a sub-list are the hits of the whole list restricted to
   * it), remembered per text for the request while `terms` stays the same list (not in the shared facts: these
   * are mostly clipped texts, new strings, and reading them again from word ids saved ~2 KB a request on the
   * goal case while keeping every clipped text in the shared cache). Otherwise scored afresh.
   */
  termsIn(text: string, terms: readonly string[], language: RelevanceQuery["language"]): readonly number[] {
    const map = this.subList(terms, language);
    if (map === undefined)
      return (
        scoreSentences([{ text, sentences: [{ start: 0, end: text.length }] }], terms, language)[0]?.[0]
          ?.matched ?? []
      );
    if (this.wholeFor !== terms) {
      this.wholeFor = terms;
      this.wholeTerms.clear();
    }
    let found = this.wholeTerms.get(text);
    if (found === undefined) {
      found = this.wholeHits(text, map);
      this.wholeTerms.set(text, found);
    }
    return found;
  }

  /** `termsIn` of a text not read yet for this request's `terms` (whose index map is `map`). */
  private wholeHits(text: string, map: Int32Array | true): readonly number[] {
    const own = this.relevance();
    this.scanner ??= termScanner(own.terms, own.language);
    // One span over the whole text (a buffer: the scanner reads it before the next call).
    (WHOLE_SPAN[0] as SentenceSpan).end = text.length;
    const pairs = this.scanner({ text, sentences: WHOLE_SPAN }).found[0] ?? null;
    if (pairs === null) return NO_TERMS;
    // Ascending, by insertion into a scratch list (`count` long) copied out at its exact size.
    const found = PAIR_SCRATCH;
    let count = 0;
    for (let p = 0; p < pairs.length; p += 2) {
      const k = map === true ? (pairs[p] as number) : (map[pairs[p] as number] as number);
      if (k < 0) continue;
      let at = count++;
      while (at > 0 && (found[at - 1] as number) > k) {
        found[at] = found[at - 1] as number;
        at--;
      }
      found[at] = k;
    }
    return count === 0 ? NO_TERMS : exactCopy(found, count);
  }

  /** The word ids of the query's own terms (`relevance()`), interned when first needed. */
  private ownTermIds(): Int32Array {
    if (this.queryIds === undefined) {
      const own = this.relevance();
      this.queryIds = new Int32Array(own.terms.length);
      for (let k = 0; k < own.terms.length; k++) this.queryIds[k] = internTerm(own.terms[k] ?? "");
    }
    return this.queryIds;
  }

  /** `subListMap(query's own terms, terms)` when `language` is the query's, remembered for the last `terms` list. */
  private subList(
    terms: readonly string[],
    language: RelevanceQuery["language"],
  ): Int32Array | true | undefined {
    const own = this.relevance();
    if (own.language !== language) return undefined;
    if (this.lastSub?.terms !== terms) this.lastSub = { terms, map: subListMap(own.terms, terms) };
    return this.lastSub.map;
  }

  /** The terms of `text`'s sentences as word ids, for `language` (shared across requests, see `TextTerms`). */
  private termIds(text: string, facts: TextFacts, language: StopLanguage): TextTerms {
    facts.terms ??= {};
    let known = facts.terms[language];
    if (known === undefined || known.wordTable !== WORD_TABLE.generation) {
      facts.spans ??= sentenceSpans(text);
      known = textTerms(text, facts.spans, language);
      facts.terms[language] = known;
    }
    return known;
  }

  /** `answerFit(type, sentence j of text)`, computed once per sentence and type. */
  answerFit(text: string, j: number, type: AnswerType): number {
    const facts = this.entry(text).facts;
    facts.fits ??= new Map();
    const fits = perSentence(facts.fits, type, Float64Array, text, facts);
    let fit = fits[j] ?? 0;
    if (fit < 0) {
      const span = this.spans(text)[j] as SentenceSpan;
      fit = answerFit(type, text.slice(span.start, span.end));
      fits[j] = fit;
    }
    return fit;
  }

  /**
   * `tokenizer.count` of sentence j of `text`, counted once (shared across requests per tokenizer: the counting
   * tokenizer this index hands out counts as the one it wraps, so both read the same counts).
   */
  sentenceTokens(text: string, j: number, tokenizer: Tokenizer): number {
    const facts = this.entry(text).facts;
    const base = tokenizer === this.counting && this.base !== undefined ? this.base : tokenizer;
    facts.tokens ??= new Map();
    const tokens = perSentence(facts.tokens, base, Int32Array, text, facts);
    let n = tokens[j] ?? 0;
    if (n < 0) {
      const span = this.spans(text)[j] as SentenceSpan;
      n = tokenizer.count(text.slice(span.start, span.end));
      tokens[j] = n;
    }
    return n;
  }

  /** `tokenizer` that remembers the count of every text it counted for this request. */
  tokenizer(tokenizer: Tokenizer): Tokenizer {
    if (this.counting !== undefined && this.base === tokenizer) return this.counting;
    this.counts.clear();
    this.base = tokenizer;
    const counts = this.counts;
    this.counting = {
      name: tokenizer.name,
      count(text: string): number {
        let n = counts.get(text);
        if (n === undefined) {
          n = tokenizer.count(text);
          counts.set(text, n);
        }
        return n;
      },
    };
    return this.counting;
  }

  /**
   * The speaker of a turn ("Maya: …"), lower-cased, and the first word of it ("" without one): the rank stage's
   * entity signal, read once per text.
   */
  speaker(text: string): Speaker {
    const facts = this.entry(text).facts;
    if (facts.speaker === undefined) {
      // Copies (`detached`): the facts are shared across requests and must not keep this request's text alive.
      const speaker = detached(SPEAKER.exec(text)?.[1]?.toLowerCase() ?? "");
      facts.speaker = { speaker, first: detached(speaker.split(/\s+/)[0] ?? "") };
    }
    return facts.speaker;
  }

  /** Whether `text` is plain ASCII (every code unit below 128), read once per text. */
  isAscii(text: string): boolean {
    const facts = this.entry(text).facts;
    facts.ascii ??= isAscii(text);
    return facts.ascii;
  }

  /** How many distinct words the word sets built so far hold (every word id is below it). */
  wordCount(): number {
    return WORD_TABLE.list.length;
  }

  /** The word set of `text` (words of 3+ letters or digits, lower-cased) as distinct word ids (in order of first occurrence). */
  wordIds(text: string): readonly number[] {
    const facts = this.entry(text).facts;
    // Ids of an older word table (it started afresh between requests) mean nothing now.
    if (facts.words === undefined || facts.wordTable !== WORD_TABLE.generation) {
      facts.words = this.wordsOf(text);
      facts.wordTable = WORD_TABLE.generation;
    }
    return facts.words;
  }

  private wordsOf(text: string): number[] {
    // The words are the maximal runs of three or more letters or digits (code points) of the lower-cased
    // text, as `/[\p{L}\p{N}]{3,}/gu` finds them. Plain ASCII text is read as it is (lower-casing it changes
    // no length: A–Z are folded while reading). A run is looked up by a hash of its code units in the word
    // table (open addressing over typed arrays) and compared code unit by code unit with the word each slot of
    // that hash stands for (nothing allocated); only a word met for the first time is cut out as a string.
    // Repeats within the text are dropped by stamping each id with this call's number, and the distinct ids
    // are collected in a scratch buffer: one typed array is allocated per text, the result.
    const ascii = isAscii(text);
    const src = ascii ? text : text.toLowerCase();
    const n = src.length;
    const table = WORD_TABLE;
    const stamp = nextStamp();
    const ids: number[] = [];
    let i = 0;
    while (i < n) {
      let h = 0x811c9dc5 | 0;
      let j = i;
      let points = 0;
      while (j < n) {
        const c = src.charCodeAt(j);
        const width = c < 128 ? (ASCII_ALNUM[c] ?? 0) : wordCharWidth(src, j, c);
        if (width === 0) break;
        h = Math.imul(h ^ (c >= 65 && c <= 90 ? c | 32 : c), 0x01000193);
        if (width === 2) h = Math.imul(h ^ src.charCodeAt(j + 1), 0x01000193);
        j += width;
        points++;
      }
      if (j === i) {
        i++;
        continue;
      }
      if (points >= 3) {
        const id = wordId(src, i, j, h & 0x3fffffff, ascii);
        if (id >= table.seen.length) growSeen(id);
        if (table.seen[id] !== stamp) {
          table.seen[id] = stamp;
          ids.push(id);
        }
      }
      i = j;
    }
    return ids;
  }
}

/**
 * The id of the word `src[i, j)` (lower-cased when `ascii`: A–Z folded) whose code-unit hash is `hash` (30
 * bits): found by probing the slots of that hash, or given the next id when first met.
 */
function wordId(src: string, i: number, j: number, hash: number, ascii: boolean): number {
  const table = WORD_TABLE;
  const key = hash + 1;
  let slot = hash & TABLE_MASK;
  for (;;) {
    const stored = table.hashes[slot] ?? 0;
    if (stored === 0) break;
    if (stored === key) {
      const id = table.ids[slot] ?? 0;
      if (sameWord(src, i, j, table.list[id] ?? "")) return id;
    }
    slot = (slot + 1) & TABLE_MASK;
  }
  const word = ascii ? src.slice(i, j).toLowerCase() : src.slice(i, j);
  // The table is never more than half full: beyond that (one request with ~100,000 distinct words; the table
  // starts afresh between requests at `MAX_WORDS`), words go to a Map by their text.
  if (table.list.length >= TABLE_SIZE / 2) {
    let id = table.overflow.get(word);
    if (id === undefined) {
      id = table.list.length;
      table.list.push(detached(word));
      table.overflow.set(table.list[id] as string, id);
    }
    return id;
  }
  const id = table.list.length;
  table.list.push(detached(word));
  table.hashes[slot] = key;
  table.ids[slot] = id;
  return id;
}

/**
 * What `scanTerms` reads in each sentence of a text for `language`, whatever the query: how many terms it holds
 * and every term as the word-table id of its string (a term is interned like a word: ids only stand for
 * strings). `queryHits` then finds a query's terms among them by comparing integers, so a text a request saw
 * before is not read again (stemmed, cut, looked up word by word) for the next question. Valid for the word
 * table's `wordTable` generation.
 */
interface TextTerms {
  wordTable: number;
  /** Terms per sentence (`scanTerms`' count). */
  lengths: Int32Array;
  /** Sentence s's term ids are `ids[bounds[s], bounds[s + 1])`. */
  bounds: Int32Array;
  ids: Int32Array;
}

/** The scratch list of term ids `textTerms` collects into (one for every call: synchronous, never re-entered). */
const TERM_SCRATCH: number[] = [];

/**
 * `TextTerms` of `text`: every term `scanTerms` finds (no query to rule words out). A plain ASCII word is
 * looked up in the word table as it stands (no copy, A–Z folded) and its term's id read from `termOfWord`, so
 * only a word met for the first time is lower-cased, stemmed and cut.
 */
function textTerms(text: string, spans: readonly SentenceSpan[], language: StopLanguage): TextTerms {
  const stemOf = stemmerFor(language);
  const ids = TERM_SCRATCH;
  ids.length = 0;
  const lengths = new Int32Array(spans.length);
  const bounds = new Int32Array(spans.length + 1);
  const hit = (term: string): void => {
    ids.push(internTerm(term));
  };
  const ascii = (src: string, i: number, j: number): void => {
    const word = wordId(src, i, j, foldedHash(src, i, j) & 0x3fffffff, true);
    let byWord = TERM_OF_WORD[language];
    if (byWord === undefined || byWord.length <= word) {
      const grown = new Int32Array(Math.max(word + 1, 2 * (byWord?.length ?? 512)));
      if (byWord !== undefined) grown.set(byWord);
      byWord = grown;
      TERM_OF_WORD[language] = byWord;
    }
    let term = (byWord[word] ?? 0) - 1;
    if (term < 0) {
      term = internTerm(asciiWordTerm(src.slice(i, j).toLowerCase(), language));
      // Interning may have grown nothing here (`byWord` is per language and only grows above).
      byWord[word] = term + 1;
    }
    ids.push(term);
  };
  for (let s = 0; s < spans.length; s++) {
    const span = spans[s] as SentenceSpan;
    bounds[s] = ids.length;
    lengths[s] = scanTerms(text, span.start, span.end, hit, stemOf, undefined, ascii);
  }
  bounds[spans.length] = ids.length;
  return { wordTable: WORD_TABLE.generation, lengths, bounds, ids: Int32Array.from(ids) };
}

/**
 * A text's terms against a query's (`queryIds`: the word ids of the scanned query terms, in order): per
 * sentence its length and `[query term index, frequency]` pairs in the order first seen, as a scanner of those
 * terms reads them (text/relevance.ts `termScanner`).
 */
function queryHits(terms: TextTerms, queryIds: Int32Array): MemoryTerms {
  const { lengths, bounds, ids } = terms;
  const n = lengths.length;
  const found: Array<number[] | null> = new Array(n);
  // Each sentence's pairs collected in a scratch list (`count` long), copied out at their exact size.
  const pairs = PAIR_SCRATCH;
  for (let s = 0; s < n; s++) {
    let count = 0;
    const end = bounds[s + 1] ?? 0;
    for (let x = bounds[s] ?? 0; x < end; x++) {
      const id = ids[x] as number;
      // The last query term with this id (a term list's index map keeps the last of a repeated term).
      let k = queryIds.length - 1;
      while (k >= 0 && queryIds[k] !== id) k--;
      if (k < 0) continue;
      let p = 0;
      while (p < count && pairs[p] !== k) p += 2;
      if (p < count) pairs[p + 1] = (pairs[p + 1] ?? 0) + 1;
      else {
        pairs[count++] = k;
        pairs[count++] = 1;
      }
    }
    found[s] = count === 0 ? null : exactCopy(pairs, count);
  }
  return { lengths, found };
}

/** `queryHits`' pairs of the sentence being read, and `termsIn`'s terms (both synchronous, never re-entered). */
const PAIR_SCRATCH: number[] = [];
/** `termsIn`'s one span over the whole text being read. */
const WHOLE_SPAN: SentenceSpan[] = [{ start: 0, end: 0 }];

/** Each language's term id (+1; 0: not known yet) of every ASCII word id, for the word table's current generation. */
const TERM_OF_WORD: Partial<Record<StopLanguage, Int32Array>> = {};

/** The word-table id of the string `term` (interned as a word of its own: hashed over all its code units). */
function internTerm(term: string): number {
  return wordId(term, 0, term.length, foldedHash(term, 0, term.length) & 0x3fffffff, false);
}

/** The word table's hash of `text[i, j)`: FNV-1a over its code units, A–Z folded (as `wordsOf` hashes a word). */
function foldedHash(text: string, i: number, j: number): number {
  let h = 0x811c9dc5 | 0;
  for (let k = i; k < j; k++) {
    const c = text.charCodeAt(k);
    h = Math.imul(h ^ (c >= 65 && c <= 90 ? c | 32 : c), 0x01000193);
  }
  return h;
}

/**
 * `byKey`'s array for `key`: one value per sentence of `text` (whose facts are `facts`), −1 until computed; made
 * when first asked.
 */
function perSentence<K, A extends Float64Array | Int32Array>(
  byKey: Map<K, A>,
  key: K,
  Values: new (length: number) => A,
  text: string,
  facts: TextFacts,
): A {
  let values = byKey.get(key);
  if (values === undefined) {
    facts.spans ??= sentenceSpans(text);
    values = new Values(facts.spans.length).fill(-1) as A;
    byKey.set(key, values);
  }
  return values;
}

/** Whether `text[i, j)` lower-cased (ASCII) is `word`. */
function sameWord(text: string, i: number, j: number, word: string): boolean {
  if (word.length !== j - i) return false;
  for (let k = 0; k < word.length; k++) {
    const c = text.charCodeAt(i + k);
    if ((c >= 65 && c <= 90 ? c | 32 : c) !== word.charCodeAt(k)) return false;
  }
  return true;
}

/** Slots of the word table: a power of two, at least twice `MAX_WORDS`. */
const TABLE_SIZE = 1 << 18;
const TABLE_MASK = TABLE_SIZE - 1;

/**
 * Word ids, shared by every request: the words by id, and an open-addressing table from each word's code-unit
 * hash (+1; 0 is an empty slot) to its id. `seen` stamps the ids met in the text being read (`nextStamp`).
 */
const WORD_TABLE = {
  /** Counts the times the table started afresh: word ids of another generation are stale. */
  generation: 0,
  list: [] as string[],
  hashes: new Int32Array(TABLE_SIZE),
  ids: new Int32Array(TABLE_SIZE),
  overflow: new Map<string, number>(),
  seen: new Int32Array(1024),
  stamp: 0,
};
/** Words kept in the table at most (a few MB), like the stemmer's cache (text/relevance.ts). */
const MAX_WORDS = 50_000;

function resetWordTable(): void {
  WORD_TABLE.generation++;
  for (const language of Object.keys(TERM_OF_WORD) as StopLanguage[]) TERM_OF_WORD[language]?.fill(0);
  WORD_TABLE.list.length = 0;
  WORD_TABLE.hashes.fill(0);
  WORD_TABLE.overflow.clear();
}

/** A fresh stamp for `seen` (every id's mark is cleared when the counter would overflow). */
function nextStamp(): number {
  if (WORD_TABLE.stamp >= 0x3fffffff) {
    WORD_TABLE.seen.fill(0);
    WORD_TABLE.stamp = 0;
  }
  return ++WORD_TABLE.stamp;
}

function growSeen(id: number): void {
  const grown = new Int32Array(Math.max(id + 1, 2 * WORD_TABLE.seen.length));
  grown.set(WORD_TABLE.seen);
  WORD_TABLE.seen = grown;
}

/** A turn's speaker as `RequestIndex.speaker` reads it. */
export interface Speaker {
  /** The text before `: ` at its start (at most 40 characters, no line break), lower-cased; "" without one. */
  speaker: string;
  /** Its first word (split at whitespace). */
  first: string;
}
const SPEAKER = /^([^:\n]{1,40}):\s/;

/** What one request knows of a text: the shared facts, and what depends on the request (query, tokenizer). */
interface IndexedText {
  facts: TextFacts;
  terms?: MemoryTerms;
}

const NO_TERMS: readonly number[] = Object.freeze([]);

/**
 * What is known of a text whatever the request: its sentence spans, its sentences' answer fits per answer type
 * and token counts per tokenizer (each filled when first asked) and its word ids (valid for the word table's `wordTable` generation). Pure
 * functions of the text, so they are shared by every request through `SHARED_FACTS`: the same memories come
 * back request after request (and twice in one with an expansion round), and each is split into sentences and
 * read for answers once while it stays in the cache. Shared values are never changed once set (a fit is written
 * once, from −1 to its value).
 */
interface TextFacts {
  spans?: readonly SentenceSpan[];
  fits?: Map<AnswerType, Float64Array>;
  /** Each sentence's count (−1: not counted yet) per tokenizer (the instance, not its name: a test's fake may share one). */
  tokens?: Map<Tokenizer, Int32Array>;
  words?: readonly number[];
  wordTable?: number;
  /** Its sentences' terms per language (`TextTerms`), made when a request reads the text again. */
  terms?: Partial<Record<StopLanguage, TextTerms>>;
  /** Whether a request scanned it for query terms (the next one keeps its terms). */
  scanned?: boolean;
  speaker?: Speaker;
  ascii?: boolean;
}

/** Texts longer than this are not shared (a hostile long memory never stays in the cache). */
const MAX_SHARED_TEXT = 8192;
/** Per generation of the cache: at most this many texts, adding up to at most this many code units. */
const SHARED_FACTS = new RecentCache<TextFacts>(4096, 1 << 21);

/** The shared facts of `text` (fresh ones, not shared, for a long text). */
function factsOf(text: string): TextFacts {
  if (text.length > MAX_SHARED_TEXT) return {};
  let facts = SHARED_FACTS.get(text);
  if (facts === undefined) {
    facts = {};
    SHARED_FACTS.set(text, facts);
  }
  return facts;
}

/** `[\p{L}\p{N}]` per BMP code unit, filled on first sight: 0 not yet, 1 no, 2 yes. */
const WORD_UNIT = new Uint8Array(0x10000);
const WORD_CHAR = /^[\p{L}\p{N}]$/u;

/**
 * How many code units the code point at `j` (code unit `c` ≥ 128) takes when it is a letter or digit
 * (`[\p{L}\p{N}]`), 0 when it is not one (a lone surrogate never is).
 */
function wordCharWidth(text: string, j: number, c: number): number {
  if (c >= 0xd800 && c <= 0xdfff) {
    const next = text.charCodeAt(j + 1);
    if (c > 0xdbff || !(next >= 0xdc00 && next <= 0xdfff)) return 0;
    return WORD_CHAR.test(text.slice(j, j + 2)) ? 2 : 0;
  }
  let known = WORD_UNIT[c] ?? 0;
  if (known === 0) {
    known = WORD_CHAR.test(String.fromCharCode(c)) ? 2 : 1;
    WORD_UNIT[c] = known;
  }
  return known === 2 ? 1 : 0;
}

const ASCII_ALNUM = new Uint8Array(128);
for (let c = 0; c < 128; c++) {
  ASCII_ALNUM[c] = (c >= 97 && c <= 122) || (c >= 65 && c <= 90) || (c >= 48 && c <= 57) ? 1 : 0;
}

/**
 * How `sub`'s terms sit in `all`: true when they are the same list, an index map (`all`'s index → `sub`'s, −1
 * for terms not in `sub`) when every term of `sub` is in `all`, else undefined.
 */
function subListMap(all: readonly string[], sub: readonly string[]): Int32Array | true | undefined {
  if (all.length === sub.length && all.every((t, i) => t === sub[i])) return true;
  const map = new Int32Array(all.length).fill(-1);
  for (let k = 0; k < sub.length; k++) {
    const at = all.indexOf(sub[k] ?? "");
    if (at < 0 || map[at] !== -1) return undefined;
    map[at] = k;
  }
  return map;
}

/**
 * The Jaccard index of two lists of distinct word ids (`wordIds`): `a`'s ids stamped in the word table's
 * marks, `b`'s looked up there (no sorting, nothing allocated).
 */
export function jaccardOfIds(a: readonly number[], b: readonly number[]): number {
  if (a.length === 0 || b.length === 0) return 0;
  const stamp = nextStamp();
  const seen = WORD_TABLE.seen;
  for (let i = 0; i < a.length; i++) {
    const id = a[i] as number;
    if (id >= seen.length) {
      growSeen(id);
      return jaccardOfIds(a, b);
    }
    seen[id] = stamp;
  }
  let inter = 0;
  for (let j = 0; j < b.length; j++) if (seen[b[j] as number] === stamp) inter++;
  return inter / (a.length + b.length - inter);
}
