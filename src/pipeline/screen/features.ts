/**
 * The cheap first look at a memory: one pass over its characters that notes which trigger words (lower-cased,
 * whole words) and which characters (`<`, `#`, `:`, `//`, quotes, a few Han/kana/Hangul characters) it holds.
 * A rule's regular expression runs only when the text has every feature group the rule needs (see `Rule.need`
 * in detectors.ts), so ordinary chat, which has none of them together, costs about one pass and no regex.
 *
 * Characters that could hide a word from the patterns (invisible, bidi and control characters, ANSI escapes,
 * lookalike and full-width letters: ./fold.ts) mark the text as `hiding`: it is then read folded.
 *
 * Words are read without allocating: a hash of the lower-cased characters is looked up, and a hit is confirmed
 * character by character.
 */

import { isHidingUnit } from "./fold";

/** Trigger words by feature. A word may belong to several features. */
const WORD_FEATURES = {
  role_word: ["system", "assistant", "user", "human", "developer"],
  chat_token: ["inst", "sys"],
  role_key: ["role"],
  en_verb: [
    "ignore",
    "disregard",
    "forget",
    "discard",
    "neglect",
    "abandon",
    "aside",
    "attention",
    "follow",
    "following",
  ],
  en_noun: [
    "instruction",
    "instructions",
    "prompt",
    "prompts",
    "directions",
    "directive",
    "directives",
    "guidelines",
    "commands",
    "rules",
    "context",
    "constraints",
    "guidance",
    "programming",
  ],
  es_verb: [
    "ignora",
    "ignore",
    "ignoren",
    "ignorar",
    "ignores",
    "ignorad",
    "olvides",
    "olvida",
    "olvide",
    "olviden",
    "olvidar",
    "olvídate",
    "olvídese",
    "descarta",
    "descarte",
    "omite",
    "omita",
    "desestima",
    "desatiende",
    "sigas",
    "siga",
    "caso",
  ],
  es_noun: [
    "instrucciones",
    "indicaciones",
    "órdenes",
    "ordenes",
    "directrices",
    "directivas",
    "reglas",
    "normas",
    "pautas",
    "consignas",
    "prompt",
    "prompts",
  ],
  fr_verb: [
    "ignore",
    "ignorez",
    "ignorer",
    "ignores",
    "oublies",
    "oublie",
    "oubliez",
    "oublier",
    "néglige",
    "négligez",
    "écarte",
    "écartez",
    "compte",
    "abstraction",
    "outre",
    "suis",
    "suivez",
  ],
  fr_noun: [
    "instructions",
    "consignes",
    "directives",
    "règles",
    "ordres",
    "indications",
    "prompt",
    "prompts",
    "commandes",
  ],
  de_verb: [
    "ignoriere",
    "ignorier",
    "ignorieren",
    "vergiss",
    "vergessen",
    "missachte",
    "missachten",
    "verwirf",
    "verwerfen",
    "übergehe",
    "übergehen",
    "befolge",
  ],
  de_noun: [
    "anweisungen",
    "anweisung",
    "instruktionen",
    "befehle",
    "anordnungen",
    "vorgaben",
    "regeln",
    "richtlinien",
    "prompt",
    "prompts",
    "systemanweisungen",
    "systemprompt",
    "systemprompts",
  ],
  pt_verb: [
    "ignore",
    "ignora",
    "ignorem",
    "ignorar",
    "ignores",
    "esqueças",
    "esqueça",
    "esquece",
    "esqueçam",
    "esquecer",
    "desconsidere",
    "desconsidera",
    "despreze",
    "descarte",
    "descarta",
    "siga",
    "sigas",
    "obedeça",
  ],
  pt_noun: [
    "instruções",
    "instrucoes",
    "orientações",
    "orientacoes",
    "ordens",
    "diretrizes",
    "diretivas",
    "regras",
    "comandos",
    "prompt",
    "prompts",
  ],
  it_verb: [
    "ignora",
    "ignori",
    "ignorate",
    "ignorare",
    "dimentica",
    "dimentichi",
    "dimenticate",
    "dimenticare",
    "trascura",
    "trascurate",
    "scarta",
    "seguire",
    "seguite",
    "considerare",
    "considerate",
    "conto",
    "perdere",
  ],
  it_noun: ["istruzioni", "indicazioni", "direttive", "regole", "ordini", "comandi", "prompt", "consegne"],
  persona_en: [
    "now",
    "longer",
    "pretend",
    "act",
    "behave",
    "respond",
    "enable",
    "activate",
    "enter",
    "switch",
  ],
  persona_en_what: [
    "dan",
    "mode",
    "jailbroken",
    "jailbreak",
    "unrestricted",
    "unfiltered",
    "uncensored",
    "unchained",
    "unbound",
    "evil",
    "rogue",
    "malicious",
    "free",
    "longer",
    "restrictions",
    "rules",
    "guidelines",
    "filters",
    "limitations",
  ],
  ahora: ["ahora"],
  persona_es_what: ["sin", "malvado", "malvada", "liberado", "liberada"],
  persona_fr: ["maintenant", "désormais", "dorénavant"],
  persona_fr_what: ["sans", "malveillant", "malveillante", "libéré", "libérée"],
  persona_de: ["jetzt", "nun", "sofort"],
  ohne: ["ohne"],
  agora: ["agora"],
  sem: ["sem"],
  persona_it: ["ora", "adesso"],
  senza: ["senza"],
  new_noun: [
    "instruction",
    "instructions",
    "directive",
    "directives",
    "prompt",
    "override",
    "instrucciones",
    "directrices",
    "indicaciones",
    "consignes",
    "anweisungen",
    "instruktionen",
    "befehle",
    "systemanweisungen",
    "vorgaben",
    "instruções",
    "diretrizes",
    "ordens",
    "istruzioni",
    "direttive",
    "indicazioni",
  ],
  reveal_noun: [
    "prompt",
    "instructions",
    "above",
    "systemprompt",
    "systemanweisungen",
    "anweisungen",
    "instrucciones",
    "instruções",
    "istruzioni",
  ],
  tool_key: [
    "tool_calls",
    "tool_call",
    "function_call",
    "function_calls",
    "functioncall",
    "toolcalls",
    "toolcall",
    "tool_use",
    "tool_code",
    "action_input",
    "recipient_name",
  ],
  type_key: ["type", "role"],
  tool_value: ["function", "tool", "tool_use", "tool_call", "function_call", "tool_result"],
  args_key: ["arguments", "parameters", "args", "kwargs"],
  name_key: ["name", "function", "tool", "tool_name", "function_name"],
  tool_tag: [
    "tool_call",
    "tool_calls",
    "tool_use",
    "function_call",
    "function_calls",
    "tool_code",
    "tool_result",
    "tool_response",
    "functioncall",
    "invoke",
    "function",
    "functions",
    "tools",
  ],
  react: ["input"],
  scheme: ["javascript", "vbscript", "livescript", "data"],
} as const;

/** Characters that trigger the Chinese, Japanese and Korean override patterns (each holds one of them). */
/**
 * Han, kana and Hangul characters the Chinese, Japanese and Korean patterns need, by feature: verbs ("ignore",
 * "forget"), nouns ("instruction", "rule", "prompt"), "new", "you", "limit/filter", "show/tell".
 */
const CJK_FEATURES: Readonly<Record<CjkFeature, string>> = {
  cjk_zh_verb: "忽视視忘理遵抛拋丢丟别別",
  cjk_noun: "指命提规規设設约約限プル制지명프규",
  cjk_new: "新",
  cjk_you: "你",
  cjk_limit: "限约約过過审審制フ",
  cjk_ja_verb: "無忘",
  cjk_ja_show: "教表出見繰",
  ko_verb: "무잊",
};

export type WordFeature = keyof typeof WORD_FEATURES;
type CjkFeature =
  | "cjk_zh_verb"
  | "cjk_noun"
  | "cjk_new"
  | "cjk_you"
  | "cjk_limit"
  | "cjk_ja_verb"
  | "cjk_ja_show"
  | "ko_verb";
export type CharFeature = "lt" | "lsquare" | "hash" | "colon" | "slashes" | "quote" | CjkFeature;
export type Feature = WordFeature | CharFeature;

const CHAR_FEATURES: readonly CharFeature[] = [
  "lt",
  "lsquare",
  "hash",
  "colon",
  "slashes",
  "quote",
  ...(Object.keys(CJK_FEATURES) as CjkFeature[]),
];
const FEATURE_IDS = new Map<Feature, number>(
  [...(Object.keys(WORD_FEATURES) as WordFeature[]), ...CHAR_FEATURES].map((f, i) => [f, i]),
);
if (FEATURE_IDS.size > 64) throw new Error("features.ts: at most 64 features fit the two 32-bit masks");

export function featureId(f: Feature): number {
  const id = FEATURE_IDS.get(f);
  if (id === undefined) throw new Error(`unknown feature ${f}`);
  return id;
}

/** A set of features as two 32-bit masks (ids 0–31 in `lo`, 32–63 in `hi`). */
export interface FeatureMask {
  lo: number;
  hi: number;
}

export function maskOf(features: readonly Feature[]): FeatureMask {
  const mask = { lo: 0, hi: 0 };
  for (const f of features) {
    const id = featureId(f);
    if (id < 32) mask.lo |= 1 << id;
    else mask.hi |= 1 << (id - 32);
  }
  return mask;
}

/** The character features are the last ones: all in `hi` when there are more than 32 word features. */
function charBit(f: CharFeature): number {
  const id = featureId(f);
  if (id < 32) throw new Error("features.ts: character features must have ids from 32");
  return 1 << (id - 32);
}
const LT = charBit("lt");
const LSQUARE = charBit("lsquare");
const HASH = charBit("hash");
const COLON = charBit("colon");
const SLASHES = charBit("slashes");
const QUOTE = charBit("quote");

/** The lower-case form of a word character's code, or -1 for a character that ends a word (from `c`). */
function computeWordCode(c: number): number {
  if (c < 0x80) {
    if (c >= 0x61 && c <= 0x7a) return c;
    if (c >= 0x41 && c <= 0x5a) return c + 0x20;
    if ((c >= 0x30 && c <= 0x39) || c === 0x5f) return c;
    return -1;
  }
  if (c < 0xc0 || c === 0xd7 || c === 0xf7) return -1;
  if (c <= 0xde) return c + 0x20;
  if (c <= 0x24f) return c;
  return -1;
}

/** `computeWordCode` for the codes below 0x250 (ASCII, Latin-1, Latin Extended-A and B): one array read. */
const WORD_CODES = Int16Array.from({ length: 0x250 }, (_, c) => computeWordCode(c));

function wordCode(c: number): number {
  return c < 0x250 ? (WORD_CODES[c] ?? -1) : -1;
}

function hashWord(word: string): number {
  let h = 0;
  for (let i = 0; i < word.length; i++) h = (Math.imul(h, 31) + word.charCodeAt(i)) | 0;
  return h;
}

interface WordEntry {
  word: string;
  lo: number;
  hi: number;
}

/** Trigger words by hash of their lower-cased characters. */
const WORDS = new Map<number, WordEntry[]>();
/** One bit per `hash & BLOOM_MASK` of every trigger word: most words are told apart by one array read. */
const BLOOM_MASK = (1 << 16) - 1;
const BLOOM = new Uint8Array((BLOOM_MASK + 1) >> 3);
for (const [feature, words] of Object.entries(WORD_FEATURES) as Array<[WordFeature, readonly string[]]>) {
  const id = featureId(feature);
  for (const word of words) {
    const h = hashWord(word);
    let list = WORDS.get(h);
    if (list === undefined) {
      list = [];
      WORDS.set(h, list);
    }
    let entry = list.find((e) => e.word === word);
    if (entry === undefined) {
      entry = { word, lo: 0, hi: 0 };
      list.push(entry);
    }
    if (id < 32) entry.lo |= 1 << id;
    else entry.hi |= 1 << (id - 32);
    BLOOM[(h & BLOOM_MASK) >> 3] = (BLOOM[(h & BLOOM_MASK) >> 3] ?? 0) | (1 << (h & 7));
  }
}

/**
 * What each BMP code unit is to the scan, in one array read: > 0, a word character (its lower-case code); 0,
 * nothing; < 0, `-(1 + bits)` where `bits` are the character features it sets (in `hi`), `HIDING_BIT` for a
 * character to fold or remove, `SLASH_BIT` for `/` (a feature only when another `/` follows).
 */
const HIDING_BIT = 1 << 29;
const SLASH_BIT = 1 << 28;
const CODES = new Int32Array(0x10000);
for (let c = 0; c < 0x10000; c++) {
  const w = c < 0x250 ? computeWordCode(c) : -1;
  if (w > 0) CODES[c] = w;
  else if (isHidingUnit(c)) CODES[c] = -(1 + HIDING_BIT);
}
const setBits = (c: number, bits: number) => {
  const v = CODES[c] as number;
  CODES[c] = -(1 + ((v < 0 ? -v - 1 : 0) | bits));
};
for (const [feature, chars] of Object.entries(CJK_FEATURES) as Array<[CjkFeature, string]>) {
  for (const ch of chars) setBits(ch.charCodeAt(0), charBit(feature));
}
setBits(0x3c, LT); // <
setBits(0x5b, LSQUARE); // [
setBits(0x23, HASH); // #
setBits(0x3a, COLON); // :
setBits(0xff1a, COLON); // ：
setBits(0x22, QUOTE); // "
setBits(0x27, QUOTE); // '
setBits(0x201c, QUOTE); // “
setBits(0x201d, QUOTE); // ”
setBits(0x2f, SLASH_BIT); // /

export interface Features extends FeatureMask {
  /** The text holds characters `ScanText` folds or removes before matching. */
  readonly hiding: boolean;
}

/** The features of the word of `length` characters ending at `end` whose hash is `hash` (none: 0, 0). */
function wordMask(text: string, end: number, length: number, hash: number): WordEntry | undefined {
  if ((((BLOOM[(hash & BLOOM_MASK) >> 3] ?? 0) >> (hash & 7)) & 1) === 0) return undefined;
  const entries = WORDS.get(hash);
  if (entries === undefined) return undefined;
  const start = end - length;
  for (const entry of entries) {
    if (entry.word.length !== length) continue;
    let same = true;
    for (let i = 0; i < length && same; i++)
      same = wordCode(text.charCodeAt(start + i)) === entry.word.charCodeAt(i);
    if (same) return entry;
  }
  return undefined;
}

/** One pass over `text`: its features. */
export function scanFeatures(text: string): Features {
  let lo = 0;
  let hi = 0;
  let special = 0;
  let hash = 0;
  let length = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    const v = CODES[c] as number;
    if (v > 0) {
      hash = (Math.imul(hash, 31) + v) | 0;
      length++;
      continue;
    }
    if (length > 0) {
      const entry = wordMask(text, i, length, hash);
      if (entry !== undefined) {
        lo |= entry.lo;
        hi |= entry.hi;
      }
      hash = 0;
      length = 0;
    }
    if (v < 0) {
      const bits = -v - 1;
      if ((bits & SLASH_BIT) !== 0) {
        if (text.charCodeAt(i + 1) === 0x2f) hi |= SLASHES;
      } else special |= bits;
    }
  }
  if (length > 0) {
    const entry = wordMask(text, text.length, length, hash);
    if (entry !== undefined) {
      lo |= entry.lo;
      hi |= entry.hi;
    }
  }
  return { lo, hi: hi | (special & ~HIDING_BIT), hiding: (special & HIDING_BIT) !== 0 };
}

/** True when `features` holds, for every group of `need`, at least one of its features. */
export function satisfies(features: FeatureMask, need: readonly FeatureMask[] | undefined): boolean {
  if (need === undefined) return true;
  for (const group of need)
    if ((features.lo & group.lo) === 0 && (features.hi & group.hi) === 0) return false;
  return true;
}
