/**
 * Policy effects on text that is not a memory of its own: a context block an upstream answers beside its results
 * (Zep's `context` of a thread, of a graph search, of `thread.addMessages` with `return_context`), and the
 * free-text fields of a drop-in door's original result items.
 */
import { boundText, workBoundChars } from "../pipeline/bound";
import { fitToTokens } from "../pipeline/stages/budget";
import type { Redactor, Screener } from "../pipeline/types";
import type { CompiledPolicy } from "../policy/compile";

/**
 * The work bound (src/pipeline/bound.ts), redaction (when the policy enables it), the injection screen (when
 * enabled: matches neutralized, a block a `drop` detector fires on becomes ""), then the strict token budget (`retrieval.maxTokens`, the policy's
 * tokenizer, "..." counted) on one context block. No clipping: a context block is not one memory. A block whose
 * first word does not fit becomes "".
 */
export function shapeText(text: string, compiled: CompiledPolicy): string {
  const { redactor, tokenizer, screener } = compiled.ctx;
  const { maxTokens } = compiled.policy.retrieval;
  // Cut to what the budget could ever use before anything walks it, as every memory is (src/pipeline/bound.ts).
  const bounded = boundText(text, workBoundChars(maxTokens));
  const redacted = screenText(redactor.enabled ? redactor.redact(bounded).text : bounded, screener);
  if (tokenizer.count(redacted) <= maxTokens) return redacted;
  return fitToTokens(redacted, maxTokens, tokenizer) ?? "";
}

/** Keys whose values are identifiers, timestamps or enums, never free text: left as they are. */
const NOT_TEXT =
  /(^|_)(uuid|uuids|at|id|ids|type|labels|episodes|role|score|relevance|rank|sector|sectors|path)$/;

/** Every string leaf of a JSON value run through the redactor (object keys kept; identifier-like keys skipped). */
export function redactDeep(value: unknown, redactor: Redactor): unknown {
  if (!redactor.enabled) return value;
  if (typeof value === "string") return redactor.redact(value).text;
  if (Array.isArray(value)) return value.map((v) => redactDeep(v, redactor));
  if (typeof value === "object" && value !== null) {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = NOT_TEXT.test(k) ? v : redactDeep(v, redactor);
    return out;
  }
  return value;
}

/** One free text through the injection screen: matches neutralized; "" when a `drop` detector fires. */
export function screenText(text: string, screener: Screener | undefined): string {
  if (screener === undefined || !screener.enabled) return text;
  const screened = screener.screen(text);
  return screened.drop ? "" : screened.text;
}

/**
 * Every string leaf of a JSON value (identifiers and enums too: an upstream writes them all) through the
 * injection screen: matches neutralized, a leaf a `drop` detector fires on emptied and `dropped` set, so that a
 * door leaves out the whole item.
 */
export function screenDeep(
  value: unknown,
  screener: Screener | undefined,
): { value: unknown; dropped: boolean } {
  if (screener === undefined || !screener.enabled) return { value, dropped: false };
  let dropped = false;
  const walk = (v: unknown): unknown => {
    if (typeof v === "string") {
      const screened = screener.screen(v);
      if (screened.drop) {
        dropped = true;
        return "";
      }
      return screened.text;
    }
    if (Array.isArray(v)) return v.map(walk);
    if (typeof v === "object" && v !== null) {
      const out: Record<string, unknown> = {};
      for (const [k, item] of Object.entries(v)) out[k] = walk(item);
      return out;
    }
    return v;
  };
  return { value: walk(value), dropped };
}
