/**
 * JSON from upstreams. An upstream answer is parsed only when its nesting is at most MAX_UPSTREAM_JSON_DEPTH
 * levels: a hostile or broken upstream answering `[[[[…]]]]` 6,000 levels deep (12 KB) would otherwise be parsed
 * fine and then overflow the stack of whatever walks it recursively later (`JSON.stringify` when a door renders,
 * the redaction of an item's side fields, a cache write), long after the backend call succeeded. Too deep is
 * malformed, as text that is not JSON: the caller's declared `*_UNAVAILABLE` fallback.
 */

/** A JSON object (not an array, not null). */
export function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** Far above any real answer (Zep's and OpenMemory's go 5–8 levels deep), far below a stack overflow (~2,000). */
export const MAX_UPSTREAM_JSON_DEPTH = 64;

export type ParsedJson = { ok: true; value: unknown } | { ok: false; reason: "not JSON" | "nested too deep" };

const OPEN_OBJECT = 0x7b; // {
const OPEN_ARRAY = 0x5b; // [
const CLOSE_OBJECT = 0x7d; // }
const CLOSE_ARRAY = 0x5d; // ]
const QUOTE = 0x22; // "
const BACKSLASH = 0x5c; // \

/**
 * Whether a JSON text nests objects and arrays deeper than `limit` (brackets inside strings do not count). One pass
 * that jumps from quote to quote through strings (`indexOf`, most of an answer's bytes), no allocation; the text
 * need not be valid JSON (an unterminated string ends the scan: `JSON.parse` refuses it).
 */
export function exceedsDepth(text: string, limit: number): boolean {
  let depth = 0;
  const n = text.length;
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      let end = i;
      for (;;) {
        end = text.indexOf('"', end + 1);
        if (end < 0) return false;
        let backslashes = 0;
        while (text.charCodeAt(end - 1 - backslashes) === BACKSLASH) backslashes++;
        if (backslashes % 2 === 0) break;
      }
      i = end;
    } else if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
      if (++depth > limit) return true;
    } else if (c === CLOSE_OBJECT || c === CLOSE_ARRAY) depth--;
  }
  return false;
}

/** An upstream's JSON text, parsed when it is JSON nested at most `maxDepth` levels (see the top of this file). */
export function parseUpstreamJson(text: string, maxDepth = MAX_UPSTREAM_JSON_DEPTH): ParsedJson {
  if (exceedsDepth(text, maxDepth)) return { ok: false, reason: "nested too deep" };
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch {
    return { ok: false, reason: "not JSON" };
  }
}
