import fc from "fast-check";
import { compileRedactor } from "../../src/pipeline/redaction/index";
import type { Redactor } from "../../src/pipeline/types";
import {
  DETECTORS,
  type DetectorName,
  redactionSchema,
  SECRET_DETECTOR_NAMES,
} from "../../src/policy/schema";
import { githubToken, SECRET_SAMPLES, type SecretName } from "../helpers/secrets";

const R = "[REDACTED]";

function make(detectors: readonly DetectorName[]): Redactor {
  return compileRedactor(redactionSchema.parse({ enabled: true, detectors: [...detectors] }));
}
const all = make(DETECTORS);
const single = Object.fromEntries(DETECTORS.map((d) => [d, make([d])])) as Record<DetectorName, Redactor>;

/** Chat around a secret, in several languages: what comes before it and what comes after. */
const around = fc.tuple(
  fc.constantFrom(
    "",
    "here you go: ",
    "Ok, noted.\n",
    "(",
    "Je te l'envoie : ",
    "Te lo paso: ",
    "Hier ist es:\n",
    "Segue: ",
    "これです：",
    "给你：",
    "여기요: ",
    "Вот: ",
  ),
  fc.constantFrom("", ".", ", thanks", ") ok", "\nbye", " — ne le partage pas.", "。谢谢", " です", "!"),
);

interface Piece {
  text: string;
  secret?: { detector: SecretName; value: string; text: string };
}

const secretPiece: fc.Arbitrary<Piece> = fc
  .constantFrom(...SECRET_DETECTOR_NAMES)
  .chain((detector) => fc.tuple(fc.constant(detector), SECRET_SAMPLES[detector], around))
  .map(([detector, sample, [before, after]]) => ({
    text: `${before}${sample.text}${after}`,
    secret: { detector, value: sample.secret, text: sample.text },
  }));

/** Random text and ordinary chat, including ids and hashes that are not secrets. */
const filler: fc.Arbitrary<Piece> = fc
  .oneof(
    fc.string({ maxLength: 30 }),
    fc.string({ unit: "grapheme", maxLength: 20 }),
    fc.constantFrom(
      "the build 3f2a9c8e7b6d5a4f3e2d1c0b9a8f7e6d5c4b3a29 passed",
      "request 123e4567-e89b-12d3-a456-426614174000 timed out",
      "see https://example.com/docs/getting-started/install",
      "le jeton de présence est à l'accueil",
      "Passwort vergessen? Kein Problem.",
      "我们明天讨论令牌的设计",
      "v1.2.3",
    ),
  )
  .map((text) => ({ text }));

const separator = fc.constantFrom(", ", "\n", " | ", ": ", "; ", " (", ") ");

const sample = fc.array(fc.oneof(filler, secretPiece), { maxLength: 6 }).chain((parts) =>
  fc.array(separator, { minLength: parts.length, maxLength: parts.length }).map((seps) => ({
    text: parts.map((p, i) => p.text + (seps[i] ?? " ")).join(""),
    secrets: parts.flatMap((p) => (p.secret === undefined ? [] : [p.secret])),
  })),
);

describe("secrets redaction properties", () => {
  test("no generated secret survives, and no detector matches the output", () => {
    fc.assert(
      fc.property(sample, ({ text, secrets }) => {
        const out = all.redact(text);
        for (const { value } of secrets) expect(out.text).not.toContain(value);
        for (const d of DETECTORS) expect(single[d].redact(out.text)).toEqual({ text: out.text, fired: [] });
      }),
      { numRuns: 400 },
    );
  });

  test("each secrets detector alone redacts exactly the secret, and fired names it", () => {
    fc.assert(
      fc.property(secretPiece, ({ text, secret }) => {
        if (secret === undefined) return;
        const { detector, value } = secret;
        const expected = text.replace(secret.text, secret.text.replace(value, R));
        expect(single[detector].redact(text)).toEqual({ text: expected, fired: [detector] });
      }),
      { numRuns: 600 },
    );
  });

  test("redaction with every detector on is idempotent", () => {
    fc.assert(
      fc.property(sample, ({ text }) => {
        const once = all.redact(text);
        expect(all.redact(once.text)).toEqual({ text: once.text, fired: [] });
      }),
      { numRuns: 300 },
    );
  });

  test("random base64, hex and UUIDs in chat without a context word are never secrets", () => {
    const b64 = fc.stringMatching(/^[A-Za-z0-9+/]{20,64}={0,2}$/);
    const hex = fc.stringMatching(/^[0-9a-f]{7,64}$/);
    const uuid = fc.uuid();
    const sentence = fc.tuple(
      fc.constantFrom("the blob ", "hash: ", "id ", "commit ", "Prüfsumme ", "identifiant : ", "哈希值："),
      fc.oneof(b64, hex, uuid),
      fc.constantFrom(" is attached", ".", "", " 了"),
    );
    fc.assert(
      fc.property(sentence, ([before, value, after]) => {
        const text = `${before}${value}${after}`;
        expect(single.generic_secret.redact(text)).toEqual({ text, fired: [] });
        if (!/^(?:A(?:KIA|SIA|BIA|CCA)|AIza|eyJ)/.test(value)) {
          for (const d of SECRET_DETECTOR_NAMES) expect(single[d].redact(text).fired).toEqual([]);
        }
      }),
      { numRuns: 400 },
    );
  });

  test("a GitHub token with any other checksum is kept", () => {
    const alnum = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
    const random = fc.stringMatching(/^[A-Za-z0-9]{30}$/);
    const change = fc.tuple(fc.nat(5), fc.nat(alnum.length - 1));
    fc.assert(
      fc.property(random, change, (body, [at, to]) => {
        const good = githubToken("ghp_", body);
        const chars = [...good];
        const i = good.length - 6 + at;
        const replacement = alnum.charAt(to);
        fc.pre(chars[i] !== replacement);
        chars[i] = replacement;
        const bad = chars.join("");
        expect(single.github_token.redact(`token ${bad}`)).toEqual({ text: `token ${bad}`, fired: [] });
        expect(single.github_token.redact(`token ${good}`).text).toBe(`token ${R}`);
      }),
      { numRuns: 300 },
    );
  });
});
