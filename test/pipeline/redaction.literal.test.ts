/**
 * `requiredLiteral`: the literal a custom RE2 pattern's every match contains, used to skip texts without it.
 * A wrong literal would skip text that must be redacted, so beyond the examples a property checks, on
 * generated patterns and texts, that every RE2 match contains the literal.
 */
import fc from "fast-check";
import RE2 from "re2";
import { compileRedactor } from "../../src/pipeline/redaction/index";
import { requiredLiteral } from "../../src/pipeline/redaction/literal";
import { redactionSchema } from "../../src/policy/schema";

describe("requiredLiteral", () => {
  test.each([
    ["\\bEMP-\\d{6}\\b", "EMP-"],
    ["ACCT-[0-9]+", "ACCT-"],
    ["secret", "secret"],
    ["foo\\.bar", "foo.bar"],
    ["foo\\.?bar", "foo"],
    ["(abc|def)ghij", "ghij"],
    ["(?:abc|def)ghij", "ghij"],
    ["a{10,20}xyz", "xyz"],
    ["ab\u{1F600}?c", "ab"],
    ["x\u{1F600}yz", "x\u{1F600}yz"],
  ])("%j requires %j", (source, literal) => expect(requiredLiteral(source)).toBe(literal));

  test.each([
    ["abc|def", ""], // alternatives at the top level
    ["secret", "i"], // case-insensitive
    ["(?i)secret", ""],
    ["project (?P<code>[a-z]+)", ""],
    ["\\x41bcd", ""],
    ["\\p{Han}+", ""],
    ["\\Qa.b\\E", ""],
    ["\\101bc", ""],
    ["[]a]bc", ""],
    ["[a\\]b]cd", ""],
    ["x*", ""],
    ["\\d{3}", ""],
    ["a\u{1F600}+b", ""], // one character on each side
    ["(ab", ""],
    ["ab)", ""],
    ["ab{x}", ""],
  ])("%j (flags %j) has none", (source, flags) => expect(requiredLiteral(source, flags)).toBeUndefined());

  const piece = fc.oneof(
    { weight: 3, arbitrary: fc.constantFrom("a", "b", "ab", "ba", "-", "x", "\u{1F600}", "\\.", "\\-", ".") },
    { weight: 1, arbitrary: fc.constantFrom("\\d", "\\w", "\\s", "\\b", "[ab]", "[^a]", "[a-c.]", "^", "$") },
  );
  const quantified = fc
    .tuple(piece, fc.constantFrom("", "", "", "", "", "", "?", "*", "+", "{2}", "{0,2}", "{1,}"))
    .map(([p, q]) => (p === "\\b" || p === "^" || p === "$" ? p : p + q));
  const tree = fc.letrec<{ seq: string; group: string }>((tie) => ({
    seq: fc
      .array(fc.oneof({ weight: 4, arbitrary: quantified }, { weight: 1, arbitrary: tie("group") }), {
        minLength: 1,
        maxLength: 6,
      })
      .map((parts) => parts.join("")),
    group: fc
      .tuple(
        fc.constantFrom("(", "(?:"),
        fc.array(tie("seq"), { minLength: 1, maxLength: 3 }),
        fc.constantFrom(")", ")?", ")*", ")+", "){2}"),
      )
      .map(([open, alts, close]) => `${open}${alts.join("|")}${close}`),
  }));
  /** Sequences, sometimes alternatives at the top level. */
  const pattern = fc
    .array(tree.seq, { minLength: 1, maxLength: 2 })
    .map((alternatives) => alternatives.join("|"));
  /** A pattern, and texts made of its own characters (so that it matches often), digits and spaces. */
  const patternAndTexts = pattern.chain((source) => {
    const chars = [...new Set([...source].filter((c) => !"\\[](){}|?*+^$.".includes(c)))];
    const piece = fc.constantFrom(...chars, "1", "2", " ", "\n", ".", "-", "ab");
    const text = fc.array(piece, { maxLength: 40 }).map((parts) => parts.join(""));
    return fc.tuple(fc.constant(source), fc.array(text, { minLength: 4, maxLength: 10 }));
  });

  test("every RE2 match of a generated pattern contains the literal", () => {
    let checked = 0;
    fc.assert(
      fc.property(patternAndTexts, fc.constantFrom("", "u", "s", "m"), ([source, texts], flags) => {
        const literal = requiredLiteral(source, flags);
        if (literal === undefined) return;
        const re = new RE2(source, `${flags}gu`);
        for (const t of texts) {
          for (const m of t.matchAll(re)) {
            if (m[0] === "") continue;
            checked++;
            expect({ source, match: m[0], contains: m[0].includes(literal) }).toEqual({
              source,
              match: m[0],
              contains: true,
            });
          }
        }
      }),
      { numRuns: 6000 },
    );
    expect(checked).toBeGreaterThan(150);
  });

  test("a custom pattern with a literal redacts exactly what it did without one", () => {
    const r = compileRedactor(
      redactionSchema.parse({ enabled: true, detectors: [], patterns: ["\\bEMP-\\d{6}\\b", "ACCT-[0-9]+"] }),
    );
    expect(r.redact("ids EMP-123456, EMP-12345 and ACCT-9")).toEqual({
      text: "ids [REDACTED], EMP-12345 and [REDACTED]",
      fired: ["custom_0", "custom_1"],
    });
    expect(r.redact("no ids here")).toEqual({ text: "no ids here", fired: [] });
  });
});
