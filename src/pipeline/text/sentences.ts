/**
 * Sentence segmentation for the clip stage (docs/policy.md#clip).
 *
 * A hand-written scanner over UTF-16 code units (no locale, no ICU, no Intl), so the result is identical on
 * every host, TZ and LANG, and costs a few µs per 500 characters: one left-to-right pass, a table read per
 * character, and bounded look-arounds (at most a few hundred code units) only at terminators. Terminators are
 * looked at one cluster at a time (terminators, closing quotes/brackets and attached emoji, e.g. `?!")`); a
 * cluster ends a sentence by these rules:
 *
 * Terminators
 * - Full-width and script terminators `。！？｡︒ ؟ ۔ । ॥ ։ ። ፧` end a sentence with no space needed.
 * - `.` `!` `?` need whitespace (or the end) after the cluster; `!`/`?` directly followed by CJK also end
 *   one ("Hello!你好"), and so does `.` between two CJK characters.
 * - Anything inside a token never ends one: decimals (3.14), versions (v1.2.3), URLs, e-mails, `e.g`, `c.-à-d.`.
 * - `!` `?` end a sentence before anything but a lowercase word after a closing quote or bracket, lowercase
 *   included (chat text is often lowercase). French puts a space before `! ? : ;` ("Tu viens ? Oui."): the
 *   space is ordinary whitespace, so nothing special is needed.
 * - Ellipsis (`...`, `…`, `. . .`): ends a sentence only before an uppercase word, and not before the pronoun
 *   "I" ("Well... I think so." is one sentence, "Well... We left." two).
 * - A blank line (two line breaks, or U+2029) ends a sentence; a single line break does not.
 *
 * Quotes and brackets (the cluster "closes" when it ends with a closing quote or bracket)
 * - Closing marks: `" ' ” ’ » › ) ] }` and the CJK ones `」 』 》 〉 ）`…; also `“ ‘ « ‹` directly after a
 *   terminator when no letter or digit follows (German „Komm!“, Swiss «Ça va?», German »Komm!« closers).
 *   French typography's space before a closing guillemet ("Viens ! »", plain, no-break or narrow no-break
 *   space) belongs to the cluster.
 * - After a closed cluster a lowercase word continues the sentence (`"Stop!" he said.`, `She asked (why?)
 *   and left.`, `« Viens vite ! » puis il est parti.`), an uppercase word starts a new one (`He said
 *   "Stop." Then he left.`, `« Au secours ! » Personne n'est venu.`) unless a capitalized speaker and a
 *   speech verb follow (`"Why?" John asked.`, `"Stop!" I said.`).
 * - Inside CJK title brackets 《…》〈…〉 no sentence ends (`我读了《你为什么不来？》这本书。`).
 * - After a CJK closing quote or bracket holding a terminator (「…！」 『…？』 “…。”), the sentence goes on
 *   when the next character cannot start one: Japanese particles と (という, とか), って, を, の; Chinese 的;
 *   a Hangul syllable written against the quote (Korean particles: "안녕!"이라고); a comma or colon
 *   (，、,：:); or a Chinese speech attribution within five characters (说 說 问 問 喊 答 道, not 知道, not
 *   before a colon that opens new speech): `“你好！”她笑着说。` is one sentence, `他问：“你来吗？”我说：“来。”`
 *   two. Anything else after it starts a new sentence (`「行こう！」みんな走った。`, `“我饿了。”我们就去吃饭了。`).
 *
 * A period after a word: ends a sentence (lowercase next word included), unless the word is an abbreviation
 * of one of these kinds (case-insensitive, some only when capitalized):
 * - title and connective: never ends one — Dr. Mr. Prof. Hr. Fr. Dipl.-Ing. e.g. vs. z. B. d. h. bzw. ca.
 *   inkl. vgl. sog. bspw. geb. M. MM. p. ex. cf. env. av. (J.-C.), boul., Sra., aprox. …;
 * - numbering: does not end one before a digit — No. Nr. Fig. p. pp. Str. (and any "…str." street name,
 *   "Hauptstr. 5") Tel. tél. Abs. Jh. Jg. Kap. chap. vol. art. and month abbreviations (Jan. Okt. janv. sept.);
 *   the single initial "S." (Seite, page) does the same ("siehe S. 12");
 * - suffix (etc. usw. o. Ä. u. v. m.): does not end one before lowercase, does before uppercase;
 * - ambiguous (Inc. Ltd. Co. Jr. St. a.m. p.m. Mio. Mrd. ggf. evtl. éd. u. a. s. o. v. Chr. and any `X.Y.`
 *   chain) and single-letter initials: do not end one before lowercase and, before an uppercase word, end it
 *   only when that word is a common sentence starter (English "The He Then", German "Der Die Das Ich Wir",
 *   French "Il Elle Nous", Spanish "El Los Pero" …). German capitalizes every noun, so a capitalized word
 *   alone never means "new sentence": "J. R. R. Tolkien", "U.S. Army", "3 Mio. Euro" stay whole while
 *   "at 3 p.m. Then we left." and "Peter, Anna u. a. Die Nachbarn kamen später." split.
 * - Abbreviations written in parts with spaces ("z. B.", "d. h.", "i. d. R.", "p. ex.", "v. Chr.") are read
 *   as one word, so their last part takes the kind of the whole (and "ex." alone is a word: "my ex. Then").
 *
 * A period after a number (1–3 digits after a space, colon or opening bracket) does not end a sentence when
 * - it is a list marker at the start of a line ("1. Buy milk.\n2. Call mom.");
 * - it is the item number of a list written inline: "1." anchored (text or line start, after a colon, dash
 *   or opening bracket, or right after a sentence end) with a "2." marker within 400 characters after it, or
 *   N > 1 when the item N−1 was accepted within 400 characters before it and no sentence ended in between
 *   unless N starts its own sentence. So "I need: 1. milk 2. eggs 3. bread. Then we go." ends only after
 *   "bread.", "1. Buy milk. 2. Call mom." gives one sentence per item, and "He got 1. She got 2." and "I bought
 *   2. Then we left." end after the numbers (no anchored sequence);
 * - it is an ordinal date: up to 31 before a month name (German, French, Spanish, English except "May", full or
 *   abbreviated: "am 3. Mai", "3. Okt."), or before a lowercase "bis/und/oder" ("vom 13. bis 20. September");
 * - it is a German ordinal after an article or preposition (im vom zum zur beim der die das den dem des bis ab
 *   seit ihr sein mein …; not "am", which is also English: "I am 30."): not an end before lowercase or before
 *   a capitalized word that is not a sentence starter ("der 3. Platz", "das 2. Kapitel", "seit dem 1.
 *   Januar"; "Sie wurde die 2. Das war knapp." still splits).
 * A count ("I bought 2. Then we left.", "Wir waren 12. Alle kamen mit.") still ends the sentence.
 */

import { CJK_BLOCK, classOf, DIGIT, isCjk, LETTER_OR_MARK, LOWER, UPPER } from "./classes";

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
const isAsciiDigit = (c: number): boolean => c >= 48 && c <= 57;

const cpAt = (text: string, i: number): number => text.codePointAt(i) ?? 0;
function cpBefore(text: string, i: number): number {
  const lo = text.charCodeAt(i - 1);
  const hi = i >= 2 ? text.charCodeAt(i - 2) : 0;
  if (lo >= 0xdc00 && lo <= 0xdfff && hi >= 0xd800 && hi <= 0xdbff) return cpAt(text, i - 2);
  return Number.isNaN(lo) ? 0 : lo;
}
const cpLen = (cp: number): number => (cp > 0xffff ? 2 : 1);

const isHangul = (c: number): boolean => c >= 0xac00 && c <= 0xd7af;

const PICTOGRAPH = /^\p{Extended_Pictographic}$/u;

function isLetterOrMark(cp: number): boolean {
  if (cp < 128) return (cp >= 65 && cp <= 90) || (cp >= 97 && cp <= 122);
  return (classOf(cp) & (LETTER_OR_MARK | CJK_BLOCK)) !== 0;
}

type Case = "upper" | "lower" | "digit" | "other";
function caseOf(cp: number): Case {
  if (cp < 128) {
    if (cp >= 65 && cp <= 90) return "upper";
    if (cp >= 97 && cp <= 122) return "lower";
    return cp >= 48 && cp <= 57 ? "digit" : "other";
  }
  const k = classOf(cp);
  if (k & CJK_BLOCK) return "other";
  if (k & LOWER) return "lower";
  if (k & UPPER) return "upper";
  return k & DIGIT ? "digit" : "other";
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

/** “ ‘ « ‹ close German, Swiss and reversed-guillemet quotes: after a terminator, when no word follows. */
function isAltCloser(text: string, j: number): boolean {
  const c = text.charCodeAt(j);
  if (c !== 0x201c && c !== 0x2018 && c !== 0xab && c !== 0x2039) return false;
  if (j + 1 >= text.length) return true;
  const k = caseOf(cpAt(text, j + 1));
  return k === "other" && !isCjk(cpAt(text, j + 1));
}

/** The cluster `readCluster` last read: one object for every scan (read at once, never kept). */
const CLUSTER: Cluster = { end: 0, kind: NONE, closed: false };

/** Reads terminators, closers and attached emoji starting at `i` (a terminator) into `CLUSTER`. */
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
    } else if ((flagsOf(c) & CLOSER) !== 0 || (kind !== NONE && isAltCloser(text, j))) {
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
  CLUSTER.end = j;
  CLUSTER.kind = kind;
  CLUSTER.closed = closed;
  return CLUSTER;
}

type AbbrevKind = "title" | "numeric" | "suffix" | "ambiguous" | "initial";
const ABBREVIATIONS = new Map<string, { kind: AbbrevKind; capOnly: boolean }>();
/** Later definitions of a word replace earlier ones; a capitalized entry only matches capitalized text. */
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
  "No Nos Nr Fig Figs Vol Vols Ch Chap Sec Art Eq Eqs p pp Jan Feb Mar Apr Jun Jul Aug Sep Sept Oct Nov Dec",
);
define("suffix", "etc");
define("ambiguous", "Inc Ltd Co Corp Jr Sr St Bros al Ph.D M.D B.Sc M.Sc a.m p.m");
// German, French and Spanish running text. Titles and connectives never end a sentence ("ca." is circa);
// numbering words do not before a digit; "usw." (like "etc.") ends one before a capital; adverbs and units
// that may close a sentence ("ggf.", "evtl.", "Mio.") are ambiguous.
define(
  "title",
  "Hr Hrn Dipl Ing bzw vgl sog bspw inkl zzgl exkl geb lt ca Mlle MM Me Mgr Pr Sra Srta Dra Dña " +
    "Ud Uds env cf av apr boul aprox",
);
define(
  "numeric",
  "Nr Str Tel Abs Bd Jh Jg Std Min Kap Aufl Mär Okt Dez janv févr avr juil sept oct nov déc chap vol art " +
    "tél ene abr ago dic Avda núm",
);
define("ambiguous", "ggf evtl Mio Mrd Tsd éd");
define("suffix", "usw usf");
// Abbreviations written in parts ("z. B." or "z.B."): the last part takes the kind of the whole.
define("title", "z.B d.h z.T u.U v.a i.d.R i.A o.g p.ex e.g i.e");
define("ambiguous", "u.a s.o s.u n.Chr v.Chr a.D");
define("suffix", "o.Ä u.Ä u.v.m");
/** Abbreviations in parts and their endings ("d.r" of "i.d.r"): the parts "i. d. R." are joined into one. */
const PARTS = new Set<string>();
for (const key of ABBREVIATIONS.keys()) {
  // Joined from the last part backwards ("r" → "d.r" → "i.d.r"): every ending of two parts or more.
  for (let d = key.indexOf("."); d !== -1; d = key.indexOf(".", d + 1)) {
    if (key.indexOf(".", d + 1) !== -1) PARTS.add(key.slice(d + 1));
  }
  if (key.includes(".")) PARTS.add(key);
}
/** Initials that number like "p.": "siehe S. 12" (Seite). Before anything else they are initials. */
const NUMBERING_INITIALS = new Set(["S"]);

/** Capitalized words that usually begin a sentence: after an ambiguous abbreviation they mean "new sentence". */
const STARTERS = new Set(
  (
    "A An The I He She It We They You This That These Those There Then But And So Or If In On At As After " +
    "Before When While What Where Why How Who My Our Your His Her Their Its Next Also However Meanwhile Later " +
    "Today Yesterday Tomorrow Now Yes No Please Thanks Thank Let Is Are Was Were Do Does Did Can Could Will " +
    "Would Should For From To With By Not All Some Many Most One Each Every Both Because Although Though " +
    "Since Still Thus Hence Finally First Sure Ok Okay Hi Hello See Here " +
    // German, French, Spanish sentence openers (German capitalizes every noun: only these mean "new sentence").
    "Der Die Das Ich Wir Er Es Sie Du Ihr Aber Und Dann Heute Gestern Morgen Danach Also Jetzt Auch Ein Eine " +
    "Dies Diese Dieser Mein Meine Unser Unsere Sein Seine Kein Keine Man Nun Da Dort Hier Wie Was Wo Warum " +
    "Wann Wenn Als Nach Vor Bei Mit Am Im Zum Seit Ja Nein Doch Leider Trotzdem Deshalb Später Vielleicht " +
    "Bitte Danke " +
    "Le La Les Je Tu Il Elle Nous Vous Ils Elles On Mais Et Puis Alors Ensuite Un Une Ce Cette Ces Mon Ma " +
    "Mes Son Sa Ses Notre Quand Si Oui Non Merci Aujourd Demain Hier Donc Pour Dans Après Avant " +
    "El Los Las Yo Él Ella Nosotros Pero Luego Hoy Ayer Mañana Después Entonces Ya Mi Su Esta Este Eso Hay"
  ).split(" "),
);

const DOTTED_CHAIN = /^(?:\p{L}\p{M}*\.)+\p{L}\p{M}*$/u;
const SINGLE_LETTER = /^[\p{Lu}\p{Ll}]\p{M}*$/u;

/** Start of the run of letters (and inner dots when `dots`) ending at `i`; `i` when there is none. */
function lettersBack(text: string, i: number, max: number): number {
  let p = i;
  while (p > 0 && i - p <= max) {
    const c = text.charCodeAt(p - 1);
    if (c < 128) {
      if (!((c >= 65 && c <= 90) || (c >= 97 && c <= 122))) break;
      p--;
    } else {
      const cp = cpBefore(text, p);
      if (!isLetterOrMark(cp)) break;
      p -= cpLen(cp);
    }
  }
  return p;
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
  let word = text.slice(p, i);
  // Parts written with a space: "z. B.", "i. d. R.", "p. ex.", "v. Chr." (each earlier part 1–3 letters).
  for (let parts = 0; parts < 2 && word.length <= 8; parts++) {
    const sp = text.charCodeAt(p - 1);
    if (!(sp === 32 || sp === 0xa0 || sp === 0x202f) || text.charCodeAt(p - 2) !== 46) break;
    const q = lettersBack(text, p - 2, 3);
    if (q === p - 2 || p - 2 - q > 3) break;
    const joined = `${text.slice(q, p - 2)}.${word}`;
    if (!PARTS.has(joined.toLowerCase())) break;
    word = joined;
    p = q;
  }
  const before = p > 0 ? cpBefore(text, p) : 32;
  if ((flagsOf(before) & GLUE) !== 0 || caseOf(before) === "digit") return "";
  return word;
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

/** The word at `k` (letters only, up to 16 code units) when a non-letter follows it, else "". */
function wordAt(text: string, k: number): string {
  let e = k;
  while (e < text.length && e - k < 16) {
    const c = text.charCodeAt(e);
    if (c < 128 ? !((c >= 65 && c <= 90) || (c >= 97 && c <= 122)) : !isLetterOrMark(cpAt(text, e))) break;
    e += c >= 0xd800 && c <= 0xdbff ? 2 : 1;
  }
  if (e < text.length && (isLetterOrMark(cpAt(text, e)) || isAsciiDigit(text.charCodeAt(e)))) return "";
  return text.slice(k, e);
}

function isStarter(text: string, k: number, initial: boolean): boolean {
  const word = wordAt(text, k);
  return STARTERS.has(word) && !(initial && word.length === 1);
}

/** Verbs of an English speech attribution after a quote: `"Why?" John asked.` */
const SPEECH_VERBS = new Set(
  (
    "said asked replied answered shouted cried yelled screamed whispered muttered murmured added exclaimed " +
    "says asks replies answers shouts cries yells whispers adds"
  ).split(" "),
);
const isQuoteMark = (c: number): boolean =>
  c === 0x22 ||
  c === 0x27 ||
  c === 0x201d ||
  c === 0x2019 ||
  c === 0x201c ||
  c === 0x2018 ||
  c === 0xbb ||
  c === 0xab;
/** One or two capitalized words (the speaker) and then a speech verb, starting at `k`. */
function speakerAndVerb(text: string, k: number): boolean {
  let p = k;
  for (let words = 0; words < 3; words++) {
    const word = wordAt(text, p);
    if (word === "") return false;
    if (words > 0 && SPEECH_VERBS.has(word)) return true;
    if (words === 2 || caseOf(text.charCodeAt(p)) !== "upper") return false;
    p += word.length;
    if (text.charCodeAt(p) !== 32) return false;
    p++;
  }
  return false;
}

const MONTHS = new Set(
  (
    "january february march april june july august september october november december " +
    "jan feb mar apr jun jul aug sep sept oct nov dec " +
    "januar jänner februar märz april mai juni juli august september oktober november dezember mär okt dez " +
    "janvier février mars avril mai juin juillet août septembre octobre novembre décembre " +
    "janv févr avr juil déc " +
    "enero febrero marzo abril mayo junio julio agosto septiembre setiembre octubre noviembre diciembre"
  ).split(" "),
);
/** German words after which a number with a period is an ordinal: "im 19.", "der 2.", "bis zum 15.". */
const ORDINAL_LEAD = new Set(
  (
    "im vom zum zur beim der die das den dem des bis ab seit ihr ihre ihrem ihren sein seine seinem seinen " +
    "mein meine meinem meinen unser unsere jeder jede jedes"
  ).split(" "),
);
/** Words that continue a German date range or list of ordinals: "vom 13. bis 20. September". */
const ORDINAL_NEXT = new Set(["bis", "und", "oder", "u"]);

/** The letters-only word that ends at `p`, over spaces: the word before a number. */
function wordEndingAt(text: string, p: number): string {
  let q = p;
  while (q > 0 && text.charCodeAt(q - 1) === 32) q--;
  return text.slice(lettersBack(text, q, 12), q);
}

/** State of one scan: the sentence ends so far and the last item number of an inline list. */
interface Scan {
  ends: number[];
  /** The last accepted item number (0: none), the offset of its period, and the sentences before it. */
  item: number;
  itemAt: number;
  itemEnds: number;
}
const LIST_WINDOW = 400;

/** Whether a `m.` item marker (after a space, colon or opening bracket, before whitespace) follows `i`. */
function markerAhead(text: string, i: number, m: string): boolean {
  // Searched within the window only: `indexOf` on the whole rest of the text, once per "1.", would make a text
  // of many "1." and no "2." quadratic.
  const limit = Math.min(text.length, i + LIST_WINDOW);
  const window = text.slice(0, limit);
  for (let q = window.indexOf(`${m}.`, i); q !== -1; q = window.indexOf(`${m}.`, q + 1)) {
    const b = text.charCodeAt(q - 1);
    const a = text.charCodeAt(q + m.length + 1);
    if ((isSpace(b) || b === 58 || (flagsOf(b) & OPENER) !== 0) && (Number.isNaN(a) || isSpace(a)))
      return true;
  }
  return false;
}

/**
 * A number and its period (the `.` at `i`, the next word at `k`) that are not the end of a sentence: a list
 * marker, an inline item number, an ordinal date or a German ordinal (see the header). Records list items.
 */
function isNumberMark(text: string, i: number, k: number, next: Case, s: Scan): boolean {
  let p = i;
  while (p > 0 && i - p < 4 && caseOf(text.charCodeAt(p - 1)) === "digit") p--;
  if (p === i || i - p > 3) return false;
  let q = p;
  while (q > 0 && (text.charCodeAt(q - 1) === 32 || text.charCodeAt(q - 1) === 9)) q--;
  const lineStart = q === 0 || isLineBreak(text.charCodeAt(q - 1));
  const before = p > 0 ? text.charCodeAt(p - 1) : 32;
  const lead = q > 0 ? text.charCodeAt(q - 1) : 0; // the last character before the number and its spaces
  const colon = lead === 58 || lead === 0xff1a;
  const opener = (flagsOf(lead) & OPENER) !== 0;
  if (!(lineStart || isSpace(before) || colon || opener)) return false;
  let n = 0;
  for (let d = p; d < i && n >= 0; d++) {
    const c = text.charCodeAt(d);
    n = isAsciiDigit(c) ? n * 10 + c - 48 : -1; // other scripts' digits: no sequence
  }

  // Ordinals.
  if (n >= 1 && n <= 31 && (next === "upper" || next === "lower")) {
    const w = wordAt(text, k);
    if (MONTHS.has(w.toLowerCase()) || (next === "lower" && ORDINAL_NEXT.has(w))) return true;
  }
  if (n >= 1 && isSpace(before) && ORDINAL_LEAD.has(wordEndingAt(text, p).toLowerCase())) {
    if (next === "lower" || (next === "upper" && !isStarter(text, k, false))) return true;
  }

  // Lists: a marker at the start of a line, or an item of an anchored sequence.
  const last = s.ends.length > 0 ? (s.ends[s.ends.length - 1] ?? -1) : -1;
  const sentenceStart = lineStart || q === last;
  let item = lineStart;
  if (!item && n === 1) {
    const anchored = sentenceStart || colon || opener || lead === 0x2013 || lead === 0x2014;
    item = anchored && markerAhead(text, i + 1, "2");
  } else if (!item && n > 1 && s.item === n - 1 && p - s.itemAt <= LIST_WINDOW) {
    item = s.ends.length === s.itemEnds || sentenceStart;
  }
  if (item) {
    s.item = n;
    s.itemAt = i;
    s.itemEnds = s.ends.length;
  }
  return item;
}

function ellipsisEnds(text: string, k: number, next: Case): boolean {
  const pronounI = text.charCodeAt(k) === 73 && !isLetterOrMark(cpAt(text, k + 1));
  return next === "upper" && !pronounI;
}

function periodEnds(text: string, i: number, k: number, next: Case, s: Scan): boolean {
  // Spaced ellipsis ". . .": no end inside it, the ellipsis rule after its last dot.
  if (text.charCodeAt(k) === 46 && (k + 1 >= text.length || isSpace(text.charCodeAt(k + 1)))) return false;
  if (i >= 2 && text.charCodeAt(i - 1) === 32 && text.charCodeAt(i - 2) === 46)
    return ellipsisEnds(text, k, next);
  const word = wordBefore(text, i);
  const kind = abbreviationKind(word);
  if (kind === undefined) return !isNumberMark(text, i, k, next, s);
  if (kind === "title" || next === "lower") return false;
  if (kind === "numeric") return next !== "digit";
  if (kind === "initial" && next === "digit" && NUMBERING_INITIALS.has(word)) return false;
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

/** Chinese quoted speech with its attribution right after the closing quote: “你好！”她笑着说。 */
function saidAfter(text: string, j: number): boolean {
  for (let q = j; q < j + 5 && q < text.length; q++) {
    const c = text.charCodeAt(q);
    const verb =
      c === 0x8bf4 ||
      c === 0x8aaa ||
      c === 0x95ee ||
      c === 0x554f ||
      c === 0x558a ||
      c === 0x7b54 || // 说說问問喊答 (not 叫: "他叫了外卖", he ordered takeaway)
      (c === 0x9053 && text.charCodeAt(q - 1) !== 0x77e5); // 道 (not 知道)
    if (verb) {
      // "我说：“来。”" opens new speech: not an attribution of the quote before it.
      let r = q + 1;
      if (text.charCodeAt(r) === 0x9053) r++;
      const after = text.charCodeAt(r);
      return after !== 0xff1a && after !== 58;
    }
    if (!isCjk(c)) return false;
  }
  return false;
}

/** After a closing quote or bracket that holds a CJK-style terminator: whether the text at `j` continues it. */
function quoteContinues(text: string, j: number): boolean {
  const c = text.charCodeAt(j);
  // Japanese と (という, とか), って, を, の; Chinese 的; commas and colons.
  if (c === 0x3068 || c === 0x3092 || c === 0x306e || c === 0x7684) return true;
  if (c === 0x3063 && text.charCodeAt(j + 1) === 0x3066) return true;
  if (c === 0xff0c || c === 0x3001 || c === 0x2c || c === 0xff1a || c === 0x3a) return true;
  // Korean particles are written against the quote: "안녕!"이라고.
  if (isHangul(c)) return true;
  return saidAfter(text, j);
}

function clusterEnds(text: string, i: number, cl: Cluster, s: Scan): boolean {
  const j = cl.end;
  if (j >= text.length) return false;
  const c = text.charCodeAt(j);
  if (!isSpace(c)) {
    if (cl.kind === FULL || isCjk(cpAt(text, j))) {
      if (insideTitle(text, i)) return false;
      if (cl.closed && quoteContinues(text, j)) return false;
    }
    if (cl.kind === FULL) return true;
    if (cl.kind === STRONG) return isCjk(cpAt(text, j));
    return cl.kind === DOT && isCjk(cpAt(text, j)) && i > 0 && isCjk(cpBefore(text, i));
  }
  let k = j;
  while (k < text.length && isSpace(text.charCodeAt(k))) k++;
  while (k < text.length && (flagsOf(text.charCodeAt(k)) & OPENER) !== 0) k++;
  if (k >= text.length) return false;
  const next = caseOf(cpAt(text, k));
  if (cl.closed && next === "lower") return false;
  if (cl.kind === FULL) return !insideTitle(text, i);
  if (cl.closed && next === "upper" && isQuoteMark(text.charCodeAt(j - 1)) && speakerAndVerb(text, k))
    return false;
  if (cl.kind === STRONG) return true;
  if (cl.kind === ELLIPSIS) return ellipsisEnds(text, k, next);
  return periodEnds(text, i, k, next, s);
}

/**
 * Matches a run below U+2000 of anything but terminators and line breaks (sticky, so no allocation). Code
 * units from U+2000 up are stepped over with the flag table: a class of scattered characters is slow on
 * two-byte strings (any text with one "€" or "«"), a class of a few ranges is not.
 */
const CONTENT_RUN = /[^.!?\n\v\f\r\u0589\u061f\u06d4\u0964\u0965\u1362\u1367\u2000-\uffff]*/y;

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
  const scan: Scan = { ends, item: 0, itemAt: 0, itemEnds: 0 };
  const n = text.length;
  let contentEnd = 0;
  let i = 0;
  while (i < n) {
    const c = text.charCodeAt(i);
    const f = flagsOf(c);
    if ((f & (TERM | BREAK)) === 0) {
      // From U+2000 up (CJK text, typographic quotes, €): step. Elsewhere the regex engine skips the run.
      if (c >= 0x2000 || text.charCodeAt(i + 1) >= 0x2e80) i++;
      else {
        CONTENT_RUN.lastIndex = i;
        CONTENT_RUN.test(text);
        i = CONTENT_RUN.lastIndex;
      }
      continue;
    }
    if ((f & TERM) !== NONE) {
      const cl = readCluster(text, i);
      if (clusterEnds(text, i, cl, scan)) push(ends, cl.end);
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
