import RE2 from "re2";
import type { CustomPattern, Policy } from "../../policy/schema";
import type { RedactionResult, Redactor } from "../types";
import { BUILTIN_DETECTORS, type Span, type Validator } from "./detectors";
import { requiredLiteral } from "./literal";

/**
 * Compiles a policy's `redaction` block into a `Redactor` (docs/policy.md#redaction).
 *
 * Built-in detectors run first in their fixed order (see `BUILTIN_DETECTORS`), then custom patterns in file
 * order. Custom patterns are RE2 regular expressions and the built-ins are linear by construction (see
 * detectors.ts), so a pass is linear in the text whatever the input.
 * Each matcher runs on the output of the previous one; passes repeat (at most `MAX_PASSES`) while something
 * fired, so text that only becomes PII once a neighbour is replaced is caught too and `redact` is idempotent.
 */

export type RedactionConfig = Policy["redaction"];

/**
 * A pattern RE2 cannot compile, or a replacement that would itself be redacted. Rejects the policy. The
 * message does not repeat the field path (callers print `path` before it, and request overrides re-root it).
 */
export class RedactionPatternError extends Error {
  /** Field path in the policy file, e.g. `["redaction", "patterns", 2]`. */
  readonly path: ReadonlyArray<string | number>;

  constructor(message: string, path: ReadonlyArray<string | number>, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "RedactionPatternError";
    this.path = path;
  }
}

interface Matcher {
  readonly name: string;
  /** A global JS RegExp or RE2 (which extends RegExp); both are used through `String.prototype.replace`. */
  readonly re: RegExp;
  readonly requires?: string | ((text: string) => boolean);
  readonly retryInside?: boolean;
  readonly validate?: Validator;
}

const MAX_PASSES = 3;

/** A redactor that changes nothing: for disabled redaction and for tests. */
export const NOOP_REDACTOR: Redactor = Object.freeze({
  enabled: false,
  redact: (text: string): RedactionResult => ({ text, fired: [] }),
});

const BUILTIN_MATCHERS: readonly Matcher[] = BUILTIN_DETECTORS.map((d) => ({
  name: d.name,
  re: d.engine === "re2" ? new RE2(d.source, "gu") : new RegExp(d.source, "g"),
  requires: d.requires,
  retryInside: d.retryInside,
  validate: d.validate,
}));

function splice(match: string, spans: readonly Span[], replacement: string): string {
  let out = "";
  let prev = 0;
  for (const [start, end] of spans) {
    out += match.slice(prev, start) + replacement;
    prev = end;
  }
  return out + match.slice(prev);
}

/** Told each stretch a matcher replaces (the evaluation's `inspectRedaction` only). */
type OnHit = (name: string, replaced: string) => void;

/**
 * Runs one matcher over `text`; `undefined` when nothing was replaced. An `exec` loop rather than
 * `String.prototype.replace` with a function: node-re2's replace recomputes each match's UTF-16 offset from
 * the start of the text, which is quadratic when a long text has many matches; its `exec` advances from
 * `lastIndex` over a cached UTF-8 copy of the text, which is linear.
 */
function apply(text: string, matcher: Matcher, replacement: string, onHit?: OnHit): string | undefined {
  const { re, requires, retryInside, validate } = matcher;
  if (requires !== undefined && !(typeof requires === "string" ? text.includes(requires) : requires(text))) {
    return undefined;
  }
  let out = "";
  let copied = 0;
  let hit = false;
  re.lastIndex = 0;
  for (let m = re.exec(text); m !== null; m = re.exec(text)) {
    const match = m[0];
    const offset = m.index;
    if (match.length === 0) {
      re.lastIndex = nextCodePoint(text, offset);
      continue;
    }
    const verdict = validate === undefined ? true : validate(match, offset, text);
    if (verdict === false || (verdict !== true && verdict.length === 0)) {
      if (retryInside === true) re.lastIndex = nextCodePoint(text, offset);
      continue;
    }
    hit = true;
    if (onHit !== undefined) {
      if (verdict === true) onHit(matcher.name, match);
      else for (const [start, end] of verdict) onHit(matcher.name, match.slice(start, end));
    }
    out += text.slice(copied, offset);
    out += verdict === true ? replacement : splice(match, verdict, replacement);
    copied = offset + match.length;
  }
  re.lastIndex = 0;
  return hit ? out + text.slice(copied) : undefined;
}

/** The index after the code point at `index` (never the middle of a surrogate pair). */
function nextCodePoint(text: string, index: number): number {
  return index + ((text.codePointAt(index) ?? 0) > 0xffff ? 2 : 1);
}

function compileCustom(pattern: CustomPattern, index: number): Matcher {
  const { name, source, flags } =
    typeof pattern === "string"
      ? { name: `custom_${index}`, source: pattern, flags: "" }
      : { name: pattern.name, source: pattern.pattern, flags: pattern.flags ?? "" };
  const allFlags = [...new Set(`${flags}gu`)].join("");
  try {
    // Texts without the pattern's required literal (`EMP-` in `\bEMP-\d{6}\b`) are skipped: RE2 pays a
    // fixed cost per text to convert it to UTF-8, more than the literal search.
    return { name, re: new RE2(source, allFlags), requires: requiredLiteral(source, allFlags) };
  } catch (err) {
    const reason = err instanceof Error ? err.message : String(err);
    throw new RedactionPatternError(
      `custom pattern ${index} ${JSON.stringify(source)} is not a valid RE2 pattern: ${reason}` +
        " (RE2 has no backreferences or lookaround)",
      ["redaction", "patterns", index],
      { cause: err },
    );
  }
}

function redactWith(
  matchers: readonly Matcher[],
  replacement: string,
  text: string,
  onHit?: OnHit,
): RedactionResult {
  const fired: string[] = [];
  let current = text;
  for (let pass = 0; pass < MAX_PASSES; pass++) {
    let changed = false;
    for (const matcher of matchers) {
      const out = apply(current, matcher, replacement, onHit);
      if (out === undefined) continue;
      changed = true;
      current = out;
      if (!fired.includes(matcher.name)) fired.push(matcher.name);
    }
    if (!changed) break;
  }
  return { text: current, fired };
}

function makeRedactor(matchers: readonly Matcher[], replacement: string): Redactor {
  return Object.freeze({
    enabled: true,
    redact: (text: string): RedactionResult => redactWith(matchers, replacement, text),
  });
}

/** The enabled built-ins in their fixed order, then the custom patterns in file order. */
function enabledMatchers(cfg: RedactionConfig, custom: readonly Matcher[]): Matcher[] {
  const enabled = new Set<string>(cfg.detectors);
  return [...BUILTIN_MATCHERS.filter((m) => enabled.has(m.name)), ...custom];
}

/** One stretch a detector replaced, as it stood when it was replaced. */
export interface RedactionHit {
  detector: string;
  match: string;
}

/**
 * The same redaction as `compileRedactor(cfg)`, which also reports every stretch it replaced: for the
 * redaction evaluation (`memgate eval-redaction`, src/eval/redaction.ts) only. Never on the request path: a
 * hit holds the very text redaction hides.
 *
 * @throws RedactionPatternError as `compileRedactor`
 */
export function inspectRedaction(
  cfg: RedactionConfig,
): (text: string) => RedactionResult & { hits: RedactionHit[] } {
  compileRedactor(cfg);
  const matchers = cfg.enabled ? enabledMatchers(cfg, cfg.patterns.map(compileCustom)) : [];
  return (text) => {
    const hits: RedactionHit[] = [];
    const result = redactWith(matchers, cfg.replacement, text, (detector, match) => {
      hits.push({ detector, match });
    });
    return { ...result, hits };
  };
}

/**
 * Builds the redactor for a policy. Custom patterns and the replacement are checked even when redaction is
 * disabled, so a broken policy is rejected before anyone turns it on.
 *
 * @throws RedactionPatternError when a custom pattern does not compile under RE2, or matches the replacement
 *   (path `["redaction", "patterns", i]`), or when the replacement itself looks like PII to a built-in
 *   detector (path `["redaction", "replacement"]`): a replacement that would be redacted again is refused.
 */
export function compileRedactor(cfg: RedactionConfig): Redactor {
  const custom = cfg.patterns.map(compileCustom);
  const { replacement } = cfg;
  for (const matcher of BUILTIN_MATCHERS) {
    if (apply(replacement, matcher, replacement) !== undefined) {
      throw new RedactionPatternError(
        `${JSON.stringify(replacement)} looks like PII to the ${matcher.name} detector; ` +
          "choose a replacement that does not look like what it hides",
        ["redaction", "replacement"],
      );
    }
  }
  custom.forEach((matcher, index) => {
    if (apply(replacement, matcher, replacement) !== undefined) {
      throw new RedactionPatternError(
        `custom pattern ${index} matches the replacement ${JSON.stringify(replacement)}, ` +
          "so redacted text would be redacted again",
        ["redaction", "patterns", index],
      );
    }
  });
  if (!cfg.enabled) return NOOP_REDACTOR;
  return makeRedactor(enabledMatchers(cfg, custom), replacement);
}
