import type { DetectorName } from "../../policy/schema";
import { luhn } from "./luhn";
import { SECRET_DETECTORS } from "./secrets";

/**
 * Built-in PII detectors (docs/policy.md#redaction). Each is a pattern plus an optional validator that sees the
 * raw match in context and decides what of it is redacted. Every pattern runs in time linear in the text:
 *
 * - `email` is compiled with RE2 (a linear-time automaton). As a JS RegExp the same pattern is quadratic on a
 *   long run of letters or digits without an "@" (every start position rescans the run), and it was ~16×
 *   slower on ordinary text (16 texts of ~500 characters: 44 µs with RE2, 704 µs as a JS RegExp).
 * - The other detectors are JS RegExps: RE2 pays a fixed cost per call to convert the text to UTF-8, which
 *   made the digit detectors ~20× slower. They are linear by construction: every quantifier is bounded
 *   (`{0,4}`, `{6,14}`…) except a trailing `[…]*` or `[…]{11,}` that nothing after it can make fail, so the
 *   engine tries a bounded number of ways at each start position and an unbounded run is read once and
 *   skipped (detectors with `retryInside` have bounded matches, so a retry rescans a bounded stretch).
 *
 * No pattern needs capture groups, and the only lookaround is one character of lookbehind (`(?<!\d)`,
 * constant time) that keeps the phone pattern from retrying inside long digit runs. Boundaries, structure and
 * checksums (Luhn, ISO 7064 mod 97-10) are checked by the validators, which look at the match and a bounded
 * window around it (context words for phone numbers, labels before cards and numbers: at most a few dozen
 * characters), so a whole pass stays linear. test/fuzz/pathological.test.ts runs every detector on 1 MB of
 * what each pattern starts with.
 */

/** A half-open range `[start, end)` inside a match, in UTF-16 code units relative to the match start. */
export type Span = readonly [start: number, end: number];

/**
 * What a raw match becomes: `true` redacts all of it, `false` keeps it, a list of spans (ascending, not
 * overlapping) redacts only those parts (an empty list keeps it). `offset` is the match's start in `text`.
 */
export type Validator = (match: string, offset: number, text: string) => boolean | readonly Span[];

export interface Detector {
  readonly name: DetectorName;
  /** `re2`: compiled with RE2, flags `gu`. `js`: a JS RegExp, flag `g` (ASCII-only patterns). */
  readonly engine: "re2" | "js";
  readonly source: string;
  /**
   * A string every match contains, or a cheap linear test every text with a match passes: texts without it are
   * skipped without running the pattern (which costs far more when it starts with a class, as `[0-9A-Fa-f]{0,4}:`
   * does, than looking for a literal).
   */
  readonly requires?: string | ((text: string) => boolean);
  /**
   * After a rejected match, search again from its second character (a rejected candidate such as
   * `+1 ((415) 555-0132` can hide a real one that starts inside it). Only for patterns whose matches are
   * short (at most a few dozen characters), which keeps a pass linear.
   */
  readonly retryInside?: boolean;
  readonly validate?: Validator;
}

function isDigit(c: string | undefined): boolean {
  return c !== undefined && c >= "0" && c <= "9";
}

/**
 * Letters of alphabets written with spaces between words, digits, `_`: a character that glues a number to an
 * identifier (`INV4111111111111111`, `x612345678`). Chinese, Japanese, Korean or Thai text often touches a
 * number directly (`卡号是4111…`), so those scripts do not glue.
 */
const WORDY = /^[\p{scx=Latin}\p{scx=Greek}\p{scx=Cyrillic}\p{Nd}_]$/u;

function isWordy(c: string | undefined): boolean {
  return c !== undefined && WORDY.test(c);
}

/** ASCII letter or digit. */
function isAlnum(c: string | undefined): boolean {
  return c !== undefined && ((c >= "0" && c <= "9") || (c >= "A" && c <= "Z") || (c >= "a" && c <= "z"));
}

/**
 * True when nothing glues position `start` of `text` to more digits on its left: no digit right before it,
 * and no `joiners` character that itself follows a digit (so `1.2.3.4.5` is no address, `2-415-555-0132` no
 * phone number).
 */
function clearBefore(text: string, start: number, joiners: string): boolean {
  const before = text[start - 1];
  if (before === undefined) return true;
  return !isDigit(before) && !(joiners.includes(before) && isDigit(text[start - 2]));
}

/** The same as `clearBefore`, on the right of position `end`. */
function clearAfter(text: string, end: number, joiners: string): boolean {
  const after = text[end];
  if (after === undefined) return true;
  return !isDigit(after) && !(joiners.includes(after) && isDigit(text[end + 1]));
}

function isolated(text: string, start: number, end: number, joiners: string): boolean {
  return clearBefore(text, start, joiners) && clearAfter(text, end, joiners);
}

/** Digit runs of `s` as `[start, end)` pairs. */
function digitGroups(s: string): Array<[number, number]> {
  const groups: Array<[number, number]> = [];
  let i = 0;
  while (i < s.length) {
    if (!isDigit(s[i])) {
      i++;
      continue;
    }
    const start = i;
    while (isDigit(s[i])) i++;
    groups.push([start, i]);
  }
  return groups;
}

/** The `width` characters of `text` before `start` (fewer at the start of the text). */
function before(text: string, start: number, width: number): string {
  return text.slice(Math.max(0, start - width), start);
}

// ---- email -------------------------------------------------------------------------------------------

/** Scripts written without spaces between words: text in them often touches an address directly. */
const UNSPACED_SCRIPT =
  /^[\p{scx=Han}\p{scx=Hiragana}\p{scx=Katakana}\p{scx=Hangul}\p{scx=Bopomofo}\p{scx=Thai}\p{scx=Lao}\p{scx=Khmer}\p{scx=Myanmar}]$/u;

function isUnspaced(text: string, index: number): boolean {
  const cp = text.codePointAt(index);
  return cp !== undefined && UNSPACED_SCRIPT.test(String.fromCodePoint(cp));
}

/** Length of the run of unspaced-script characters at the start of `s` (code units). */
function leadingUnspaced(s: string): number {
  let i = 0;
  while (i < s.length && isUnspaced(s, i)) i += (s.codePointAt(i) ?? 0) > 0xffff ? 2 : 1;
  return i;
}

/** Start (code units) of the run of unspaced-script characters at the end of `s`. */
function trailingUnspaced(s: string): number {
  let i = s.length;
  while (i > 0) {
    const low = s.charCodeAt(i - 1);
    const width = i >= 2 && low >= 0xdc00 && low <= 0xdfff ? 2 : 1;
    if (!isUnspaced(s, i - width)) break;
    i -= width;
  }
  return i;
}

/**
 * A local part as people write it: RFC 5322's dot-atom restricted to what shows up in real addresses (letters
 * and digits of any script, `_ % + -`, and the apostrophe of `o'brien`, typed or typographic), or a quoted
 * string (`"john doe"@example.com`). `&`, `/`, `=`, `?`… are valid too but show up in URLs far more often.
 */
const LOCAL = "[\\p{L}\\p{M}\\p{N}_%+'\u2019-]";
const QUOTED = '"(?:[^"\\\\\\r\\n]|\\\\[^\\r\\n])+"';
const LABEL = "[\\p{L}\\p{M}\\p{N}-]";
/** A domain with at least one dot and a letter TLD (`münchen.de`, `例子.中国`, `xn--p1ai`), or `[192.0.2.1]`. */
const DOMAIN = `(?:${LABEL}+\\.)+(?:xn--[a-zA-Z0-9-]+|[\\p{L}\\p{M}]{2,})|\\[\\d{1,3}(?:\\.\\d{1,3}){3}\\]`;
const EMAIL = `(?:${LOCAL}+(?:\\.${LOCAL}+)*|${QUOTED})@(?:${DOMAIN})`;

/** `icon@2x.png`, `image@1.5x.jpg`: an asset's scale factor, not a domain. */
const SCALE_FACTOR = /^\d{1,2}(?:\.\d{1,2})?x\./i;

/**
 * File extensions that are not top-level domains (`.zip`, `.mov`, `.md`, `.py`, `.sh`… are, and stay
 * addresses): `logo@brand.svg`, `config@prod.yaml` name files.
 */
export const FILE_EXTENSIONS: ReadonlySet<string> = new Set(
  (
    "png jpg jpeg gif webp svg avif heic heif bmp tif tiff ico psd pdf txt csv tsv json jsonl yaml yml toml " +
    "ini cfg conf xml html htm css scss sass less js mjs cjs ts tsx jsx vue map lock log gz tgz bz xz zst " +
    "tar rar wasm wav ogg oga webm mkv avi wmv flv woff ttf otf eot exe dll dmg iso deb rpm apk ipa jar " +
    "doc docx xls xlsx ppt pptx odt ods rtf pem crt der key tmp bak swp"
  ).split(" "),
);

/**
 * The local part as typed by people or quoted, a domain with a dot and a letter TLD (`user@localhost` is not
 * an address here: it is what shell prompts and SSH targets look like, and it reaches nobody outside the
 * host). Internationalized addresses are matched (`josé@correo.es`, `用户@例子.中国`), but Chinese, Japanese,
 * Korean or Thai words glued to an ASCII-looking address (`请联系john@example.com谢谢`) are left out of the
 * redacted span, as are quotes around it (`'bob@example.com'`). Asset names (`icon@2x.png`) and file names
 * with a non-TLD extension are kept.
 */
function validateEmail(match: string): readonly Span[] {
  const at = match.lastIndexOf("@");
  const domain = match.slice(at + 1);
  if (SCALE_FACTOR.test(domain)) return [];
  let end = match.length;
  if (!domain.startsWith("[")) {
    const tldStart = match.lastIndexOf(".") + 1;
    const tail = tldStart + trailingUnspaced(match.slice(tldStart));
    if (tail - tldStart >= 2) end = tail;
    if (FILE_EXTENSIONS.has(match.slice(tldStart, end).toLowerCase())) return [];
  }
  if (match.startsWith('"')) return at <= 66 ? [[0, end]] : [];
  const lead = leadingUnspaced(match);
  let start = lead < at ? lead : 0;
  while (start < at && (match[start] === "'" || match[start] === "\u2019")) start++;
  return start < at ? [[start, end]] : [];
}

// ---- credit_card -------------------------------------------------------------------------------------

/**
 * How cards are written: one block of 13–19 digits, or blocks of four (the last one shorter), or Amex/Diners
 * 4-6-5 / 4-6-4, with one kind of separator throughout.
 */
function cardLayout(sizes: readonly number[], seps: string): boolean {
  if (sizes.length === 1) return true;
  if (sizes[0] !== 4 || new Set(seps).size !== 1) return false;
  if (sizes.length === 3 && sizes[1] === 6 && (sizes[2] === 5 || sizes[2] === 4)) return true;
  const last = sizes.length - 1;
  return sizes.every((n, i) => (i === last ? n >= 1 && n <= 4 : n === 4));
}

/**
 * Whether more groups after `sizes` can still make a card layout (see `cardLayout`): blocks of four so far,
 * or 4-6 (Amex/Diners, whose third group ends it). Keeps the scan of a long run of short groups linear.
 */
function extendable(sizes: readonly number[]): boolean {
  const n = sizes.length;
  const last = sizes[n - 1];
  if (n === 1) return last === 4;
  if (sizes[1] === 6) return n === 2;
  return last === 4;
}

/**
 * The issuer prefix (IIN) fits the length (ISO/IEC 7812 as the networks assign it): Visa 4 (13, 16, 19),
 * Mastercard 51–55 and 2221–2720 (16), Mir 2200–2204, Amex 34/37 (15), Diners 30/36/38/39 (14–19), JCB
 * 3528–3589, Maestro 50/56–58, Discover/UnionPay/RuPay 6, RuPay 81/82. Nothing starts with 0, 1, 7 or 9: an
 * ISBN-13 (978…), an IMEI (15 digits, Luhn-valid: 35…, 86…, 01…) or a SIM serial (89…) is no card.
 */
function cardIssuer(d: string): boolean {
  const n = d.length;
  const p2 = Number(d.slice(0, 2));
  const p4 = Number(d.slice(0, 4));
  switch (d[0]) {
    case "4":
      return n === 13 || n === 16 || n === 19;
    case "2":
      if (p4 >= 2221 && p4 <= 2720) return n === 16;
      return p4 >= 2200 && p4 <= 2204 && n >= 16;
    case "3":
      if (p2 === 34 || p2 === 37) return n === 15;
      if (p2 === 30 || p2 === 36 || p2 === 38 || p2 === 39) return n >= 14;
      return p4 >= 3528 && p4 <= 3589 && n >= 16;
    case "5":
      if (p2 >= 51 && p2 <= 55) return n === 16;
      return p2 === 50 || (p2 >= 56 && p2 <= 58);
    case "6":
      return n >= 16;
    case "8":
      return (p2 === 81 || p2 === 82) && n === 16;
    default:
      return false;
  }
}

/** What may glue a card to a longer identifier: `ORD-4111…`, `4111….50`, `12/4111…`. */
const CARD_JOINERS = "-./_";

/**
 * The card is a whole number: nothing before or after it continues it. A letter or digit touching it, a
 * joiner between it and a letter or digit, or another digit group after the card's own separator
 * (`9400 1111 1111 1111 1111 11`, a 22-digit tracking number whose 16-digit window is Luhn-valid) make it
 * part of something longer. A single block may stand next to another number after a space
 * (`4111111111111111 2024`).
 */
function wholeCard(text: string, start: number, end: number, sep: string): boolean {
  const left = text[start - 1];
  const right = text[end];
  if (isWordy(left) || isWordy(right)) return false;
  if (left !== undefined && CARD_JOINERS.includes(left) && isWordy(text[start - 2])) return false;
  if (right !== undefined && CARD_JOINERS.includes(right) && isWordy(text[end + 1])) return false;
  if (sep !== "" && left === sep && isDigit(text[start - 2])) return false;
  if (sep !== "" && right === sep && isDigit(text[end + 1])) return false;
  return true;
}

/**
 * A label right before a number that says it is something else: an order, invoice, parcel, barcode or device
 * number (`order #4716000000000007`, `EAN: 4006381333924`, `Pedido 612 345 678`). Checked for cards and for
 * phone numbers recognized by a nearby word.
 */
const ID_LABEL =
  /(?:(?<!\p{L})(?:order|invoice|ref|reference|tracking|shipment|parcel|ean|gtin|upc|isbn|imei|iccid|serial|sku|pedido|factura|commande|facture|bestell\p{L}*|auftrag|rechnung|sendung\p{L}*|suivi|seguimiento|rastreio|ordine|fattura|bestelling)|注文|订单|訂單|快递|追跡)[ \t]*(?:#|no\.?|n[°º]\.?|nr\.?|number|num\.?|id|code|番号|编号|號碼|号码|号|號)?[ \t]*[:#=：]?[ \t]*$/iu;

/**
 * A run of digits, spaces and dashes. Within the run, the longest stretch of 13–19 digits laid out like a
 * card (single separators) whose issuer prefix fits its length, that is a whole number (see `wholeCard`) and
 * Luhn-valid is redacted, scanning groups left to right: a card followed by a year is still found, a 16-digit
 * order number that fails Luhn stays, and a Luhn-valid window inside a longer number is never cut out of it.
 */
function validateCard(match: string, offset: number, text: string): readonly Span[] {
  const groups = digitGroups(match);
  const spans: Span[] = [];
  let g = 0;
  while (g < groups.length) {
    let best = -1;
    let digits = "";
    let seps = "";
    const sizes: number[] = [];
    for (let h = g; h < groups.length; h++) {
      const group = groups[h];
      const prev = groups[h - 1];
      const head = groups[g];
      if (group === undefined || head === undefined) break;
      if (h > g && prev !== undefined) {
        if (group[0] - prev[1] !== 1) break;
        seps += match[prev[1]] ?? "";
      }
      const size = group[1] - group[0];
      if (digits.length + size > 19) break;
      digits += match.slice(group[0], group[1]);
      sizes.push(size);
      if (
        digits.length >= 13 &&
        cardLayout(sizes, seps) &&
        cardIssuer(digits) &&
        wholeCard(text, offset + head[0], offset + group[1], seps[0] ?? "") &&
        luhn(digits) &&
        !ID_LABEL.test(before(text, offset + head[0], 32))
      ) {
        best = h;
      }
      if (!extendable(sizes)) break;
    }
    const first = groups[g];
    const last = groups[best];
    if (first !== undefined && last !== undefined) {
      spans.push([first[0], last[1]]);
      g = best + 1;
    } else {
      g++;
    }
  }
  return spans;
}

// ---- iban --------------------------------------------------------------------------------------------

/** IBAN length per country (SWIFT IBAN registry): every SEPA country and the other common ones. */
const IBAN_LENGTHS: ReadonlyMap<string, number> = new Map(
  (
    "AD24 AE23 AL28 AT20 AZ28 BA20 BE16 BG22 BH22 BR29 BY28 CH21 CR22 CY28 CZ24 DE22 DK18 DO28 EE20 EG29 " +
    "ES24 FI18 FO18 FR27 GB22 GE22 GI23 GL18 GR27 GT28 HR21 HU28 IE22 IL23 IQ23 IS26 IT27 JO30 KW30 KZ20 " +
    "LB28 LC32 LI21 LT20 LU20 LV21 MC27 MD24 ME22 MK19 MR27 MT31 MU30 NL18 NO15 PK24 PL28 PS29 PT25 QA29 " +
    "RO24 RS22 SA24 SC31 SE24 SI19 SK24 SM27 ST25 SV28 TL23 TN24 TR26 UA29 VA22 VG24 XK20"
  )
    .split(" ")
    .map((entry): [string, number] => [entry.slice(0, 2), Number(entry.slice(2))]),
);

/** ISO 7064 mod 97-10 over an IBAN's characters (country and check digits moved to the end): 1 when valid. */
export function ibanChecksum(iban: string): number {
  const rearranged = iban.slice(4) + iban.slice(0, 4);
  let rest = 0;
  for (let i = 0; i < rearranged.length; i++) {
    const c = rearranged.charCodeAt(i);
    if (c >= 48 && c <= 57) rest = (rest * 10 + c - 48) % 97;
    else if (c >= 65 && c <= 90) rest = (rest * 100 + c - 55) % 97;
    else return -1;
  }
  return rest;
}

/**
 * A known country code, its exact length, check digits 02–98 and mod 97 = 1; written in one block or in
 * groups of four split by single spaces (`DE89 3704 0044 0532 0130 00`), upper or lower case. Nothing
 * alphanumeric touches it on either side.
 */
function validateIban(match: string, offset: number, text: string): boolean | readonly Span[] {
  if (isAlnum(text[offset - 1]) || isWordy(text[offset - 1])) return false;
  const country = match.slice(0, 2).toUpperCase();
  const length = IBAN_LENGTHS.get(country);
  if (length === undefined) return false;
  const check = Number(match.slice(2, 4));
  if (check < 2 || check > 98) return false;
  let chars = "";
  let spaced: boolean | undefined;
  let afterSpace = false;
  let i = 0;
  for (; i < match.length && chars.length < length; i++) {
    const c = match[i] ?? "";
    if (c === " ") {
      if (chars.length % 4 !== 0 || spaced === false) return false;
      spaced = true;
      afterSpace = true;
      continue;
    }
    if (chars.length > 0 && chars.length % 4 === 0 && !afterSpace) {
      if (spaced === true) return false;
      spaced = false;
    }
    afterSpace = false;
    chars += c.toUpperCase();
  }
  if (chars.length < length || isAlnum(text[offset + i]) || isWordy(text[offset + i])) return false;
  return ibanChecksum(chars) === 1 ? [[0, i]] : false;
}

// ---- ssn ---------------------------------------------------------------------------------------------

/** US SSN `ddd-dd-dddd` (or with spaces); areas 000, 666 and 900–999, group 00 and serial 0000 never exist. */
function validateSsn(match: string, offset: number, text: string): boolean {
  const sep = match[3] ?? "-";
  if (!isolated(text, offset, offset + match.length, sep)) return false;
  const area = match.slice(0, 3);
  return (
    area !== "000" &&
    area !== "666" &&
    area[0] !== "9" &&
    match.slice(4, 6) !== "00" &&
    !match.endsWith("0000")
  );
}

// ---- phone -------------------------------------------------------------------------------------------

const PHONE = [
  // International: +CC and groups, or E.164 without separators; structure checked by `internationalPhone`.
  "\\+\\d[\\d .()-]{6,24}",
  // North American: (415) 555-0132, 415-555-0132, 415.555.0132, 1-800-555-0199.
  "(?:1[ .-])?(?:\\(\\d{3}\\)[ .-]?|\\d{3}[ .-])\\d{3}[ .-]\\d{4}",
  // National with a trunk 0 (020 7946 0958, 01 23 45 67 89) or the 00 international prefix (0044 20 …).
  // `(?<!\\d)`: one character of lookbehind, so a long digit run is not retried at every position.
  "(?<!\\d)0\\d[\\d .-]{7,16}",
  // An area code in parentheses: (11) 91234-5678, (030) 1234567; checked by `parenthesizedPhone`.
  "\\(\\d{1,5}\\)[ .-]?\\d[\\d .-]{5,14}",
  // Anything else that could be a national number (612 345 678, 13800138000): only next to a phone word.
  "(?<!\\d)[1-9]\\d[\\d .-]{6,14}",
].join("|");

const PHONE_JOINERS = ".-/";
/** What may stand between two digit groups of an international number. */
const INTL_SEP = /^(?:[ .-]|[ .-]?\(|\)[ .-]?)$/;
const NANP = /^(?:1[ .-])?(?:\(\d{3}\)[ .-]?|\d{3}[ .-])\d{3}[ .-]\d{4}$/;

/**
 * Words that say a number is a phone number, in the languages memgate sees most (a word starting with one of
 * these: "tel" covers telephone, teléfono, Telefon, telefone, telefoon).
 */
const PHONE_WORDS =
  /(?<![\p{L}\p{N}])(?:tel|tél|phone|mobil|mobiel|móvil|movil|cell|celular|portable|handy|whats ?app|call(?!e(?!\p{L}))|ring|llam|llám|appel|anruf|ruf|ligue|ligar|chiam|bel(?:len|t)?(?!\p{L})|fax|sms|contact|kontakt|contatt)|電話|电话|手机|手機|携帯|ケータイ|联系|聯絡|연락|전화|휴대폰|핸드폰/iu;

/** An account-number-shaped run (`NL91 ABNA `, `DE89 3704 `) that a number written after it continues. */
const ACCOUNT_PREFIX = /(?<![A-Za-z0-9])[A-Za-z]{2}\d{2}(?: [A-Za-z0-9]{4})+ $/;

/** A short digit group standing alone before a space: the head of a number written in groups (`8 045 311 447`). */
const LEADING_GROUP = /(?<![\d.,/-])\d{1,3} $/;

/**
 * A number without `+` is part of something longer when a short digit group stands right before it, one space
 * away (`8 045 311 447`, `0 800 123 4567`), or when it continues an account number's groups of four
 * (`NL91 ABNA 0417 1643 001`). The end of another phone number is no such group (`… 555-0132 (415) 555-0133`).
 */
function continuesNumber(text: string, offset: number): boolean {
  if (text[offset - 1] !== " " || !isAlnum(text[offset - 2])) return false;
  return LEADING_GROUP.test(before(text, offset, 6)) || ACCOUNT_PREFIX.test(before(text, offset, 48));
}

/** A line break, or the ` ⏎ ` the prompt shows for one (src/pipeline/text/neutralize.ts). */
const LINE_BREAK = /[\n\r\u2028\u2029\u23ce]/;

/** `window` up to its last line break (`fromEnd`) or from its first one on. */
function sameLine(window: string, fromEnd: boolean): string {
  if (fromEnd) {
    for (let i = window.length - 1; i >= 0; i--)
      if (LINE_BREAK.test(window[i] ?? "")) return window.slice(i + 1);
    return window;
  }
  const at = window.search(LINE_BREAK);
  return at < 0 ? window : window.slice(0, at);
}

/**
 * A phone word within 40 characters before the number or 20 after it, on the same line: in the system prompt
 * each memory is one line, so a word in one memory never makes a number in another one a phone number.
 */
function phoneContext(text: string, start: number, end: number): boolean {
  return (
    PHONE_WORDS.test(sameLine(before(text, start, 40), true)) ||
    PHONE_WORDS.test(sameLine(text.slice(end, end + 20), false))
  );
}

/**
 * `+` then groups, 8–15 digits in all (E.164). A number glued to more groups (`+1 415 555 0132 2024`) keeps
 * the groups that fit; trailing separators are left alone.
 */
function internationalPhone(match: string, offset: number, text: string): boolean | readonly Span[] {
  if (!clearBefore(text, offset, PHONE_JOINERS) || isWordy(text[offset - 1])) return false;
  let digits = 0;
  let end = 0;
  let prevEnd = 1;
  for (const [start, stop] of digitGroups(match)) {
    if (start > 1 && !INTL_SEP.test(match.slice(prevEnd, start))) break;
    if (digits + stop - start > 15) break;
    digits += stop - start;
    end = match[stop] === ")" ? stop + 1 : stop;
    prevEnd = stop;
  }
  return digits >= 8 ? [[0, end]] : false;
}

/**
 * Groups of 2+ digits after the first, split by one kind of single separator, at most `max` digits in all:
 * the end of the last group that fits, with how many groups and digits were taken.
 */
function groupedDigits(match: string, max: number): { end: number; count: number; digits: number } {
  let digits = 0;
  let end = 0;
  let count = 0;
  let sep = "";
  for (const [start, stop] of digitGroups(match)) {
    if (count > 0) {
      const between = match.slice(end, start);
      if (between.length !== 1 || (sep !== "" && between !== sep) || stop - start < 2) break;
      sep = between;
    }
    if (digits + stop - start > max) break;
    digits += stop - start;
    end = stop;
    count++;
  }
  return { end, count, digits };
}

/**
 * A trunk `0` then a non-zero digit, then groups (see `groupedDigits`), 9–12 digits in all: `020 7946 0958`;
 * in one block (`0612345678`) only next to a phone word. Dates (`01-15-2024`) have too few digits. `00` then
 * a country code is the international prefix (`0044 20 7946 0958`).
 */
function nationalPhone(match: string, offset: number, text: string): boolean | readonly Span[] {
  if (!clearBefore(text, offset, PHONE_JOINERS) || isWordy(text[offset - 1])) return false;
  if (match[1] === "0") {
    // `00` + country code: the same rules as `+` (read as "+44 20 …"), in at least two groups.
    if (match[2] === "0" || digitGroups(match).length < 2) return false;
    const verdict = internationalPhone(`+${match.slice(2)}`, offset, text);
    const span = verdict === true || verdict === false ? undefined : verdict[0];
    return span === undefined ? false : [[0, span[1] + 1]];
  }
  const { end, count, digits } = groupedDigits(match, 12);
  if (digits < 9 || isWordy(text[offset + end])) return false;
  if (count >= 2) return [[0, end]];
  // One unbroken block (`0612345678`): a phone number only with a phone word near it.
  if (count === 0) return false;
  return phoneContext(text, offset, offset + end) ? [[0, end]] : false;
}

/**
 * `(area code)` then groups: 8–12 digits in all. A trunk 0 inside the parentheses (`(030) 1234567`) says
 * phone; otherwise (`(11) 91234-5678`) a phone word must be near.
 */
function parenthesizedPhone(match: string, offset: number, text: string): boolean | readonly Span[] {
  if (!clearBefore(text, offset, PHONE_JOINERS) || isWordy(text[offset - 1])) return false;
  const close = match.indexOf(")");
  const area = close - 1;
  let digits = area;
  let end = 0;
  let prevEnd = close + 1;
  for (const [start, stop] of digitGroups(match)) {
    if (start < close) continue;
    const between = match.slice(prevEnd, start);
    if (prevEnd > close + 1 && (between.length !== 1 || stop - start < 2)) break;
    if (between.length > 1) break;
    if (digits + stop - start > 12) break;
    digits += stop - start;
    end = stop;
    prevEnd = stop;
  }
  if (digits < 8 || end === 0 || !clearAfter(text, offset + end, PHONE_JOINERS)) return false;
  return match[1] === "0" || phoneContext(text, offset, offset + end) ? [[0, end]] : false;
}

/**
 * A number with no trunk prefix (`612 345 678`, `138 0013 8000`, `13800138000`): 9–12 digits, whole (no
 * digit group continues it), and a phone word near it. Without the word it could be anything: an order, an
 * amount, a postcode and a house number.
 */
function contextPhone(match: string, offset: number, text: string): boolean | readonly Span[] {
  if (!clearBefore(text, offset, PHONE_JOINERS) || isWordy(text[offset - 1])) return false;
  const { end, digits } = groupedDigits(match, 12);
  const after = text[offset + end];
  if (digits < 9 || isWordy(after)) return false;
  // More digits after a separator: a longer number (or a list) that only starts like a phone number.
  if (after !== undefined && " .-/".includes(after) && isDigit(text[offset + end + 1])) return false;
  return phoneContext(text, offset, offset + end) ? [[0, end]] : false;
}

/**
 * By the number's shape. A number without `+` is never part of a longer one (`continuesNumber`) nor labelled
 * as something else (`ID_LABEL`: `serial no. 0123 4567 8910`, `pedido 612 345 678`).
 */
function validatePhone(match: string, offset: number, text: string): boolean | readonly Span[] {
  if (match.startsWith("+")) return internationalPhone(match, offset, text);
  if (continuesNumber(text, offset)) return false;
  const verdict = NANP.test(match)
    ? isolated(text, offset, offset + match.length, PHONE_JOINERS)
    : match.startsWith("(")
      ? parenthesizedPhone(match, offset, text)
      : match.startsWith("0")
        ? nationalPhone(match, offset, text)
        : contextPhone(match, offset, text);
  if (verdict === false || (verdict !== true && verdict.length === 0)) return false;
  return ID_LABEL.test(before(text, offset, 32)) ? false : verdict;
}

// ---- ipv4 --------------------------------------------------------------------------------------------

/** A version or section label right before a dotted quad: `version 4.2.1.0`, `build 10.0.0.1`, `§ 3.2.1.4`. */
const VERSION_LABEL =
  /(?<![A-Za-z])(?:version|versión|versão|release|build|firmware|ver\.?|section|chapter|clause|article|art\.|§)[ \t]*$/i;

/** Dotted quads, each octet 0–255, not part of a longer dotted number (versions like 1.2.3.4.5). */
function validateIpv4(match: string, offset: number, text: string): boolean {
  if (!isolated(text, offset, offset + match.length, ".")) return false;
  if (/[A-Za-z_]/.test(text[offset - 1] ?? "")) return false;
  if (VERSION_LABEL.test(before(text, offset, 12))) return false;
  return match.split(".").every((octet) => Number(octet) <= 255);
}

// ---- ipv6 --------------------------------------------------------------------------------------------

const HEX_GROUP = /^[0-9A-Fa-f]{1,4}$/;
/** In every text holding an IPv6 address (see the detector's `requires`). */
const TWO_COLONS = /:[0-9A-Fa-f]{0,4}:/;
const DOTTED_QUAD = /^\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}$/;

/** RFC 4291 text forms: eight groups, or fewer around one `::`, the last two possibly a dotted quad. */
export function isIpv6(s: string): boolean {
  const gap = s.indexOf("::");
  if (gap !== -1 && s.indexOf("::", gap + 1) !== -1) return false;
  const parts =
    gap === -1
      ? s.split(":")
      : [s.slice(0, gap), s.slice(gap + 2)].flatMap((h) => (h === "" ? [] : h.split(":")));
  let groups = 0;
  for (let i = 0; i < parts.length; i++) {
    const part = parts[i] ?? "";
    if (HEX_GROUP.test(part)) {
      groups++;
    } else if (i === parts.length - 1 && DOTTED_QUAD.test(part)) {
      if (!part.split(".").every((octet) => Number(octet) <= 255)) return false;
      groups += 2;
    } else {
      return false;
    }
  }
  return gap === -1 ? groups === 8 : groups <= 7;
}

/**
 * An IPv6 address: full (`2001:0db8:85a3:0000:0000:8a2e:0370:7334`), compressed (`2001:db8::1`, `::1`,
 * `fe80::1%eth0` without the zone) or IPv4-mapped (`::ffff:192.0.2.1`). Times (`12:30:45`: three groups, no
 * `::`), MAC addresses (six groups) and paths in code (`std::io`, `Foo::Bar`: glued to a letter, or no digit)
 * are not addresses. A trailing `.` or single `:` is punctuation.
 */
function validateIpv6(match: string, offset: number, text: string): boolean | readonly Span[] {
  const left = text[offset - 1];
  if (left !== undefined && (isWordy(left) || left === ":" || left === ".")) return false;
  if (isWordy(text[offset + match.length])) return false;
  let end = match.length;
  while (end > 0 && match[end - 1] === ".") end--;
  // A colon after the address is punctuation (`2001:db8::1: down`, `2001:db8::: down`).
  if (match.endsWith(":::", end) || (match[end - 1] === ":" && match[end - 2] !== ":")) end--;
  const address = match.slice(0, end);
  if (!/\d/.test(address) || !isIpv6(address)) return false;
  // Eight two-digit groups and no `::` are bytes (an EUI-64, a hex dump), not how addresses are written.
  if (!address.includes("::") && /^(?:[0-9A-Fa-f]{2}:){7}[0-9A-Fa-f]{2}$/.test(address)) return false;
  return [[0, end]];
}

/**
 * The built-ins in the fixed order they run: e-mail addresses and IBANs before the digit detectors (they
 * contain digits), cards before phones, IPv6 before IPv4 (`::ffff:192.0.2.1` holds a dotted quad).
 */
export const BUILTIN_DETECTORS: readonly Detector[] = [
  // Secrets first: a token holding a digit run must not be half-redacted as a card or a phone number.
  ...SECRET_DETECTORS,
  { name: "email", engine: "re2", source: EMAIL, requires: "@", validate: validateEmail },
  {
    name: "iban",
    engine: "js",
    retryInside: true,
    source: "[A-Za-z]{2}\\d{2}(?: ?[A-Za-z0-9]){11,30}",
    validate: validateIban,
  },
  { name: "credit_card", engine: "js", source: "\\d[\\d -]{11,}", validate: validateCard },
  {
    name: "ssn",
    engine: "js",
    retryInside: true,
    source: "\\d{3}-\\d{2}-\\d{4}|\\d{3} \\d{2} \\d{4}",
    validate: validateSsn,
  },
  {
    name: "ipv6",
    engine: "js",
    // Two colons at most four hex digits apart: far cheaper than running the pattern on every text with a colon.
    requires: (text) => text.includes(":") && TWO_COLONS.test(text),
    source: "[0-9A-Fa-f]{0,4}:[0-9A-Fa-f]{0,4}:[0-9A-Fa-f:.]*",
    validate: validateIpv6,
  },
  {
    name: "ipv4",
    engine: "js",
    retryInside: true,
    source: "\\d{1,3}\\.\\d{1,3}\\.\\d{1,3}\\.\\d{1,3}",
    validate: validateIpv4,
  },
  { name: "phone", engine: "js", retryInside: true, source: PHONE, validate: validatePhone },
];
