import { crc32 } from "node:zlib";
import fc from "fast-check";
import type { SECRET_DETECTOR_NAMES } from "../../src/policy/schema";

/**
 * Fake credentials in the shapes the secrets detectors look for, for tests only. Nothing here is a real key:
 * values are generated (or typed out by hand) to have the right prefix, length and checksum.
 */

export type SecretName = (typeof SECRET_DETECTOR_NAMES)[number];

const BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
const UPPER = "ABCDEFGHIJKLMNOPQRSTUVWXYZ";
const BASE32 = `${UPPER}234567`;

/** The checksum GitHub appends to a classic token: CRC32 of the 30 random characters, in base 62 on 6. */
export function githubChecksum(random30: string): string {
  let n = crc32(random30);
  let out = "";
  while (n > 0) {
    out = BASE62.charAt(n % 62) + out;
    n = Math.floor(n / 62);
  }
  return out.padStart(6, "0");
}

/** A classic GitHub token with a valid checksum: `prefix` (`ghp_`, `gho_`…) + 30 characters + checksum. */
export function githubToken(prefix: string, random30: string): string {
  if (random30.length !== 30) throw new Error("a classic GitHub token has 30 random characters");
  return `${prefix}${random30}${githubChecksum(random30)}`;
}

const b64url = (s: string): string => Buffer.from(s, "utf8").toString("base64url");

/** A compact JWS: base64url(header JSON) . base64url(payload JSON) . signature. */
export function jwt(header: object, payload: object, signature: string): string {
  return `${b64url(JSON.stringify(header))}.${b64url(JSON.stringify(payload))}.${signature}`;
}

/** A PEM block with `label` (e.g. "RSA PRIVATE KEY") around `body` lines. */
export function pem(label: string, body: readonly string[]): string {
  return [`-----BEGIN ${label}-----`, ...body, `-----END ${label}-----`].join("\n");
}

/** A string of `length` characters drawn from `alphabet` by a seeded generator (for fixed test data). */
export function seeded(seed: number, alphabet: string, length: number): string {
  let state = seed >>> 0;
  let out = "";
  for (let i = 0; i < length; i++) {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    out += alphabet.charAt((state >>> 8) % alphabet.length);
  }
  return out;
}

// ---- fast-check arbitraries ------------------------------------------------------------------------

/**
 * `length` characters of `alphabet`, random-looking: built from shuffled distinct characters (fast-check's
 * bias towards small values would otherwise give runs like "AAAA…" that no detector should call a secret).
 */
function randomChars(alphabet: string, length: number): fc.Arbitrary<string> {
  const chars = [...alphabet];
  const chunk = (n: number) =>
    fc.shuffledSubarray(chars, { minLength: n, maxLength: n }).map((c) => c.join(""));
  const chunks: fc.Arbitrary<string>[] = [];
  for (let left = length; left > 0; left -= chars.length) chunks.push(chunk(Math.min(left, chars.length)));
  return fc.tuple(...chunks).map((parts) => parts.join(""));
}

/** Letters and digits mixed (what every key format here has), so no value is a plain word or number. */
const mixed = (alphabet: string, length: number): fc.Arbitrary<string> =>
  randomChars(alphabet, length).filter((s) => /[0-9]/.test(s) && /[A-Za-z]/.test(s));

/** What is embedded in a text (`text`) and the part of it a detector must redact (`secret`). */
export interface SecretSample {
  text: string;
  secret: string;
}

const whole = (a: fc.Arbitrary<string>): fc.Arbitrary<SecretSample> => a.map((s) => ({ text: s, secret: s }));
const labelled = (labels: fc.Arbitrary<string>, a: fc.Arbitrary<string>): fc.Arbitrary<SecretSample> =>
  fc.tuple(labels, a).map(([label, secret]) => ({ text: `${label}${secret}`, secret }));

const awsKeyId = fc
  .tuple(fc.constantFrom("AKIA", "ASIA", "ABIA", "ACCA"), randomChars(BASE32, 16))
  .map(([p, s]) => p + s);

const pemSample = fc
  .tuple(
    fc.constantFrom("", "RSA ", "EC ", "DSA ", "OPENSSH ", "ENCRYPTED "),
    fc.array(randomChars(`${BASE62}+/`, 64), { minLength: 0, maxLength: 3 }),
    randomChars(BASE62, 12),
  )
  .map(([kind, lines, last]) => pem(`${kind}PRIVATE KEY`, [...lines, `${last}==`]));

const jwtSample = fc
  .tuple(
    fc.constantFrom("HS256", "RS256", "ES384", "EdDSA"),
    fc.boolean(),
    fc.stringMatching(/^[a-z0-9]{1,12}$/),
    randomChars(`${BASE62}_-`, 43),
  )
  .map(([alg, typ, sub, sig]) => jwt(typ ? { alg, typ: "JWT" } : { alg }, { sub }, sig));

const slackSample = fc.oneof(
  fc
    .tuple(
      fc.constantFrom("xoxb", "xoxp", "xoxa", "xoxr", "xoxs"),
      fc.stringMatching(/^[1-9][0-9]{9,12}$/),
      fc.stringMatching(/^[1-9][0-9]{9,12}$/),
      mixed(BASE62, 24),
    )
    .map(([p, a, b, c]) => `${p}-${a}-${b}-${c}`),
  fc
    .tuple(randomChars(`${UPPER}0123456789`, 10), randomChars(`${UPPER}0123456789`, 10), mixed(BASE62, 24))
    .map(([t, b, s]) => `https://hooks.slack.com/services/T${t}/B${b}/${s}`),
);

const stripeSample = fc
  .tuple(
    fc.constantFrom("sk_live_", "sk_test_", "rk_live_", "rk_test_", "pk_live_"),
    fc.integer({ min: 24, max: 60 }),
  )
  .chain(([p, n]) => mixed(BASE62, n).map((s) => p + s));

const openaiSample = fc.oneof(
  mixed(BASE62, 48).map((s) => `sk-${s}`),
  fc
    .tuple(fc.constantFrom("proj", "svcacct", "admin"), mixed(`${BASE62}_-`, 48))
    .map(([k, s]) => `sk-${k}-${s}`),
  mixed(`${BASE62}_-`, 93).map((s) => `sk-ant-api03-${s}`),
);

/** Context words before generic secrets, in the languages the detector knows. */
export const GENERIC_LABELS = [
  "password: ",
  "Password = ",
  "my password is ",
  "api_key=",
  "API key: ",
  "token ",
  "Bearer ",
  "client_secret: ",
  "credentials: ",
  "la contraseña es ",
  "mot de passe : ",
  "das Passwort lautet ",
  "a senha é ",
  "密码是",
  "パスワードは ",
  "비밀번호는 ",
];

/** One arbitrary per secrets detector: what it must redact, in context where it needs one. */
export const SECRET_SAMPLES: Record<SecretName, fc.Arbitrary<SecretSample>> = {
  private_key: whole(pemSample),
  jwt: whole(jwtSample),
  github_token: whole(
    fc.oneof(
      fc
        .tuple(fc.constantFrom("ghp_", "gho_", "ghu_", "ghs_", "ghr_"), randomChars(BASE62, 30))
        .map(([p, r]) => githubToken(p, r)),
      fc.tuple(mixed(BASE62, 22), mixed(BASE62, 59)).map(([a, b]) => `github_pat_${a}_${b}`),
    ),
  ),
  aws_access_key: fc.oneof(
    whole(awsKeyId),
    labelled(
      fc.constantFrom("aws_secret_access_key = ", "AWS_SECRET_ACCESS_KEY=", '"SecretAccessKey": "'),
      mixed(`${BASE62}/+`, 40),
    ),
  ),
  slack_token: whole(slackSample),
  stripe_key: whole(stripeSample),
  google_api_key: whole(mixed(`${BASE62}_-`, 35).map((s) => `AIza${s}`)),
  openai_key: whole(openaiSample),
  generic_secret: labelled(
    fc.constantFrom(...GENERIC_LABELS),
    // Values start with a letter or digit; "=" only pads the end of base64.
    fc
      .tuple(fc.constantFrom(...BASE62), fc.integer({ min: 19, max: 47 }), fc.boolean())
      .chain(([first, n, pad]) => mixed(`${BASE62}+/_-`, n).map((s) => `${first}${s}${pad ? "=" : ""}`)),
  ),
};
