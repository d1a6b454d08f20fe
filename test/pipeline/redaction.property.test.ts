import fc from "fast-check";
import { FILE_EXTENSIONS, ibanChecksum } from "../../src/pipeline/redaction/detectors";
import { compileRedactor, RedactionPatternError } from "../../src/pipeline/redaction/index";
import { luhn } from "../../src/pipeline/redaction/luhn";
import type { Redactor } from "../../src/pipeline/types";
import { DETECTORS, type DetectorName, redactionSchema } from "../../src/policy/schema";
import { SECRET_SAMPLES, type SecretName } from "../helpers/secrets";

const digits = (min: number, max: number) => fc.stringMatching(new RegExp(`^[0-9]{${min},${max}}$`));
const pad = (n: number, width: number) => String(n).padStart(width, "0");

/** Issuer prefixes with the lengths they issue (see `cardIssuer` in detectors.ts). */
const ISSUERS: ReadonlyArray<readonly [string, readonly number[]]> = [
  ["4", [13, 16, 19]],
  ["51", [16]],
  ["2221", [16]],
  ["37", [15]],
  ["36", [14]],
  ["6011", [16, 17, 18, 19]],
  ["3530", [16, 17, 18, 19]],
];

/** Luhn-valid numbers written like cards: 16 digits in fours, Amex 4-6-5, or one block of 13–19. */
const card = fc
  .constantFrom(...ISSUERS)
  .chain(([prefix, lengths]) => fc.tuple(fc.constant(prefix), fc.constantFrom(...lengths), digits(18, 18)))
  .chain(([prefix, length, body]) => {
    const stem = (prefix + body).slice(0, length - 1);
    const check = [..."0123456789"].find((d) => luhn(stem + d)) ?? "0";
    const number = stem + check;
    const layouts: fc.Arbitrary<string>[] = [fc.constant(number)];
    if (length === 16)
      layouts.push(fc.constantFrom(" ", "-").map((s) => number.match(/.{4}/g)?.join(s) ?? number));
    if (length === 15) {
      const amex = (s: string) => [number.slice(0, 4), number.slice(4, 10), number.slice(10)].join(s);
      layouts.push(fc.constantFrom(" ", "-").map(amex));
    }
    return fc.oneof(...layouts);
  });

const ssn = fc
  .tuple(
    fc.integer({ min: 1, max: 899 }).filter((a) => a !== 666),
    fc.integer({ min: 1, max: 99 }),
    fc.integer({ min: 1, max: 9999 }),
    fc.constantFrom("-", " "),
  )
  .map(([a, g, s, sep]) => [pad(a, 3), pad(g, 2), pad(s, 4)].join(sep));

const nanp = fc.tuple(fc.integer({ min: 200, max: 999 }), fc.integer({ min: 200, max: 999 }), digits(4, 4));
const phone = fc.oneof(
  nanp.map(([a, e, l]) => `(${a}) ${e}-${l}`),
  nanp.map(([a, e, l]) => `${a}-${e}-${l}`),
  nanp.map(([a, e, l]) => `${a}.${e}.${l}`),
  nanp.map(([a, e, l]) => `+1 ${a} ${e} ${l}`),
  nanp.map(([a, e, l]) => `+1${a}${e}${l}`),
  fc
    .tuple(
      fc.integer({ min: 1, max: 999 }),
      fc.array(digits(2, 4), { minLength: 2, maxLength: 4 }),
      fc.constantFrom(" ", "-"),
    )
    .filter(([cc, groups]) => {
      const n = String(cc).length + groups.join("").length;
      return n >= 8 && n <= 15;
    })
    .map(([cc, groups, sep]) => `+${cc} ${groups.join(sep)}`),
  fc
    .tuple(fc.integer({ min: 1, max: 9 }), digits(8, 8))
    .map(([a, d]) => `0${a} ${d.match(/.{2}/g)?.join(" ")}`),
);

const ipv4 = fc.tuple(fc.nat(255), fc.nat(255), fc.nat(255), fc.nat(255)).map((o) => o.join("."));

const email = fc
  .tuple(
    fc.oneof(
      fc.stringMatching(/^[a-z0-9_%+-]{1,12}(\.[a-z0-9_%+-]{1,8}){0,2}$/),
      fc.constantFrom("josé", "мария", "ÿvonne.o"),
    ),
    fc.array(fc.stringMatching(/^[a-z0-9]([a-z0-9-]{0,8}[a-z0-9])?$/), { minLength: 1, maxLength: 3 }),
    // A file extension is no TLD (`settings@prod.yaml`), and a scale factor no domain (`icon@2x.png`).
    fc.stringMatching(/^[a-z]{2,6}$/).filter((tld) => !FILE_EXTENSIONS.has(tld)),
  )
  .filter(([, labels]) => !/^\d{1,2}(?:\.\d{1,2})?x\./.test(`${labels.join(".")}.`))
  .map(([local, labels, tld]) => `${local}@${labels.join(".")}.${tld}`);

/** IBANs of a few countries with valid check digits, in one block or in groups of four. */
const iban = fc
  .tuple(
    fc.constantFrom(["DE", 22], ["FR", 27], ["GB", 22], ["NL", 18], ["ES", 24], ["BE", 16], ["NO", 15]),
    digits(30, 30),
    fc.boolean(),
  )
  .map(([[country, length], body, spaced]) => {
    const bban = body.slice(0, Number(length) - 4);
    const check = String(98 - ibanChecksum(`${country}00${bban}`)).padStart(2, "0");
    const number = `${country}${check}${bban}`;
    return spaced ? (number.match(/.{1,4}/g)?.join(" ") ?? number) : number;
  });

const hexGroup = fc.stringMatching(/^[0-9a-f]{1,4}$/);
/** IPv6 addresses: eight groups, compressed around `::`, or IPv4-mapped; the first group holds a digit. */
const ipv6 = fc.oneof(
  fc.array(hexGroup, { minLength: 7, maxLength: 7 }).map((g) => ["2001", ...g].join(":")),
  fc
    .tuple(fc.array(hexGroup, { maxLength: 2 }), fc.array(hexGroup, { minLength: 1, maxLength: 3 }))
    .map(([head, tail]) => `${["fe80", ...head].join(":")}::${tail.join(":")}`),
  fc.tuple(fc.nat(255), fc.nat(255), fc.nat(255), fc.nat(255)).map((o) => `::ffff:${o.join(".")}`),
);

/** Secrets (with the context word a value needs for generic_secret): see test/helpers/secrets.ts. */
const secrets = Object.fromEntries(
  Object.entries(SECRET_SAMPLES).map(([name, sample]) => [name, sample.map((s) => s.text)]),
) as Record<SecretName, fc.Arbitrary<string>>;

const PII: Record<DetectorName, fc.Arbitrary<string>> = {
  email,
  credit_card: card,
  ssn,
  phone,
  ipv4,
  iban,
  ipv6,
  ...secrets,
};

/** Random text that may itself contain anything, including digits, "@" and PII-like pieces. */
const filler = fc.oneof(
  fc.string({ maxLength: 30 }),
  fc.string({ unit: "grapheme", maxLength: 20 }),
  fc.constantFrom(
    "请联系我",
    "東京で会いましょう",
    "전화 주세요",
    "مرحبا",
    "שלום",
    "😀👍🏽",
    "e\u0301",
    "v1.2.3",
    "2024",
    "3.14",
  ),
);
/** What separates a piece of PII from its neighbours in the generated texts. */
const separator = fc.constantFrom(", ", "\n", " | ", ": ", "; ", " (", ") ");

interface Sample {
  text: string;
  pii: Array<{ detector: DetectorName; value: string }>;
}

const sample: fc.Arbitrary<Sample> = fc
  .array(
    fc.oneof(
      filler.map((text) => ({ text, pii: undefined })),
      fc
        .constantFrom(...DETECTORS)
        .chain((detector) => PII[detector].map((value) => ({ text: value, pii: { detector, value } }))),
    ),
    { maxLength: 8 },
  )
  .chain((parts) =>
    fc.array(separator, { minLength: parts.length, maxLength: parts.length }).map((seps) => ({
      text: parts.map((p, i) => p.text + (seps[i] ?? " ")).join(""),
      pii: parts.flatMap((p) => (p.pii === undefined ? [] : [p.pii])),
    })),
  );

function make(detectors: readonly DetectorName[], replacement = "[REDACTED]"): Redactor {
  return compileRedactor(redactionSchema.parse({ enabled: true, detectors: [...detectors], replacement }));
}
const all = make(DETECTORS);
const single = Object.fromEntries(DETECTORS.map((d) => [d, make([d])])) as Record<DetectorName, Redactor>;

describe("redaction properties", () => {
  test("no generated PII survives, and no built-in detector matches the output", () => {
    fc.assert(
      fc.property(sample, ({ text, pii }) => {
        const out = all.redact(text).text;
        for (const { value } of pii) expect(out).not.toContain(value);
        for (const d of DETECTORS) expect(single[d].redact(out)).toEqual({ text: out, fired: [] });
      }),
      { numRuns: 400 },
    );
  });

  test("each enabled detector catches what it is meant to, and fired names it", () => {
    const piece = fc.constantFrom(...DETECTORS).chain((d) => fc.tuple(fc.constant(d), PII[d]));
    fc.assert(
      fc.property(piece, filler, ([detector, value], context) => {
        const out = single[detector].redact(`${context}\n${value}: ${context}`);
        expect(out.text).not.toContain(value);
        expect(out.fired).toContain(detector);
      }),
      { numRuns: 500 },
    );
  });

  test("redaction is idempotent", () => {
    fc.assert(
      fc.property(sample, ({ text }) => {
        const once = all.redact(text);
        expect(all.redact(once.text)).toEqual({ text: once.text, fired: [] });
      }),
      { numRuns: 300 },
    );
  });

  test("the same input always gives the same output", () => {
    fc.assert(
      fc.property(sample, ({ text }) => {
        expect(all.redact(text)).toEqual(make(DETECTORS).redact(text));
      }),
      { numRuns: 100 },
    );
  });

  test("a replacement made of safe characters is accepted and keeps both properties", () => {
    const safe = fc.stringMatching(/^[A-Z*#_<>[\]]{1,16}$/);
    fc.assert(
      fc.property(safe, sample, (replacement, { text, pii }) => {
        const r = make(DETECTORS, replacement);
        const out = r.redact(text).text;
        for (const { value } of pii) expect(out).not.toContain(value);
        expect(r.redact(out)).toEqual({ text: out, fired: [] });
      }),
      { numRuns: 200 },
    );
  });

  test("a replacement that itself looks like PII cannot be configured", () => {
    // A replacement is at most 64 characters (longer ones are refused by the schema before this check).
    const piiLike = fc
      .constantFrom(...DETECTORS)
      .chain((d) => PII[d])
      .filter((s) => s.length <= 64);
    fc.assert(
      fc.property(piiLike, fc.subarray([...DETECTORS]), (replacement, detectors) => {
        expect(() => make(detectors, replacement)).toThrow(RedactionPatternError);
      }),
      { numRuns: 200 },
    );
  });
});
