import { BUILTIN_DETECTORS, ibanChecksum, isIpv6 } from "../../src/pipeline/redaction/detectors";
import {
  compileRedactor,
  inspectRedaction,
  NOOP_REDACTOR,
  RedactionPatternError,
} from "../../src/pipeline/redaction/index";
import { luhn } from "../../src/pipeline/redaction/luhn";
import { redactStage } from "../../src/pipeline/stages/redact";
import type { Redactor, StageContext } from "../../src/pipeline/types";
import {
  DETECTORS,
  type DetectorName,
  redactionSchema,
  SECRET_DETECTOR_NAMES,
} from "../../src/policy/schema";
import { makeItem, makePolicy } from "../helpers/items";

const R = "[REDACTED]";

function redactor(patch: Record<string, unknown> = {}): Redactor {
  return compileRedactor(redactionSchema.parse({ enabled: true, detectors: [...DETECTORS], ...patch }));
}

const only = (name: DetectorName): Redactor => redactor({ detectors: [name] });
const all = redactor();

/** The error `fn` throws, for assertions on its fields. */
function thrown(fn: () => unknown): unknown {
  try {
    fn();
  } catch (err) {
    return err;
  }
  throw new Error("expected a throw");
}

describe("luhn", () => {
  test.each(["4111111111111111", "378282246310005", "79927398713", "6011111111111117", "5555555555554444"])(
    "%s is valid",
    (digits) => expect(luhn(digits)).toBe(true),
  );
  test.each(["4111111111111112", "1234567812345678", "79927398710", "", "0", "4111 1111 1111 1111", "41x1"])(
    "%j is not",
    (digits) => expect(luhn(digits)).toBe(false),
  );
});

describe("built-in detectors", () => {
  test("run in a fixed order with card before phone, email before the digit detectors", () => {
    // The secrets detectors run first; their order is tested in redaction.secrets.test.ts.
    const secrets: readonly string[] = SECRET_DETECTOR_NAMES;
    expect(BUILTIN_DETECTORS.map((d) => d.name).filter((n) => !secrets.includes(n))).toEqual([
      "email",
      "iban",
      "credit_card",
      "ssn",
      "ipv6",
      "ipv4",
      "phone",
    ]);
    expect([...BUILTIN_DETECTORS.map((d) => d.name)].sort()).toEqual([...DETECTORS].sort());
  });

  test.each([
    ["card 4111 1111 1111 1111 ok", `card ${R} ok`],
    ["card 4111-1111-1111-1111.", `card ${R}.`],
    ["4111111111111111", R],
    ["amex 3782 822463 10005 x", `amex ${R} x`],
    ["amex 378282246310005", `amex ${R}`],
    ["19 digits 6212 3456 7890 1234 569", `19 digits ${R}`],
    ["card then a year 4111111111111111 2024", `card then a year ${R} 2024`],
    ["a quantity first: 2 × 4111 1111 1111 1111", `a quantity first: 2 × ${R}`],
  ])("credit_card redacts %j", (text, expected) => {
    expect(only("credit_card").redact(text)).toEqual({ text: expected, fired: ["credit_card"] });
  });

  test.each([
    "order 1234567812345678 stays (fails Luhn)",
    "4111 1111 1111 1112",
    "12 digits 411111111111",
    "20 digits 41111111111111111111",
    "dates 01-15-2024 2024-01-15 and 2024 2025 2026 2027",
    "4111 1111-1111 1111 mixed separators",
  ])("credit_card keeps %j", (text) => {
    expect(only("credit_card").redact(text)).toEqual({ text, fired: [] });
  });

  test("ssn: dashes or spaces, never impossible numbers or longer digit strings", () => {
    const ssn = only("ssn");
    expect(ssn.redact("ssn 123-45-6789, or 123 45 6789.").text).toBe(`ssn ${R}, or ${R}.`);
    for (const kept of ["000-12-3456", "666-12-3456", "900-12-3456", "123-00-4567", "123-45-0000"]) {
      expect(ssn.redact(kept)).toEqual({ text: kept, fired: [] });
    }
    for (const kept of ["1123-45-6789", "123-45-67890", "1-123-45-6789", "123-45-6789-1", "2 123 45 6789"]) {
      expect(ssn.redact(kept).text).toBe(kept);
    }
  });

  test.each([
    "+1 415 555 0132",
    "(415) 555-0132",
    "415-555-0132",
    "415.555.0132",
    "1-800-555-0199",
    "+44 20 7946 0958",
    "+33 1 23 45 67 89",
    "+1 (415) 555-0132",
    "+44 (0)20 7946 0958",
    "+49 30 12345678",
    "+14155550132",
    "020 7946 0958",
    "01 23 45 67 89",
  ])("phone redacts %j", (phone) => {
    expect(only("phone").redact(`call ${phone} today`)).toEqual({
      text: `call ${R} today`,
      fired: ["phone"],
    });
  });

  test.each([
    "in 2024 it cost 3.14 or 1,299.99",
    "version 1.2.3 and build 10.0.19045",
    "order 1234567812345678",
    "dates 01-15-2024, 2024-01-15, 15.01.2024 at 12:30",
    "+1 2024",
    "2-415-555-0132",
    "415-555-01329",
  ])("phone keeps %j", (text) => {
    expect(only("phone").redact(text)).toEqual({ text, fired: [] });
  });

  test("phone: a number followed by more digit groups keeps what fits in 15 digits", () => {
    expect(only("phone").redact("+44 20 7946 0958 2024 1234").text).toBe(`${R} 2024 1234`);
  });

  test("phone: a rejected candidate does not hide a real number that starts inside it", () => {
    expect(only("phone").redact("+1 ((415) 555-0132)").text).toBe(`+1 (${R})`);
  });

  test("card runs before phone: a card is reported as a card", () => {
    expect(all.redact("pay with 4111 1111 1111 1111")).toEqual({
      text: `pay with ${R}`,
      fired: ["credit_card"],
    });
  });

  test("ipv4: dotted quads with octets 0–255 only", () => {
    const ip = only("ipv4");
    expect(ip.redact("from 192.168.1.1, 0.0.0.0 and 255.255.255.255.").text).toBe(
      `from ${R}, ${R} and ${R}.`,
    );
    for (const kept of ["1.2.3", "10.0.0.256", "1.2.3.4.5", "v1.2.3.4", "999.1.1.1"]) {
      expect(ip.redact(`x ${kept} y`).text).toBe(`x ${kept} y`);
    }
  });

  test.each([
    ["mail john.doe+tag@example.co.uk, thanks", `mail ${R}, thanks`],
    ["(Jane_O-Neil%x@mail-server.example.org)", `(${R})`],
    ["at the end: john@example.com.", `at the end: ${R}.`],
    ["<john@EXAMPLE.COM>", `<${R}>`],
    ["josé.garcía@correo.es", R],
    ["пользователь@пример.рф", R],
    ["用户@例子.中国", R],
    ["punycode ivan@xn--e1afmkfd.xn--p1ai", `punycode ${R}`],
  ])("email redacts %j", (text, expected) => {
    expect(only("email").redact(text)).toEqual({ text: expected, fired: ["email"] });
  });

  test.each(["john@localhost", "@example.com", "a@b.c", "user@ example.com", "john at example dot com"])(
    "email keeps %j",
    (text) => expect(only("email").redact(text)).toEqual({ text, fired: [] }),
  );
});

describe("multilingual text around PII", () => {
  test.each([
    ["请联系john@example.com谢谢", `请联系${R}谢谢`],
    ["我的电话是415-555-0132，卡号是4111 1111 1111 1111。", `我的电话是${R}，卡号是${R}。`],
    ["john@example.comに送ってください。IPは192.168.0.1です", `${R}に送ってください。IPは${R}です`],
    ["john@example.com으로 보내 주세요. 전화 +82 2 312 3456", `${R}으로 보내 주세요. 전화 ${R}`],
    ["😀john@example.com😀 👨‍👩‍👧 123-45-6789 🇫🇷", `😀${R}😀 👨‍👩‍👧 ${R} 🇫🇷`],
    ["cafe\u0301 e\u0301 123-45-6789 n\u0303", `cafe\u0301 e\u0301 ${R} n\u0303`],
    ["مرحبا، بريدي john@example.com ورقمي 415-555-0132 شكرا", `مرحبا، بريدي ${R} ورقمي ${R} شكرا`],
    [
      "\u200fשלום, המספר שלי \u200e+972 3 123 4567\u200e והמייל dana@example.co.il",
      `\u200fשלום, המספר שלי \u200e${R}\u200e והמייל ${R}`,
    ],
  ])("%j", (text, expected) => {
    const out = all.redact(text);
    expect(out.text).toBe(expected);
    expect(out.text).not.toMatch(/[\uD800-\uDFFF]/u); // no lone surrogate: offsets are UTF-16-exact
  });
});

describe("compileRedactor", () => {
  test("fired lists names in first-match order without repeats", () => {
    const out = all.redact("a@b.co, 4111111111111111, c@d.co, 10.0.0.1, 4111-1111-1111-1111");
    expect(out).toEqual({ text: `${R}, ${R}, ${R}, ${R}, ${R}`, fired: ["email", "credit_card", "ipv4"] });
  });

  test("uses the configured replacement and only the selected detectors", () => {
    const r = redactor({ detectors: ["ssn"], replacement: "***" });
    expect(r.redact("123-45-6789 a@b.co")).toEqual({ text: "*** a@b.co", fired: ["ssn"] });
    expect(redactor({ detectors: [] }).redact("123-45-6789 a@b.co").fired).toEqual([]);
  });

  test("the policy defaults are email, ssn and credit_card", () => {
    const r = compileRedactor(redactionSchema.parse({ enabled: true }));
    expect(r.redact("a@b.co 123-45-6789 4111111111111111 415-555-0132 10.0.0.1")).toEqual({
      text: `${R} ${R} ${R} 415-555-0132 10.0.0.1`,
      fired: ["email", "credit_card", "ssn"],
    });
  });

  test("a disabled config changes nothing; NOOP_REDACTOR neither", () => {
    const r = compileRedactor(redactionSchema.parse({ enabled: false, patterns: ["secret"] }));
    expect(r.enabled).toBe(false);
    expect(r.redact("a@b.co secret")).toEqual({ text: "a@b.co secret", fired: [] });
    expect(NOOP_REDACTOR.enabled).toBe(false);
    expect(NOOP_REDACTOR.redact("123-45-6789")).toEqual({ text: "123-45-6789", fired: [] });
  });

  test("custom patterns run after the built-ins, in file order, with RE2 syntax and flags", () => {
    const r = redactor({
      detectors: ["ssn"],
      patterns: [
        "\\bACME-\\d{4}\\b",
        { name: "project", pattern: "project (?P<code>[a-z]+)", flags: "i" },
        "\\d{3}",
      ],
    });
    expect(r.redact("ACME-1234 and PROJECT Falcon, 123-45-6789")).toEqual({
      text: `${R} and ${R}, ${R}`,
      fired: ["ssn", "custom_0", "project"],
    });
    expect(r.redact("code 555").fired).toEqual(["custom_2"]);
  });

  test("custom patterns are global and Unicode-aware", () => {
    const r = redactor({ detectors: [], patterns: [{ name: "kanji", pattern: "\\p{Han}+" }] });
    expect(r.redact("😀東京😀 and 大阪")).toEqual({ text: `😀${R}😀 and ${R}`, fired: ["kanji"] });
  });

  test("a pattern that matches the empty string does not insert the replacement everywhere", () => {
    expect(redactor({ detectors: [], patterns: ["x*"] }).redact("abxxc😀")).toEqual({
      text: `ab${R}c😀`,
      fired: ["custom_0"],
    });
  });

  test("a pattern that is catastrophic for a backtracking engine runs in linear time under RE2", () => {
    const text = `${"a".repeat(50_000)}!`;
    expect(redactor({ detectors: [], patterns: ["(a+)+$"] }).redact(text)).toEqual({ text, fired: [] });
    expect(redactor({ detectors: [], patterns: ["(a|aa)+!"] }).redact(text)).toEqual({
      text: R,
      fired: ["custom_0"],
    });
  });

  test.each([
    ["(a)\\1", "invalid escape sequence"],
    ["x(?=y)", "invalid perl operator"],
    ["(?<=x)y", "invalid perl operator"],
    ["(unclosed", "missing )"],
  ])("%j is rejected with the pattern index, RE2's reason and the field path", (bad, reason) => {
    for (const enabled of [true, false]) {
      const err = thrown(() =>
        compileRedactor(
          redactionSchema.parse({ enabled, patterns: ["ok", { name: "fine", pattern: "x" }, bad] }),
        ),
      );
      expect(err).toBeInstanceOf(RedactionPatternError);
      if (!(err instanceof RedactionPatternError)) return;
      expect(err.path).toEqual(["redaction", "patterns", 2]);
      expect(err.message).not.toContain("redaction.patterns");
      expect(err.message).toContain("custom pattern 2");
      expect(err.message).toContain(reason);
    }
  });

  test.each(["a@b.co", "123-45-6789", "4111 1111 1111 1111", "+1 415 555 0132", "10.0.0.1"])(
    "a replacement that looks like PII (%j) is refused",
    (replacement) => {
      const err = thrown(() =>
        compileRedactor(redactionSchema.parse({ enabled: true, detectors: [], replacement })),
      );
      expect(err).toBeInstanceOf(RedactionPatternError);
      expect(err instanceof RedactionPatternError ? err.path : []).toEqual(["redaction", "replacement"]);
    },
  );

  test("a custom pattern that matches the replacement is refused", () => {
    const err = thrown(() => redactor({ patterns: ["fine", "REDACTED"] }));
    expect(err instanceof RedactionPatternError ? err.path : []).toEqual(["redaction", "patterns", 1]);
  });

  test("text that becomes PII once a neighbour is replaced is caught by a later pass", () => {
    const r = redactor({ detectors: ["credit_card"], patterns: ["zz"], replacement: "" });
    expect(r.redact("4111 1111 zz1111 1111")).toEqual({ text: "", fired: ["custom_0", "credit_card"] });
  });
});

describe("pathological inputs (50,000 characters) finish and are handled correctly", () => {
  const N = 50_000;
  test.each([
    ["digits", "7".repeat(N)],
    ["spaced digits", "1 ".repeat(N / 2)],
    ["dashed digits", "1-".repeat(N / 2)],
    ["dotted digits", "1.".repeat(N / 2)],
    ["plus signs", "+1 (".repeat(N / 4)],
    ["letters", "a".repeat(N)],
    ["a@ chains", "a@".repeat(N / 2)],
    ["dotted letters", "a.".repeat(N / 2)],
    ["CJK", "谢".repeat(N)],
  ])("%s are left alone", (_name, text) => {
    expect(all.redact(text)).toEqual({ text, fired: [] });
  });

  test("a@a.a… chains: every address-shaped piece is replaced", () => {
    const out = all.redact("a@a.a".repeat(N / 5));
    expect(out.fired).toEqual(["email"]);
    expect(out.text).toMatch(/^(?:\[REDACTED\]@)+a\.a$/);
  });

  test.each([
    ["cards", "4111111111111111 ", "credit_card"],
    ["SSNs", "123-45-6789 ", "ssn"],
    ["addresses", "10.0.0.1 ", "ipv4"],
    ["phones", "(415) 555-0132 ", "phone"],
    ["emails", "x@y.zz ", "email"],
  ])("many %s are all replaced", (_name, unit, detector) => {
    const count = Math.floor(N / unit.length);
    expect(all.redact(unit.repeat(count))).toEqual({ text: `${R} `.repeat(count), fired: [detector] });
  });

  test("a huge local part glued to CJK text", () => {
    expect(all.redact(`${"谢".repeat(N)}a@b.cc`)).toEqual({
      text: `${"谢".repeat(N)}${R}`,
      fired: ["email"],
    });
  });
});

describe("redactStage", () => {
  const policy = makePolicy({ redaction: { enabled: true } });
  const ctx = (redactor: Redactor): StageContext => ({
    redactor,
    tokenizer: { name: "approx", count: (t: string) => Math.ceil(t.length / 4) },
  });

  test("redacts contents, marks wasRedacted, traces each detector per item, keeps the count", () => {
    const items = [
      makeItem({ id: "a", content: "mail a@b.co or call 415-555-0132" }),
      makeItem({ id: "b", content: "nothing here" }),
      makeItem({ id: "c", content: "ssn 123-45-6789" }),
    ];
    const before = JSON.stringify(items);
    const { items: out, trace } = redactStage(items, policy, ctx(all));
    expect(out.map((i) => [i.id, i.content, i.wasRedacted])).toEqual([
      ["a", `mail ${R} or call ${R}`, true],
      ["b", "nothing here", false],
      ["c", `ssn ${R}`, true],
    ]);
    expect(trace).toEqual({
      stage: "redaction",
      in: 3,
      out: 3,
      changes: [
        { id: "a", reason: "redacted:email" },
        { id: "a", reason: "redacted:phone" },
        { id: "c", reason: "redacted:ssn" },
      ],
    });
    expect(JSON.stringify(items)).toBe(before);
    expect(out[1]).not.toBe(items[1]);
  });

  test("with a disabled redactor nothing changes", () => {
    const items = [makeItem({ id: "a", content: "a@b.co" })];
    const { items: out, trace } = redactStage(items, policy, ctx(NOOP_REDACTOR));
    expect(out).toEqual(items);
    expect(trace).toEqual({ stage: "redaction", in: 1, out: 1, changes: [] });
  });

  test("an item already marked redacted stays marked", () => {
    const items = [{ ...makeItem({ id: "a", content: "clean" }), wasRedacted: true }];
    expect(redactStage(items, policy, ctx(all)).items[0]?.wasRedacted).toBe(true);
  });
});

describe("stronger PII detectors (issue 14)", () => {
  const keeps = (name: DetectorName, text: string) =>
    expect(only(name).redact(text)).toEqual({ text, fired: [] });

  test.each([
    ['"john doe"@example.com', '"john doe"@example.com'],
    ["o'brien@example.ie", "o'brien@example.ie"],
    ["'quoted@example.com'", "quoted@example.com"],
    ["m\u00fcller@m\u00fcnchen.de", "m\u00fcller@m\u00fcnchen.de"],
    ["admin@[192.0.2.10]", "admin@[192.0.2.10]"],
    ["a+b@x.y.example.travel", "a+b@x.y.example.travel"],
  ])("email: %j redacts %j", (text, hidden) => {
    expect(only("email").redact(`write to ${text} today`).text).toBe(
      `write to ${text.replace(hidden, R)} today`,
    );
  });

  test.each([
    "icon@2x.png",
    "logo@3x.webp",
    "image@1.5x.jpg",
    "@types/node",
    "user@localhost",
    "root@raspberrypi",
    "settings@prod.yaml",
    "backup@2024.tar.gz",
    "lodash@4.17.21",
  ])("email keeps %j", (text) => keeps("email", `see ${text} here`));

  test("credit_card: only a whole number, with an issuer prefix that fits its length", () => {
    // A 22-digit tracking number whose 16-digit windows on either side are Luhn-valid cards.
    keeps("credit_card", "tracking 9400 4111 1111 1111 1111 22");
    keeps("credit_card", "tracking 4111 1111 1111 1111 5432 10");
    keeps("credit_card", "tracking 9241111111111111112345");
    keeps("credit_card", "IMEI 490154203237518 and ISBN 9780306406157"); // Luhn-valid IMEI; ISBN
    keeps("credit_card", "order #4716000000000007, EAN 4006381333924");
    keeps("credit_card", "ORD-4111111111111111 and A4111111111111111B and 4111111111111111.50");
    expect(only("credit_card").redact("2 4111 1111 1111 1111").text).toBe("2 4111 1111 1111 1111");
    expect(only("credit_card").redact("Diners 3056 9309 0259 04, JCB 3530111333300000").text).toBe(
      `Diners ${R}, JCB ${R}`,
    );
  });

  test("ibanChecksum: mod 97 = 1 for valid IBANs", () => {
    for (const iban of [
      "DE89370400440532013000",
      "GB82WEST12345698765432",
      "NO9386011117947",
      "MT84MALT011000012345MTLCAST001S",
    ]) {
      expect(ibanChecksum(iban)).toBe(1);
    }
    expect(ibanChecksum("DE89370400440532013001")).not.toBe(1);
    expect(ibanChecksum("DE89-3704")).toBe(-1);
  });

  test("iban: country length, check digits, groups of four, boundaries", () => {
    const iban = only("iban");
    expect(iban.redact("IBAN DE89 3704 0044 0532 0130 00.").text).toBe(`IBAN ${R}.`);
    expect(iban.redact("iban de89370400440532013000 and FR1420041010050500013M02606").text).toBe(
      `iban ${R} and ${R}`,
    );
    for (const kept of [
      "DE89 3704 0044 0532 0130 01", // check digits
      "DE89 3704 0044 0532 0130 0", // too short for DE
      "NL91 ABNA 0417 1643 001", // too long for NL
      "XX89 3704 0044 0532 0130 00", // no such country
      "DE89 37040 04405 32013 000", // not in fours
      "DE8937040044 0532 0130 00", // mixed
      "xDE89370400440532013000",
      "DE89370400440532013000x",
    ]) {
      keeps("iban", kept);
    }
  });

  test.each([
    ["2001:0db8:85a3:0000:0000:8a2e:0370:7334", true],
    ["2001:db8::1", true],
    ["::1", true],
    ["::", true],
    ["fe80::", true],
    ["::ffff:192.0.2.1", true],
    ["64:ff9b::192.0.2.33", true],
    ["1:2:3:4:5:6:7:8", true],
    ["1:2:3:4:5:6:7", false],
    ["1:2:3:4:5:6:7:8:9", false],
    ["1::2::3", false],
    ["2001:db8:::1", false],
    ["12:30:45", false],
    ["::ffff:192.0.2.256", false],
    ["1.2.3.4::1", false],
    ["12345::1", false],
  ])("isIpv6(%j) is %s", (text, valid) => expect(isIpv6(text)).toBe(valid));

  test("ipv6: addresses, not times, code paths, MACs or byte dumps", () => {
    expect(only("ipv6").redact("from [2001:db8::1]:443, ::ffff:192.0.2.1 and fe80::1%eth0.").text).toBe(
      `from [${R}]:443, ${R} and ${R}%eth0.`,
    );
    keeps(
      "ipv6",
      "at 12:30:45, std::io::Result, Foo::Bar, 00:1A:2B:3C:4D:5E, de:ad:be:ef:00:11:22:33, x :: Int",
    );
  });

  test.each([
    "+44 20 7946 0958",
    "+33 1 23 45 67 89",
    "+49 30 123456",
    "+55 11 91234-5678",
    "+81 3-1234-5678",
    "+1 (555) 123-4567",
    "0044 20 7946 0958",
    "(030) 1234567",
    "03-1234-5678",
    "06-12345678",
  ])("phone redacts %j without a phone word", (phone) => {
    expect(only("phone").redact(`see ${phone} ok`).text).toBe(`see ${R} ok`);
  });

  test("phone: numbers without a trunk prefix need a phone word nearby, and no label of something else", () => {
    const phone = only("phone");
    expect(phone.redact("Mi m\u00f3vil es 612 345 678.").text).toBe(`Mi m\u00f3vil es ${R}.`);
    expect(phone.redact("\u624b\u673a13800138000").text).toBe(`\u624b\u673a${R}`);
    expect(phone.redact("call me at 0612345678").text).toBe(`call me at ${R}`);
    for (const kept of [
      "order 612 345 678",
      "see 0612345678",
      "llam\u00e9 por el pedido 612 345 678",
      "call about invoice 2024-000124",
      "population 8 045 311 447",
      "ZIP+4 90210-1234",
      "NL91 ABNA 0417 1643 001",
      "call me in 2025 or 2026",
    ]) {
      keeps("phone", kept);
    }
  });

  test("ipv4: a version or section label before a dotted quad keeps it", () => {
    keeps("ipv4", "version 1.2.3.4, build 10.0.0.1, section 3.2.1.4, firmware 2.1.0.12");
    expect(only("ipv4").redact("dev 10.0.0.1 and v\n10.0.0.2").text).toBe(`dev ${R} and v\n${R}`);
  });

  test("inspectRedaction reports each replaced stretch with its detector, and redacts like compileRedactor", () => {
    const cfg = redactionSchema.parse({ enabled: true, detectors: [...DETECTORS], patterns: ["ACCT-\\d+"] });
    const text = "mail a@b.co, IBAN GB82 WEST 1234 5698 7654 32, ACCT-77, a@b.co";
    const inspected = inspectRedaction(cfg)(text);
    expect(inspected.hits).toEqual([
      { detector: "email", match: "a@b.co" },
      { detector: "email", match: "a@b.co" },
      { detector: "iban", match: "GB82 WEST 1234 5698 7654 32" },
      { detector: "custom_0", match: "ACCT-77" },
    ]);
    expect({ text: inspected.text, fired: inspected.fired }).toEqual(compileRedactor(cfg).redact(text));
    expect(inspectRedaction({ ...cfg, enabled: false })(text)).toEqual({ text, fired: [], hits: [] });
  });
});

describe("redaction sees what the prompt shows (issue 14)", () => {
  test("a card number or e-mail split by zero-width or bidi characters is still redacted", async () => {
    const { runPipeline } = await import("../../src/pipeline");
    const { compilePolicy } = await import("../../src/policy/compile");
    const { policySchema } = await import("../../src/policy/schema");
    const compiled = compilePolicy(
      policySchema.parse({
        name: "split",
        version: 1,
        tokenizer: "approx",
        retrieval: { minScore: 0 },
        redaction: { enabled: true, detectors: ["credit_card", "email"] },
      }),
    );
    const content =
      "Pay with 4111 11\u200b11 1111 1\u202e111 or write to ana\u2060@example.\u200dcom please.";
    const result = runPipeline(
      {
        userId: "u",
        query: "pay",
        backend: "local",
        candidates: [
          {
            id: "m1",
            content,
            score: 0.9,
            timestamp: "2026-01-01T00:00:00Z",
            sessionId: "s",
            type: "fact",
          },
        ],
      },
      compiled,
    );
    const [memory] = result.memories;
    expect(memory?.content).not.toMatch(/4111|ana@|example\.com/);
    expect(result.systemPrompt).not.toMatch(/4111|ana@|example\.com/);
    expect(memory?.provenance.wasRedacted).toBe(true);
  });
});

describe("phone context stays on the number's line (each memory is one line of the prompt)", () => {
  const phone = compileRedactor({
    enabled: true,
    detectors: ["phone"],
    patterns: [],
    replacement: "[REDACTED]",
  });
  test("a phone word on another line, or before a ⏎, does not make a bare number a phone number", () => {
    expect(phone.redact('"Call me later!..."\n- 612 345 678 (confidence: 1.00)').fired).toEqual([]);
    expect(phone.redact("call me later ⏎ 612 345 678").fired).toEqual([]);
  });
  test("on the same line it still does", () => {
    expect(phone.redact("call me on 612 345 678").fired).toEqual(["phone"]);
  });
});
