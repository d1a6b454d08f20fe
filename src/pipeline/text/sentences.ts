/**
 * Sentence segmentation for the clip stage (CONTRACT §4 stage 6).
 *
 * A hand-written scanner over UTF-16 code units (no locale, no ICU, no Intl), so the result is identical on
 * every host, TZ and LANG, and costs a few µs per 500 characters. Terminators are looked at one cluster at a
 * time (terminators, closing quotes/brackets and attached emoji, e.g. `?!")`); a cluster ends a sentence by
 * these rules:
 *
 * - Full-width and script terminators `。！？｡︒ ؟ ۔ । ॥ ։ ። ፧` always end a sentence, no space needed
 *   (except Japanese `「…！」と言った`: a closing quote followed by the quotative と/って continues it).
 * - `.` `!` `?` need whitespace (or the end) after the cluster; `!`/`?` directly followed by CJK also end one.
 * - Anything inside a token never ends one: decimals (3.14), versions (v1.2.3), URLs, e-mails, `e.g`.
 * - After a closing quote/bracket, a lowercase next word continues the sentence (`"Stop!" he said.`).
 * - `!` `?` end a sentence before anything else, lowercase included (chat text is often lowercase).
 * - Ellipsis (`...`, `…`): ends a sentence only before an uppercase word, and not before the pronoun "I"
 *   ("Well... I think so." is one sentence, "Well... We left." two).
 * - `.` after a word: ends a sentence (lowercase next word included), unless the word is an abbreviation:
 *   titles (Dr. Mr. e.g. vs. …) never end one; numbering words (No. Fig. Jan.–Dec. p. …) do not before a
 *   digit; `etc.` does not before lowercase (so "etc. Then" ends the sentence); ambiguous ones (Inc. Ltd.
 *   Co. Jr. Sr. St. a.m. p.m. U.S. and any `X.Y.` chain or single-letter initial) do not before lowercase
 *   and, before an uppercase word, end it only when that word is a common sentence starter ("The", "He", …).
 *   So "J. R. R. Tolkien" and "U.S. Army" stay whole while "at 3 p.m. Then we left." splits.
 * - A list marker `1.` at the start of a line is not a sentence; neither is an item number written inline
 *   ("I need: 1. milk 2. eggs 3. bread."): a number after a space, colon or opening bracket whose neighbour
 *   in the sequence (N−1 before it, or 2 after a 1) stands the same way within 400 characters. A number up
 *   to 31 with a period before a month name (English, German, French, Spanish), before "bis"/"und", or after
 *   a German article or preposition ("am 3. Mai", "vom 13. bis 20. September", "der 3. Platz") is an ordinal.
 *   A count ("I bought 2. Then…") still ends the sentence.
 * - Abbreviations of German, French and Spanish running text (z. B., d. h., bzw., ca., Nr., inkl., ggf., usw.,
 *   "Hauptstr. 5"; M., p. ex., env., cf.; Sra., Dra., aprox., Avda.) follow the same kinds as the English
 *   ones; German and French sentence openers count as starters (German capitalizes every noun, so only
 *   those mean "new sentence" after an ambiguous abbreviation).
 * - Quotes and brackets: a closing guillemet after a space ("Viens ! »", French typography, any of the three
 *   spaces) belongs to the terminator's cluster, so a lowercase word after it continues the sentence.
 *   Inside CJK title brackets 《…》〈…〉 no sentence ends; a full-width terminator, a closing quote and a
 *   speech attribution (と, って, 说, 道, 问) continue one (“你好！”他说。); before anything else it ends.
 * - A blank line (two line breaks, or U+2029) ends a sentence; a single line break does not.
 */

export interface SentenceSpan {
  /** Index of the first non-whitespace code unit. */
  start: number;
  /** Index just after the last code unit (closing quotes included, trailing whitespace excluded). */
  end: number;
}

// One flag byte per UTF-16 code unit, built once: the hot loop is a table read per character.
const NONE = 0;
const DOT = 1;
const ELLIPSIS = 2;
const STRONG = 3;
const FULL = 4;
const TERM = 7;
const SPACE = 8;
const BREAK = 16;
const CLOSER = 32;
const OPENER = 64;
const GLUE = 128;
const FLAGS = new Uint8Array(0x10000);
function mark(chars: string, flag: number, mask = 0xff): void {
  for (let i = 0; i < chars.length; i++) {
    const c = chars.charCodeAt(i);
    FLAGS[c] = ((FLAGS[c] ?? 0) & mask) | flag;
  }
}
mark("。！？｡︒؟۔।॥։።፧", FULL, ~TERM);
mark("!?‼⁇⁈⁉", STRONG, ~TERM);
mark("…⋯", ELLIPSIS, ~TERM);
mark(".", DOT, ~TERM);
// Exactly what `String.prototype.trim` removes (WhiteSpace + LineTerminator).
mark(
  "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029",
  SPACE,
);
mark("\u202f\u205f\u3000\ufeff", SPACE);
mark("\n\v\f\r\u2028\u2029", BREAK);
mark(`"'”’»›)]}」』）】〕》〉］｝〙〛〗｣〞＂＇`, CLOSER);
mark(`"'“‘«‹([{「『（【〔《〈［｛〘〚〖｢〝¿¡„‚`, OPENER);
mark("@/\\_:=&#%+~", GLUE);

const flagsOf = (c: number): number => FLAGS[c] ?? 0;
const isSpace = (c: number): boolean => (flagsOf(c) & SPACE) !== 0;
const isLineBreak = (c: number): boolean => (flagsOf(c) & BREAK) !== 0;

type AbbrevKind = "title" | "numeric" | "suffix" | "ambiguous" | "initial";
const ABBREVIATIONS = new Map<string, { kind: AbbrevKind; capOnly: boolean }>();
function define(kind: AbbrevKind, words: string): void {
  for (const w of words.split(" ")) {
    ABBREVIATIONS.set(w.toLowerCase(), { kind, capOnly: w.charAt(0) !== w.charAt(0).toLowerCase() });
  }
}
define(
  "title",
  "Dr Mr Mrs Ms Mx Messrs Mmes Mme Mlle Prof Rev Hon Fr Gen Col Capt Cmdr Lt Sgt Maj Adm Gov Sen Rep Pres " +
    "Supt Mt Ft e.g i.e cf vs v viz approx resp incl excl esp a.k.a",
);
define(
  "numeric",
  "No Nos Nr Fig Figs Vol Vols Ch Chap Sec Art Eq Eqs p pp ca Jan Feb Mar Apr Jun Jul Aug Sep Sept Oct Nov Dec",
);
define("suffix", "etc");
define("ambiguous", "Inc Ltd Co Corp Jr Sr St Bros al Ph.D M.D B.Sc M.Sc a.m p.m");
// German, French and Spanish running text. Titles and connectives never end a sentence; numbering words do
// not before a digit; "usw." (like "etc.") ends one before a capital.
define(
  "title",
  "Hr Hrn Dipl Ing bzw vgl ggf evtl sog bspw inkl zzgl exkl geb lt Mlle MM Me Mgr Pr Sra Srta Dra Dña " +
    "Ud Uds env cf aprox",
);
define(
  "numeric",
  "Nr Str Tel Abs Bd Jh Mio Mrd Std Min Kap Aufl Mär Okt Dez janv févr avr juil déc chap éd vol art ene abr " +
    "ago dic Avda núm",
);
define("suffix", "usw usf");

/** Capitalized words that usually begin a sentence: after an ambiguous abbreviation they mean "new sentence". */
const STARTERS = new Set(
  (
    "A An The I He She It We They You This That These Those There Then But And So Or If In On At As After " +
    "Before When While What Where Why How Who My Our Your His Her Their Its Next Also However Meanwhile Later " +
    "Today Yesterday Tomorrow Now Yes No Please Thanks Thank Let Is Are Was Were Do Does Did Can Could Will " +
    "Would Should For From To With By Not All Some Many Most One Each Every Both Because Although Though " +
    "Since Still Thus Hence Finally First Sure Ok Okay Hi Hello See Here " +
    // German, French, Spanish sentence openers (German capitalizes every noun: only these mean "new sentence").
    "Der Die Das Ich Wir Er Es Ihr Aber Und Dann Heute Gestern Morgen Danach Also Jetzt Auch Ein Eine " +
    "Le La Les Je Il Elle Nous Vous Ils Elles On Mais Et Puis Alors Ensuite Un Une " +
    "El Los Las Yo Él Ella Nosotros Pero Luego Hoy Ayer Mañana Después Entonces Ya"
  ).split(" "),
);

const DOTTED_CHAIN = /^(?:\p{L}\p{M}*\.)+\p{L}\p{M}*$/u;
const SINGLE_LETTER = /^[\p{Lu}\p{Ll}]\p{M}*$/u;
const LETTER_OR_MARK = /^[\p{L}\p{M}]$/u;
const UPPER = /^[\p{Lu}\p{Lt}]$/u;
const LOWER = /^\p{Ll}$/u;
const DIGIT = /^\p{Nd}$/u;
const PICTOGRAPH = /^\p{Extended_Pictographic}$/u;

const cpAt = (text: string, i: number): number => text.codePointAt(i) ?? 0;
function cpBefore(text: string, i: number): number {
  const lo = text.charCodeAt(i - 1);
  const hi = i >= 2 ? text.charCodeAt(i - 2) : 0;
  if (lo >= 0xdc00 && lo <= 0xdfff && hi >= 0xd800 && hi <= 0xdbff) return cpAt(text, i - 2);
  return Number.isNaN(lo) ? 0 : lo;
}
const cpLen = (cp: number): number => (cp > 0xffff ? 2 : 1);

function isLetterOrMark(cp: number): boolean {
  if (cp < 128) return (cp >= 65 && cp <= 90) || (cp >= 97 && cp <= 122);
  if (isCjk(cp)) return true;
  return LETTER_OR_MARK.test(String.fromCodePoint(cp));
}

type Case = "upper" | "lower" | "digit" | "other";
function caseOf(cp: number): Case {
  if (cp < 128) {
    if (cp >= 65 && cp <= 90) return "upper";
    if (cp >= 97 && cp <= 122) return "lower";
    return cp >= 48 && cp <= 57 ? "digit" : "other";
  }
  if (isCjk(cp)) return "other";
  const ch = String.fromCodePoint(cp);
  if (LOWER.test(ch)) return "lower";
  if (UPPER.test(ch)) return "upper";
  return DIGIT.test(ch) ? "digit" : "other";
}

/** Han, kana, Hangul: scripts written without spaces between sentences. */
function isCjk(cp: number): boolean {
  return (
    (cp >= 0x3040 && cp <= 0x30ff) ||
    (cp >= 0x3400 && cp <= 0x4dbf) ||
    (cp >= 0x4e00 && cp <= 0x9fff) ||
    (cp >= 0xac00 && cp <= 0xd7af) ||
    (cp >= 0xf900 && cp <= 0xfaff) ||
    (cp >= 0x20000 && cp <= 0x3ffff)
  );
}

/** `closed`: the cluster ends with a closing quote or bracket. */
interface Cluster {
  end: number;
  kind: number;
  closed: boolean;
}

const isGuillemetClose = (text: string, j: number): boolean => {
  const c = text.charCodeAt(j);
  return c === 0xbb || c === 0x203a;
};

/** Reads terminators, closers and attached emoji starting at `i` (a terminator). */
function readCluster(text: string, i: number): Cluster {
  let kind = NONE;
  let full = false;
  let strong = false;
  let closed = false;
  let j = i;
  while (j < text.length) {
    const c = text.charCodeAt(j);
    const t = flagsOf(c) & TERM;
    if (t !== NONE) {
      kind = t === DOT && j > i && text.charCodeAt(j - 1) === 46 ? ELLIPSIS : t;
      full ||= t === FULL;
      strong ||= t === STRONG;
      closed = false;
      j++;
    } else if ((flagsOf(c) & CLOSER) !== 0) {
      closed = true;
      j++;
    } else if (kind !== NONE && (c === 0x20 || c === 0xa0 || c === 0x202f) && isGuillemetClose(text, j + 1)) {
      // French typography puts a (narrow no-break) space before the closing guillemet: "Viens ! »".
      closed = true;
      j += 2;
    } else if (c >= 0x2000 && !isCjk(c)) {
      const cp = cpAt(text, j);
      const emoji = cp === 0xfe0f || cp === 0x200d || (cp >= 0x1f3fb && cp <= 0x1f3ff);
      const pictograph = cp >= 0x1f000 || (cp < 0x3300 && PICTOGRAPH.test(String.fromCodePoint(cp)));
      if (!emoji && !pictograph) break;
      j += cpLen(cp);
    } else break;
  }
  if (full) kind = FULL;
  else if (strong && kind === DOT) kind = STRONG;
  return { end: j, kind, closed };
}

/** The word (letters, marks and inner dots) right before the `.` at `i`, or "" when it cannot be an abbreviation. */
function wordBefore(text: string, i: number): string {
  let p = i;
  let dotted = false;
  while (p > 0) {
    const c = text.charCodeAt(p - 1);
    let step = 1;
    if (c === 46) dotted = true;
    else if (c < 128) {
      if (!((c >= 65 && c <= 90) || (c >= 97 && c <= 122))) break;
    } else {
      const cp = cpBefore(text, p);
      if (!isLetterOrMark(cp)) break;
      step = cpLen(cp);
    }
    p -= step;
    if (i - p > (dotted ? 31 : 14)) return ""; // longer than any abbreviation (or a compound ending in one)
  }
  if (p === i || text.charCodeAt(p) === 46) return "";
  const before = p > 0 ? cpBefore(text, p) : 32;
  if ((flagsOf(before) & GLUE) !== 0 || caseOf(before) === "digit") return "";
  return text.slice(p, i);
}

function abbreviationKind(word: string): AbbrevKind | undefined {
  const first = caseOf(cpAt(word, 0));
  if (first !== "upper" && first !== "lower") return undefined; // also "" and uncased scripts
  const entry = ABBREVIATIONS.get(word.toLowerCase());
  if (entry && (!entry.capOnly || first === "upper")) return entry.kind;
  // German street names: "Hauptstr. 5", "Lindenstr. 14".
  if (word.length > 3 && word.endsWith("str") && first === "upper") return "numeric";
  if (word.includes(".")) return DOTTED_CHAIN.test(word) ? "ambiguous" : undefined;
  return word.length === 1 || (word.length <= 4 && SINGLE_LETTER.test(word)) ? "initial" : undefined;
}

function isStarter(text: string, k: number, initial: boolean): boolean {
  let e = k;
  while (e < text.length && caseOf(text.charCodeAt(e)) !== "other" && e - k < 12) e++;
  if (e < text.length && isLetterOrMark(cpAt(text, e))) return false;
  const word = text.slice(k, e);
  return STARTERS.has(word) && !(initial && word.length === 1);
}

/** `1.` `12.` alone at the start of a line. */
function isListMarker(text: string, i: number): boolean {
  let p = i;
  while (p > 0 && i - p < 4 && caseOf(text.charCodeAt(p - 1)) === "digit") p--;
  if (p === i || i - p > 3) return false;
  while (p > 0 && (text.charCodeAt(p - 1) === 32 || text.charCodeAt(p - 1) === 9)) p--;
  return p === 0 || isLineBreak(text.charCodeAt(p - 1));
}

/** French "p. ex." (par exemple): the "ex." after "p." is an abbreviation, not a word. */
function isParExemple(text: string, i: number): boolean {
  const before = text.slice(Math.max(0, i - 5), i - 2);
  return /(^|[^\p{L}])p\.\s?$/u.test(before);
}

const MONTHS = new Set(
  (
    "january february march april may june july august september october november december " +
    "jan feb mar apr jun jul aug sep sept oct nov dec " +
    "januar jänner februar märz april mai juni juli august september oktober november dezember mär okt dez " +
    "janvier février mars avril mai juin juillet août septembre octobre novembre décembre " +
    "janv févr avr juil déc " +
    "enero febrero marzo abril mayo junio julio agosto septiembre setiembre octubre noviembre diciembre"
  ).split(" "),
);
/** German words after which a number with a period is an ordinal: "am 3.", "der 2.", "bis zum 15.". */
const ORDINAL_LEAD = new Set(
  "am im vom zum zur bis ab seit der die das den dem des beim ihr ihre sein seine mein meine".split(" "),
);
/** Words that continue a German date range or list of ordinals: "vom 13. bis 20. September". */
const ORDINAL_NEXT = new Set(["bis", "und", "oder", "u"]);

const LETTERS_AT = /[\p{L}\p{M}]+/uy;
function letterWordAt(text: string, k: number): string {
  LETTERS_AT.lastIndex = k;
  return LETTERS_AT.exec(text)?.[0] ?? "";
}
function letterWordBefore(text: string, p: number): string {
  let q = p;
  while (q > 0 && text.charCodeAt(q - 1) === 32) q--;
  let r = q;
  while (r > 0 && isLetterOrMark(cpBefore(text, r))) r -= cpLen(cpBefore(text, r));
  return text.slice(r, q);
}

/**
 * A number and its period that are not the end of a sentence (the `.` at `i`, the next word at `k`):
 * - an ordinal date or a German ordinal: "am 3. Mai", "le 3. mars" is not French but "3. Mai", "vom 13. bis
 *   20. September", "der 2. Platz" — a number up to 31 before a month name, before "bis"/"und", or after a
 *   German article or preposition;
 * - an item of a numbered list written inline: "1. milk 2. eggs 3. bread" — a number after a space, a colon or
 *   an opening bracket whose neighbour in the sequence (N−1 before it, or 2 after a 1) stands the same way
 *   within 400 characters. "I bought 2. Then we left." has no such neighbour: it ends.
 */
function isNumberMark(text: string, i: number, k: number): boolean {
  let p = i;
  while (p > 0 && i - p < 3 && caseOf(text.charCodeAt(p - 1)) === "digit") p--;
  if (p === i || (p > 0 && caseOf(text.charCodeAt(p - 1)) === "digit")) return false;
  const before = p > 0 ? text.charCodeAt(p - 1) : 32;
  if (!(isSpace(before) || before === 58 || (flagsOf(before) & OPENER) !== 0)) return false;
  const n = Number(text.slice(p, i));
  const next = letterWordAt(text, k).toLowerCase();
  if (n >= 1 && n <= 31) {
    if (MONTHS.has(next) || ORDINAL_NEXT.has(next)) return true;
    if (ORDINAL_LEAD.has(letterWordBefore(text, p).toLowerCase())) return true;
  }
  return hasListNeighbour(text, p, i, n);
}

/** Whether the item number `n` (at `p`..`i`) has its neighbour in an inline list: N−1 before it, or 2 after a 1. */
function hasListNeighbour(text: string, p: number, i: number, n: number): boolean {
  const marker = (m: number) => new RegExp(`(?:^|[\\s:(\\[（])${m}\\.(?=\\s)`, "g");
  if (n > 1) {
    const from = Math.max(0, p - 400);
    return marker(n - 1).test(text.slice(from, p));
  }
  if (n === 1) return marker(2).test(text.slice(i, i + 400));
  return false;
}

function ellipsisEnds(text: string, k: number, next: Case): boolean {
  const pronounI = text.charCodeAt(k) === 73 && !isLetterOrMark(cpAt(text, k + 1));
  return next === "upper" && !pronounI;
}

function periodEnds(text: string, i: number, k: number, next: Case): boolean {
  // Spaced ellipsis ". . .": no end inside it, the ellipsis rule after its last dot.
  if (text.charCodeAt(k) === 46 && (k + 1 >= text.length || isSpace(text.charCodeAt(k + 1)))) return false;
  if (i >= 2 && text.charCodeAt(i - 1) === 32 && text.charCodeAt(i - 2) === 46)
    return ellipsisEnds(text, k, next);
  const word = wordBefore(text, i);
  const kind = word === "ex" && isParExemple(text, i) ? "title" : abbreviationKind(word);
  if (kind === undefined) return !isListMarker(text, i) && !isNumberMark(text, i, k);
  if (kind === "title" || next === "lower") return false;
  if (kind === "numeric") return next !== "digit";
  if (kind === "suffix" || next !== "upper") return true;
  return isStarter(text, k, kind === "initial");
}

/** A terminator inside CJK title brackets (《为什么？》, 〈…〉) is part of the title: no sentence ends there. */
function insideTitle(text: string, i: number): boolean {
  for (let p = i - 1; p >= 0 && i - p <= 64; p--) {
    const c = text.charCodeAt(p);
    if (c === 0x300a || c === 0x3008) return true; // 《 〈
    if (c === 0x300b || c === 0x3009 || c === 0x3002) return false; // 》 〉 。
  }
  return false;
}

/** Chinese quoted speech with its attribution right after the closing quote: “你好！”他说。 */
function saidAfter(text: string, j: number): boolean {
  for (let q = j; q < j + 3 && q < text.length; q++) {
    const c = text.charCodeAt(q);
    if (c === 0x8bf4 || c === 0x8aaa || c === 0x9053 || c === 0x95ee || c === 0x554f) return true; // 说說道问問
    if (!isCjk(c)) return false;
  }
  return false;
}

function clusterEnds(text: string, i: number, cl: Cluster): boolean {
  const j = cl.end;
  if (j >= text.length) return false;
  const c = text.charCodeAt(j);
  if (cl.kind === FULL) {
    if (insideTitle(text, i)) return false;
    return !(
      cl.closed &&
      (c === 0x3068 || (c === 0x3063 && text.charCodeAt(j + 1) === 0x3066) || saidAfter(text, j))
    );
  }
  if (cl.kind === STRONG && isCjk(cpAt(text, j)) && insideTitle(text, i)) return false;
  if (!isSpace(c)) {
    if (cl.kind === STRONG) return isCjk(cpAt(text, j));
    return cl.kind === DOT && isCjk(cpAt(text, j)) && i > 0 && isCjk(cpBefore(text, i));
  }
  let k = j;
  while (k < text.length && isSpace(text.charCodeAt(k))) k++;
  while (k < text.length && (flagsOf(text.charCodeAt(k)) & OPENER) !== 0) k++;
  if (k >= text.length) return false;
  const next = caseOf(cpAt(text, k));
  if (cl.closed && next === "lower") return false;
  if (cl.kind === STRONG) return true;
  if (cl.kind === ELLIPSIS) return ellipsisEnds(text, k, next);
  return periodEnds(text, i, k, next);
}

/** Matches a run of anything but terminators and line breaks (sticky, so no allocation). */
const CONTENT_RUN = /[^.!?‼⁇⁈⁉…⋯。！？｡︒؟۔।॥։።፧\n\v\f\r\u2028\u2029]*/y;

/** The end of the content before `pos`: `pos` moved back over whitespace, but not before `floor`. */
function trimEnd(text: string, pos: number, floor: number): number {
  let q = pos;
  while (q > floor && isSpace(text.charCodeAt(q - 1))) q--;
  return q;
}

function push(ends: number[], pos: number): void {
  const last = ends.length > 0 ? (ends[ends.length - 1] ?? 0) : 0;
  if (pos > last) ends.push(pos);
}

/**
 * End offsets (exclusive, trailing whitespace excluded) of each sentence of `text`, in order.
 * With `limit`, scanning stops once that many sentences are found (what the clip stage needs).
 */
export function sentenceEnds(text: string, limit = Number.POSITIVE_INFINITY): number[] {
  const ends: number[] = [];
  const n = text.length;
  let contentEnd = 0;
  let i = 0;
  while (i < n) {
    const c = text.charCodeAt(i);
    const f = flagsOf(c);
    if ((f & (TERM | BREAK)) === 0) {
      // Dense CJK punctuation: step. Elsewhere let the regex engine skip the run in native code.
      if (c >= 0x2e80 || text.charCodeAt(i + 1) >= 0x2e80) i++;
      else {
        CONTENT_RUN.lastIndex = i;
        CONTENT_RUN.test(text);
        i = CONTENT_RUN.lastIndex;
      }
      continue;
    }
    if ((f & TERM) !== NONE) {
      const cl = readCluster(text, i);
      if (clusterEnds(text, i, cl)) push(ends, cl.end);
      if (ends.length >= limit) return ends;
      contentEnd = cl.end;
      i = cl.end;
      continue;
    }
    contentEnd = trimEnd(text, i, contentEnd);
    let breaks = 0;
    let r = i;
    for (; r < n && isSpace(text.charCodeAt(r)); r++) {
      const w = text.charCodeAt(r);
      if (w === 0x2029) breaks += 2;
      else if (isLineBreak(w) && !(w === 13 && text.charCodeAt(r + 1) === 10)) breaks++;
    }
    if (breaks >= 2 && r < n) push(ends, contentEnd);
    if (ends.length >= limit) return ends;
    i = r;
  }
  contentEnd = trimEnd(text, n, contentEnd);
  push(ends, contentEnd);
  return ends;
}

/** Each sentence as a span of `text`; between two spans there is only whitespace (possibly none). */
export function sentenceSpans(text: string, limit = Number.POSITIVE_INFINITY): SentenceSpan[] {
  const spans: SentenceSpan[] = [];
  let start = 0;
  for (const end of sentenceEnds(text, limit)) {
    while (start < end && isSpace(text.charCodeAt(start))) start++;
    spans.push({ start, end });
    start = end;
  }
  return spans;
}

/** The sentences of `text`, each trimmed; inner text is kept verbatim. */
export function splitSentences(text: string): string[] {
  return sentenceSpans(text).map((s) => text.slice(s.start, s.end));
}
