import { BUILTIN_DETECTORS } from "../../src/pipeline/redaction/detectors";
import { compileRedactor, NOOP_REDACTOR, RedactionPatternError } from "../../src/pipeline/redaction/index";
import { luhn } from "../../src/pipeline/redaction/luhn";
import { redactStage } from "../../src/pipeline/stages/redact";
import type { Redactor, StageContext } from "../../src/pipeline/types";
import { DETECTORS, type DetectorName, redactionSchema } from "../../src/policy/schema";
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
    expect(BUILTIN_DETECTORS.map((d) => d.name)).toEqual(["email", "credit_card", "ssn", "ipv4", "phone"]);
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
    ["a quantity first: 2 4111 1111 1111 1111", `a quantity first: 2 ${R}`],
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
