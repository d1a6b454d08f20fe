import fc from "fast-check";
import { compileRedactor, RedactionPatternError } from "../../src/pipeline/redaction/index";
import { luhn } from "../../src/pipeline/redaction/luhn";
import type { Redactor } from "../../src/pipeline/types";
import { DETECTORS, type DetectorName, redactionSchema } from "../../src/policy/schema";

const digits = (min: number, max: number) => fc.stringMatching(new RegExp(`^[0-9]{${min},${max}}$`));
const pad = (n: number, width: number) => String(n).padStart(width, "0");

/** Luhn-valid numbers written like cards: 16 digits in fours, Amex 4-6-5, or one block of 13–19. */
const card = fc
  .tuple(fc.constantFrom("4", "51", "37", "6011", "35"), fc.integer({ min: 13, max: 19 }), digits(18, 18))
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
    fc.stringMatching(/^[a-z]{2,6}$/),
  )
  .map(([local, labels, tld]) => `${local}@${labels.join(".")}.${tld}`);

const PII: Record<DetectorName, fc.Arbitrary<string>> = { email, credit_card: card, ssn, phone, ipv4 };

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
    const piiLike = fc.constantFrom(...DETECTORS).chain((d) => PII[d]);
    fc.assert(
      fc.property(piiLike, fc.subarray([...DETECTORS]), (replacement, detectors) => {
        expect(() => make(detectors, replacement)).toThrow(RedactionPatternError);
      }),
      { numRuns: 200 },
    );
  });
});
