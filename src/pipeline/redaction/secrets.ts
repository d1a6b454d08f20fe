import type { Detector, Span } from "./detectors";

/**
 * Built-in secrets detectors: cloud and SaaS credentials with a fixed shape, private keys, JWTs, and a
 * context-gated detector for high-entropy values after words such as "password" or "token". They run before
 * the PII detectors (see `BUILTIN_DETECTORS`), so a digit run inside a token is never half-redacted as a card
 * or a phone number first.
 *
 * Every pattern runs in time linear in the text, by one of two constructions:
 *
 * - an attempt that fails within a bounded number of characters: a literal prefix then a bounded run
 *   (`AIza` + 35 characters), or a run that must reach 20 characters (`generic_secret`, which starts only at
 *   a word boundary so that most positions inside a word are rejected at once);
 * - a literal prefix (and bounded separators) then an unbounded greedy run of one character class that
 *   nothing after it can make fail (`sk-[A-Za-z0-9_-]*`): once the prefix matches, the match succeeds and the
 *   scan resumes after it, so no character is read twice by the pattern.
 *
 * Lengths, checksums (GitHub's CRC32), JSON headers (JWT), entropy and boundaries are checked by the
 * validators, which only look at the match and a bounded window around it (`private_key`'s match is the
 * rest of the text from its first BEGIN line, which its validator walks forward once).
 */

/** ASCII letter, digit or one of `extra`. */
function isTokenChar(c: string | undefined, extra = ""): boolean {
  if (c === undefined) return false;
  return (c >= "a" && c <= "z") || (c >= "A" && c <= "Z") || (c >= "0" && c <= "9") || extra.includes(c);
}

/** How many of lower case, upper case and digits occur in `s`. */
function charClasses(s: string): number {
  let lower = 0;
  let upper = 0;
  let digit = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 97 && c <= 122) lower = 1;
    else if (c >= 65 && c <= 90) upper = 1;
    else if (c >= 48 && c <= 57) digit = 1;
  }
  return lower + upper + digit;
}

/** Shannon entropy of `s` in bits per character (over UTF-16 code units). */
export function shannonEntropy(s: string): number {
  if (s.length === 0) return 0;
  const counts = new Map<number, number>();
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    counts.set(c, (counts.get(c) ?? 0) + 1);
  }
  let h = 0;
  for (const n of counts.values()) {
    const p = n / s.length;
    h -= p * Math.log2(p);
  }
  return h;
}

// ---- checksums ---------------------------------------------------------------------------------------

const CRC_TABLE = (() => {
  const table = new Int32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    table[n] = c;
  }
  return table;
})();

/** CRC-32 (IEEE 802.3, as zlib's `crc32`) of an ASCII string, unsigned. */
export function crc32(s: string): number {
  let crc = -1;
  for (let i = 0; i < s.length; i++) crc = (crc >>> 8) ^ (CRC_TABLE[(crc ^ s.charCodeAt(i)) & 0xff] ?? 0);
  return (crc ^ -1) >>> 0;
}

const BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/** `n` in base 62 (digits, then A–Z, then a–z), left-padded with "0" to `width`. */
export function base62(n: number, width: number): string {
  let out = "";
  let rest = n;
  do {
    out = BASE62[rest % 62] + out;
    rest = Math.floor(rest / 62);
  } while (rest > 0);
  return out.padStart(width, "0");
}

/**
 * A classic GitHub token (`ghp_` and siblings): 30 random base62 characters then the CRC32 of those 30,
 * base62-encoded on 6 characters.
 */
export function githubChecksumOk(token: string): boolean {
  const body = token.slice(4);
  return body.length === 36 && base62(crc32(body.slice(0, 30)), 6) === body.slice(30);
}

// ---- private_key -------------------------------------------------------------------------------------

const PEM_LABEL = "(?:(?:RSA|EC|DSA|OPENSSH|ENCRYPTED|PGP) )?PRIVATE KEY(?: BLOCK)?";
const PEM_BEGIN = new RegExp(`^-----BEGIN ${PEM_LABEL}-----`);
const PEM_END = new RegExp(`^-----END ${PEM_LABEL}-----`);
/** Longer than any BEGIN or END line `PEM_LABEL` allows. */
const PEM_LINE_MAX = 48;

/**
 * From the first BEGIN line to the end of the text: the validator finds the blocks in it. A lazy
 * `BEGIN[\s\S]*?END` would rescan the rest of the text from every BEGIN line that has no END line (quadratic
 * on a text of many of them, even under RE2, whose guarantee holds per search); the validator's searches
 * only move forward.
 */
const PRIVATE_KEY = `-----BEGIN ${PEM_LABEL}-----[\\s\\S]*`;

function isPemBodyChar(c: number): boolean {
  return (
    (c >= 65 && c <= 90) ||
    (c >= 97 && c <= 122) ||
    (c >= 48 && c <= 57) ||
    c === 43 ||
    c === 47 ||
    c === 61 ||
    c === 10 ||
    c === 13
  );
}

/** The next private-key END line at or after `from`: its index and length, or -1. */
function nextPemEnd(match: string, from: number): [at: number, length: number] {
  for (let at = match.indexOf("-----END ", from); at !== -1; at = match.indexOf("-----END ", at + 1)) {
    const end = PEM_END.exec(match.slice(at, at + PEM_LINE_MAX));
    if (end !== null) return [at, end[0].length];
  }
  return [-1, 0];
}

/**
 * Each private key block, BEGIN line to its END line, redacted whole. A block cut short (no END line before
 * the next BEGIN or the end of the text, e.g. a clipped memory) is redacted up to the end of its base64 body.
 */
function validatePrivateKey(match: string): readonly Span[] {
  const spans: Span[] = [];
  let endAt = -2; // the next private-key END line (searches only move forward): -1 none left, -2 not looked for
  let endLength = 0;
  let begin = 0;
  while (begin !== -1) {
    const header = PEM_BEGIN.exec(match.slice(begin, begin + PEM_LINE_MAX));
    if (header === null) {
      begin = match.indexOf("-----BEGIN ", begin + 1);
      continue;
    }
    const bodyStart = begin + header[0].length;
    const nextBegin = match.indexOf("-----BEGIN ", bodyStart);
    if (endAt !== -1 && endAt < bodyStart) [endAt, endLength] = nextPemEnd(match, bodyStart);
    let stop: number;
    if (endAt !== -1 && (nextBegin === -1 || endAt < nextBegin)) {
      stop = endAt + endLength;
    } else {
      stop = bodyStart;
      while (stop < match.length && isPemBodyChar(match.charCodeAt(stop))) stop++;
    }
    spans.push([begin, stop]);
    begin = nextBegin === -1 || nextBegin >= stop ? nextBegin : match.indexOf("-----BEGIN ", stop);
  }
  return spans;
}

// ---- jwt ---------------------------------------------------------------------------------------------

/** Three base64url segments: a header that decodes to a JSON object with a string `alg`, then the rest. */
function validateJwt(match: string, offset: number, text: string): boolean {
  if (isTokenChar(text[offset - 1], "_-")) return false;
  const end = offset + match.length;
  if (text[end] === "." && isTokenChar(text[end + 1], "_-")) return false; // a fourth segment: not a JWS
  const parts = match.split(".");
  if (parts.length !== 3) return false;
  const [header = "", payload = "", signature = ""] = parts;
  if (header.length < 16 || payload.length < 2) return false;
  let alg: unknown;
  try {
    const decoded: unknown = JSON.parse(Buffer.from(header, "base64url").toString("utf8"));
    if (typeof decoded !== "object" || decoded === null || Array.isArray(decoded)) return false;
    alg = (decoded as Record<string, unknown>).alg;
  } catch {
    return false;
  }
  if (typeof alg !== "string") return false;
  return signature.length > 0 || alg.toLowerCase() === "none";
}

// ---- github_token ------------------------------------------------------------------------------------

function validateGithub(match: string, offset: number, text: string): boolean {
  if (isTokenChar(text[offset - 1], "_") || isTokenChar(text[offset + match.length], "_")) return false;
  if (match.startsWith("github_pat_")) return match.length === 11 + 82;
  return githubChecksumOk(match);
}

// ---- aws_access_key ----------------------------------------------------------------------------------

/** `word` matched in any case, as a character class per letter (the `js` engine compiles with flag `g` only). */
function anyCase(word: string): string {
  return [...word].map((c) => (/[a-z]/i.test(c) ? `[${c.toLowerCase()}${c.toUpperCase()}]` : c)).join("");
}

const AWS_SECRET_LABEL = `${anyCase("secret")}[ _.-]?${anyCase("access")}[ _.-]?${anyCase("key")}`;
const AWS_SEPARATOR = `["'\`]?[ \\t]{0,3}(?::|=>?|${anyCase("is")})?[ \\t]{0,3}["'\`]?`;
const AWS = `A(?:KIA|SIA|BIA|CCA)[A-Z2-7]{16}|${AWS_SECRET_LABEL}${AWS_SEPARATOR}[A-Za-z0-9/+]*`;
const AWS_LABEL_PREFIX = new RegExp(`^${AWS_SECRET_LABEL}${AWS_SEPARATOR}`);

/**
 * An access key id (`AKIA` + 16 base32 characters) standing alone, or a secret access key (40 characters of
 * base64) right after a label such as `aws_secret_access_key =`: only the key is redacted, the label stays.
 */
function validateAws(match: string, offset: number, text: string): boolean | readonly Span[] {
  const end = offset + match.length;
  if (match.length === 20 && /^A(?:KIA|SIA|BIA|CCA)/.test(match)) {
    return !isTokenChar(text[offset - 1], "_/+") && !isTokenChar(text[end], "_/+");
  }
  if (isTokenChar(text[offset - 1])) return false;
  const label = AWS_LABEL_PREFIX.exec(match);
  if (label === null) return false;
  const key = match.slice(label[0].length);
  if (key.length !== 40 || charClasses(key) < 2 || text[end] === "=") return false;
  return [[label[0].length, match.length]];
}

// ---- slack_token -------------------------------------------------------------------------------------

const SLACK = "xox[abprs]-[A-Za-z0-9-]*|(?:https?://)?hooks\\.slack\\.com/services/[A-Za-z0-9/]*";
const SLACK_WEBHOOK =
  /^(?:https?:\/\/)?hooks\.slack\.com\/services\/T[A-Z0-9]{6,}\/B[A-Z0-9]{6,}\/[A-Za-z0-9]{16,}/;

/**
 * `xoxb-` (bot), `xoxp-` (user), `xoxa-`, `xoxr-`, `xoxs-` tokens: at least 15 characters of digits,
 * letters and dashes with a digit among them (trailing dashes are left out); and incoming-webhook URLs.
 */
function validateSlack(match: string, offset: number, text: string): boolean | readonly Span[] {
  if (match.startsWith("xox")) {
    if (isTokenChar(text[offset - 1], "_-")) return false;
    let end = match.length;
    while (match[end - 1] === "-") end--;
    const body = match.slice(5, end);
    return body.length >= 15 && /\d/.test(body) ? [[0, end]] : false;
  }
  const hook = SLACK_WEBHOOK.exec(match);
  return hook === null ? false : [[0, hook[0].length]];
}

// ---- stripe_key --------------------------------------------------------------------------------------

/** Secret (`sk_`), restricted (`rk_`) and publishable (`pk_`) keys, live or test, 24+ characters after. */
function validateStripe(match: string, offset: number, text: string): boolean {
  if (isTokenChar(text[offset - 1], "_")) return false;
  const body = match.slice(match.indexOf("_", 3) + 1);
  return body.length >= 24 && body.length <= 247 && charClasses(body) >= 2;
}

// ---- google_api_key ----------------------------------------------------------------------------------

/** `AIza` + 35 characters, not glued to more token characters. */
function validateGoogle(match: string, offset: number, text: string): boolean {
  const after = text[offset + match.length];
  if (isTokenChar(text[offset - 1], "_-") || isTokenChar(after, "_")) return false;
  return !(after === "-" && isTokenChar(text[offset + match.length + 1], "_-"));
}

// ---- openai_key --------------------------------------------------------------------------------------

/** The prefix of each key kind and the length its random part must have. */
const OPENAI_PREFIX = /^sk-(?:(proj|svcacct|admin)-|(ant)-(?:api|admin|oat|ort)\d\d-)?/;

/**
 * OpenAI keys (`sk-` + 48 letters and digits; `sk-proj-`, `sk-svcacct-`, `sk-admin-` + 40 or more) and
 * Anthropic-style keys (`sk-ant-api03-` + 80 or more), with letters and digits mixed.
 */
function validateOpenai(match: string, offset: number, text: string): boolean {
  if (isTokenChar(text[offset - 1], "_-")) return false;
  const prefix = OPENAI_PREFIX.exec(match);
  if (prefix === null) return false;
  const body = match.slice(prefix[0].length);
  const ok =
    prefix[2] !== undefined
      ? body.length >= 80
      : prefix[1] !== undefined
        ? body.length >= 40
        : body.length === 48 && !/[_-]/.test(body);
  return ok && charClasses(body) >= 2;
}

// ---- generic_secret ----------------------------------------------------------------------------------

/** Minimum length and entropy of a generic secret value. */
const GENERIC_MIN_LENGTH = 20;
const GENERIC_MIN_ENTROPY = 3;

/**
 * Words after which a value is a credential: English, Spanish, French, German, Portuguese, Italian, Dutch,
 * Russian, Chinese, Japanese, Korean. Short or ambiguous ones need a non-letter before them.
 */
const CONTEXT_WORDS = [
  "passwords?",
  "passwd",
  "passphrase",
  "passcode",
  "(?<!\\p{L})(?:pwd|mdp|auth|creds)",
  "secrets?",
  "tokens?",
  "api[ _-]?keys?",
  "access[ _-]?keys?",
  "secret[ _-]?keys?",
  "private[ _-]?keys?",
  "signing[ _-]?keys?",
  "encryption[ _-]?keys?",
  "license[ _-]?keys?",
  "authorization",
  "bearer",
  "credentials?",
  "contraseñas?",
  "claves?",
  "mots? de passe",
  "jetons?",
  "clés?",
  "passwort",
  "kennwort",
  "zugangsdaten",
  "schlüssel",
  "senhas?",
  "chaves?",
  "chiave",
  "wachtwoord",
  "пароль",
  "токен",
  "ключ",
  "密码",
  "密碼",
  "口令",
  "令牌",
  "密钥",
  "パスワード",
  "トークン",
  "비밀번호",
  "토큰",
];

/**
 * A context word, then up to five short words of letters and digits on the same line (`for the staging db
 * is`, `du serveur est`, `für den Server lautet`) separated by spaces, `:`, `=` or `>`, then spaces, quotes or
 * a copula glued in CJK (`密码是`), then the value. Punctuation (a sentence end, a comma, brackets) breaks the
 * link. Run on at most `CONTEXT_WINDOW` characters before a candidate; separators and words use disjoint
 * character classes, so there is one way to split the window.
 */
const CONTEXT = new RegExp(
  `(?:${CONTEXT_WORDS.join("|")})["'\`)\\]]*(?:[ \\t:=>：]+[\\p{L}\\p{M}\\p{N}_'’-]{1,24}){0,5}[\\s:=>："'\`(「『“‘«是为為はがを은는이가]*$`,
  "iu",
);
const CONTEXT_WINDOW = 80;

const B64_CHAR = "[A-Za-z0-9+/=_-]";
/**
 * A run of 20+ base64/base64url characters starting at a word boundary. The same as
 * `\b[A-Za-z0-9][A-Za-z0-9+/=_-]{19,}`, but with the first classes written out: V8 then skips ahead by looking
 * at the fixed-width prefix, and ordinary prose costs ~40 % less (about 22 µs instead of 37 µs for 16 texts of
 * 500 characters).
 */
const GENERIC = `\\b[A-Za-z0-9]${B64_CHAR.repeat(7)}${B64_CHAR}{12,}`;

/** The start of the value in a candidate such as `api_key=3f9…` (0 when it holds no `label=`). */
function valueStart(match: string): number {
  for (let i = match.indexOf("="); i !== -1 && i < match.length - 1; i = match.indexOf("=", i + 1)) {
    if (match[i + 1] !== "=") return i + 1;
  }
  return 0;
}

/**
 * Random-looking: letters and digits, or both cases, with at least 3 bits of entropy per character. Without
 * a digit, between a quarter and three quarters of the letters are capitals: random letters are about half,
 * camelCase identifiers and CamelCase pass phrases (`withinTokenLimitWithSpecial`) far fewer.
 */
function looksRandom(value: string): boolean {
  if (value.length < GENERIC_MIN_LENGTH || charClasses(value) < 2) return false;
  if (!/\d/.test(value)) {
    const upper = value.replace(/[^A-Z]/g, "").length;
    const letters = value.replace(/[^A-Za-z]/g, "").length;
    if (upper < letters / 4 || upper > (letters * 3) / 4) return false;
  }
  return shannonEntropy(value) >= GENERIC_MIN_ENTROPY;
}

/**
 * A run of 20+ base64/base64url characters is a secret only when a context word stands just before it and
 * it looks random (`looksRandom`). An `env`-style `LABEL=value` run is split: only the value is redacted.
 */
function validateGeneric(match: string, offset: number, text: string): boolean | readonly Span[] {
  const start = valueStart(match);
  if (!looksRandom(match.slice(start))) return false;
  const contextEnd = offset + start;
  if (!CONTEXT.test(text.slice(Math.max(0, contextEnd - CONTEXT_WINDOW), contextEnd))) return false;
  return [[start, match.length]];
}

/** The secrets detectors in the order they run: whole blocks first, the context-gated fallback last. */
export const SECRET_DETECTORS: readonly Detector[] = [
  {
    name: "private_key",
    engine: "js",
    source: PRIVATE_KEY,
    requires: "PRIVATE KEY",
    validate: validatePrivateKey,
  },
  {
    name: "jwt",
    engine: "js",
    source: "eyJ[A-Za-z0-9_-]*(?:\\.[A-Za-z0-9_-]*){0,2}",
    requires: "yJ", // in every match ("eyJ"), and faster to look for: "e" is the commonest letter
    validate: validateJwt,
  },
  {
    name: "github_token",
    engine: "js",
    source: "gh[pousr]_[A-Za-z0-9]{36}|github_pat_[A-Za-z0-9_]*",
    requires: "_",
    validate: validateGithub,
  },
  { name: "aws_access_key", engine: "js", source: AWS, validate: validateAws },
  { name: "slack_token", engine: "js", source: SLACK, validate: validateSlack },
  {
    name: "stripe_key",
    engine: "js",
    source: "[spr]k_(?:live|test)_[A-Za-z0-9]*",
    requires: "k_",
    validate: validateStripe,
  },
  {
    name: "google_api_key",
    engine: "js",
    source: "AIza[0-9A-Za-z_-]{35}",
    requires: "AIza",
    validate: validateGoogle,
  },
  {
    name: "openai_key",
    engine: "js",
    source: "sk-[A-Za-z0-9_-]*",
    requires: "k-", // in every match ("sk-"), and faster to look for than a string starting with "s"
    validate: validateOpenai,
  },
  { name: "generic_secret", engine: "js", source: GENERIC, validate: validateGeneric },
];
