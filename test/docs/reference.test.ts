/**
 * The reference in docs/ names what the code accepts (issue 17, point 4): every environment variable the boot
 * validates, every policy field, detector and override, every fallback and error code. A name added to the code
 * without a line in the docs fails here; what the docs say about it is for a reviewer to read.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { envSchema } from "../../src/config/env";
import { ERROR_CODES } from "../../src/http/errors";
import {
  DETECTORS,
  FALLBACK_CODES,
  INJECTION_DETECTORS,
  overridesSchema,
  policySchema,
} from "../../src/policy/schema";

const doc = (name: string) => readFileSync(join(__dirname, "..", "..", "docs", name), "utf8");
/** Names written as code: `NAME`, or inside a longer code span such as `x-memgate-policy: <name>`. */
const codeSpans = (text: string) => new Set([...text.matchAll(/`([^`\n]+)`/g)].map((m) => m[1] ?? ""));
const missing = (names: readonly string[], text: string) => {
  const spans = codeSpans(text);
  return names.filter((n) => !spans.has(n));
};

interface ZodLike {
  _zod: { def: { type: string; innerType?: ZodLike; in?: ZodLike; shape?: Record<string, ZodLike> } };
}
/** The object schema under defaults, optionals and transforms, or undefined for a leaf. */
function objectShape(schema: ZodLike): Record<string, ZodLike> | undefined {
  const { def } = schema._zod;
  if (def.type === "object") return def.shape;
  const inner = def.innerType ?? def.in;
  return inner === undefined ? undefined : objectShape(inner);
}

describe("docs/ names what the code accepts", () => {
  test("every environment variable is in docs/configuration.md", () => {
    const names = Object.keys(envSchema.shape);
    expect(names.length).toBeGreaterThan(20);
    expect(missing(names, doc("configuration.md"))).toEqual([]);
  });

  test("every policy field (two levels deep) is in docs/policy.md", () => {
    const text = doc("policy.md");
    const top = objectShape(policySchema as unknown as ZodLike) ?? {};
    const paths: string[] = [];
    for (const [key, child] of Object.entries(top)) {
      const shape = key === "fallbacks" ? undefined : objectShape(child); // fallback codes: next test
      if (shape === undefined) paths.push(key);
      else for (const sub of Object.keys(shape)) paths.push(`${key}.${sub}`);
    }
    expect(paths).toContain("retrieval.topK");
    // Top-level scalars (`name`, `version`, …) are documented by the annotated YAML, as `key:` at a line's start.
    const undocumented = paths.filter(
      (p) => !codeSpans(text).has(p) && !(p.includes(".") ? false : new RegExp(`^${p}:`, "m").test(text)),
    );
    expect(undocumented).toEqual([]);
  });

  test("every request override is in docs/policy.md", () => {
    const names = Object.keys(overridesSchema.shape);
    const text = doc("policy.md");
    const spans = [...codeSpans(text)];
    expect(names.filter((n) => !spans.some((s) => s === n || s.startsWith(`${n}:`)))).toEqual([]);
  });

  test("every redaction and injection detector is in docs/policy.md", () => {
    expect(missing([...DETECTORS, ...INJECTION_DETECTORS], doc("policy.md"))).toEqual([]);
  });

  test("every fallback code and error code is in docs/api.md", () => {
    const text = doc("api.md");
    const fallbackCodes = FALLBACK_CODES.filter((c) => !new RegExp(`\`${c}\``).test(text));
    expect(fallbackCodes).toEqual([]);
    expect(missing([...ERROR_CODES], text)).toEqual([]);
  });
});
