/**
 * Policy effects on Zep text that is not a search result of its own: the `context` string of a thread (and of
 * a graph search answer, when Zep sends one), and the free-text side fields of a kept search result.
 */
import { fitToTokens } from "../../pipeline/stages/budget";
import type { Redactor } from "../../pipeline/types";
import type { CompiledPolicy } from "../../policy/compile";

/**
 * Redaction (when the policy enables it), then the strict token budget (`retrieval.maxTokens`, the policy's
 * tokenizer, "..." counted) on one context string. No clipping: a context block is not one memory.
 * A string whose first word does not fit becomes "".
 */
export function shapeContext(text: string, compiled: CompiledPolicy): { text: string; redacted: boolean } {
  const { redactor } = compiled.ctx;
  const redacted = redactor.enabled ? redactor.redact(text) : { text, fired: [] };
  const { maxTokens } = compiled.policy.retrieval;
  const { tokenizer } = compiled.ctx;
  const kept =
    tokenizer.count(redacted.text) <= maxTokens
      ? redacted.text
      : fitToTokens(redacted.text, maxTokens, tokenizer);
  return { text: kept ?? "", redacted: redacted.fired.length > 0 };
}

/** Keys whose values are identifiers, timestamps or enums, never free text: left as they are. */
const NOT_TEXT = /(^|_)(uuid|uuids|at|id|ids|type|labels|episodes|role|score|relevance|rank)$/;

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

/** The free-text side fields of a Zep result item that redaction also covers. */
export const SIDE_TEXT_FIELDS = ["name", "source_node_name", "target_node_name", "attributes", "metadata"];

/** A kept item with its side fields redacted (the main text field is set by the caller). */
export function redactSideFields(item: Record<string, unknown>, redactor: Redactor): Record<string, unknown> {
  if (!redactor.enabled) return { ...item };
  const out: Record<string, unknown> = { ...item };
  for (const field of SIDE_TEXT_FIELDS) if (field in out) out[field] = redactDeep(out[field], redactor);
  return out;
}
