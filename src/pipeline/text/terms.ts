/**
 * How text becomes terms, for the local backend's index (memories and queries alike) and for the clip stage's
 * query-aware sentence scoring (one tokenization, so both see the same words).
 *
 * 1. NFKC-normalize the text, so full-width forms ("ｃｏｆｆｅｅ", "１２") index like their ASCII twins.
 * 2. Split on whitespace and punctuation — MiniSearch's default rule (`[\n\r\p{Z}\p{P}]+`), plus tabs and
 *    the other `\s` characters, which that rule leaves inside words.
 * 3. Split each piece again into CJK and non-CJK runs, and turn every CJK run into overlapping character
 *    bigrams (a run of one character stays a unigram), as Lucene's CJKBigramFilter does.
 * 4. Lower-case with `toLowerCase` (locale-independent, so the same on every host).
 *
 * Why step 3: MiniSearch's default tokenizer only splits on spaces and punctuation. Chinese and Japanese are
 * written without spaces, so "我每天早上喝咖啡" would be ONE term and a query for "咖啡" (coffee) would never
 * match it. Korean has spaces, but particles are glued to the word ("커피를" = coffee + object marker), so
 * "커피" would not match "커피를" either. Bigrams need no dictionary: "커피를" → 커피, 피를 and "喝咖啡" →
 * 喝咖, 咖啡, so a query bigram matches wherever the two characters appear together. The price: a
 * one-character query only matches a one-character run (Lucene's default behaviour too).
 */

const SPACE_OR_PUNCTUATION = /[\s\p{Z}\p{P}]+/u;
/** Han (Chinese characters, kanji), Hiragana, Katakana (with the prolonged sound mark) and Hangul. */
const CJK_RUN = /([\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Hangul}\u30fc]+)/u;

function pushBigrams(run: string, out: string[]): void {
  const chars = Array.from(run);
  if (chars.length === 1) {
    out.push(run);
    return;
  }
  for (let i = 0; i + 1 < chars.length; i++) out.push(`${chars[i]}${chars[i + 1]}`);
}

/** Splits text into raw tokens (not yet lower-cased). */
export function tokenize(text: string): string[] {
  const out: string[] = [];
  for (const piece of text.normalize("NFKC").split(SPACE_OR_PUNCTUATION)) {
    if (piece === "") continue;
    // A split with a capturing group puts the captured CJK runs at the odd indices.
    piece.split(CJK_RUN).forEach((part, i) => {
      if (part === "") return;
      if (i % 2 === 1) pushBigrams(part, out);
      else out.push(part);
    });
  }
  return out;
}

/** Normalizes one token into an index term. */
export function processTerm(term: string): string {
  return term.toLowerCase();
}

/** Tokenize and process, the way MiniSearch does it when indexing. */
export function terms(text: string): string[] {
  return tokenize(text).map(processTerm);
}
