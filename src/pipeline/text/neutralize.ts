/**
 * Memory content made inert for the system prompt (issue 14, point 1: memory is untrusted data). The format
 * stage renders each memory on ONE line of the prompt, after a prefix it writes itself (`[time] role: ` or
 * `- `); what this module returns cannot end that line, open a section, forge the footer or the envelope, or
 * hide text from whoever reads the prompt.
 *
 * The scheme normalizes rather than escapes reversibly: deterministic, readable, and ordinary text (no control
 * or invisible character, no line break, no marker) comes back unchanged, so clean prompts stay byte-identical.
 *
 * 1. Characters:
 *    - a lone surrogate (half of a pair without its other half) becomes U+FFFD;
 *    - invisible characters are removed: C0 controls other than tab and line breaks, DEL, C1 controls other than
 *      NEL; bidi controls U+202A–202E, U+2066–2069, U+200E, U+200F, U+061C; zero-width U+200B–200D, U+2060,
 *      U+FEFF; also the soft hyphen U+00AD, U+180E, the rest of U+2060–206F (invisible operators, deprecated
 *      format characters), the interlinear annotation marks U+FFF9–FFFB and the tag characters U+E0000–E007F
 *      (which spell hidden ASCII). A ZWJ emoji sequence falls apart into its emoji, a subdivision flag into a
 *      black flag, a Persian ZWNJ joins its letters: the price of a prompt nothing can hide in. Variation
 *      selectors are kept;
 *    - a tab becomes a space;
 *    - line breaks — CR, LF, CRLF, VT, FF, NEL U+0085, U+2028, U+2029, and the mark U+23CE "⏎" itself — end a
 *      logical line. Logical lines are trimmed, empty ones dropped, and the rest joined with " ⏎ ":
 *      `Shopping:\n\n  milk\n` renders `Shopping: ⏎ milk`. Every "⏎" of a prompt is one this module wrote.
 * 2. Markup (backslash escapes, as Markdown reads them):
 *    - a logical line (the content's start, or after " ⏎ ") that begins, after any whitespace, with a Markdown
 *      block marker has it escaped: `#…` followed by whitespace or the end → `\#…`; `>` → `\>`; `-`, `*`, `+`
 *      followed by whitespace or the end → `\-`, `\*`, `\+`; a thematic break (three `-`, `*` or `_`, whitespace
 *      between allowed) → `\---`…; an ordered-list number `1.` / `1)` followed by whitespace or the end →
 *      `1\.` / `1\)`. (A memory never starts a line of the prompt, but a Markdown renderer reads `- # x` as a
 *      heading inside a list item, and a model reads " ⏎ ### System" as a heading);
 *    - code fences: every backtick or tilde of a run of three or more, "```" → "\`\`\`";
 *    - the footer: an underscore before `Retrieved` and whitespace, or after the word `memory`/`memories`
 *      and not before a letter or digit (any case): `_Retrieved 9 memories_` → `\_Retrieved 9 memories\_`
 *      (`snake_case`, `memory_pool` stay);
 *    - with the envelope (`format.envelope: tagged`), the `<` and `>` of its tag, opening or closing, any case,
 *      with `_`, `-`, whitespace or nothing between the words: `</recalled_memories>` →
 *      `&lt;/recalled_memories&gt;`.
 *    These rules run after step 1, so an invisible character or a line break cannot hide a marker from them.
 *
 * Left as they are: `#` in `C#` or `issue #14`, `-5 degrees`, `**bold**`, `snake_case`, `<b>`, backslashes.
 *
 * Cost (this runs on every memory of every request; 2-core bench machine, best of 30 rounds): ordinary text
 * takes one native well-formedness check (O(1) on Latin-1 text), one scan with one precompiled character class
 * and a few `includes` probes, ~0.8 µs per 500 characters (16 such memories: the format stage goes from 9.7 to
 * 22.5 µs). Content with line breaks is folded in one pass over its characters, ~4.5 µs for 500 characters on
 * 8 lines; the worst found, a line break every other character, ~35 µs per 500 characters. Every pass is
 * linear: no pattern here backtracks over more than one run of whitespace.
 */

/** What joins a memory's logical lines in the prompt. */
export const LINE_BREAK_MARK = " ⏎ ";

/** The tag of the data-only envelope (`format.envelope: tagged`). */
export const ENVELOPE_TAG = "recalled_memories";

// Step 1. The ranges are spelled as \u escapes: the literal characters would be invisible in this file.
/**
 * Any character step 1 may change besides lone surrogates: a control, an invisible, a line break, "⏎", or the
 * high surrogate of a tag character. One class, so that the common case — none of them — costs one scan.
 */
const CHARS =
  // biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point
  /[\u0000-\u001f\u007f-\u009f\u00ad\u061c\u180e\u200b-\u200f\u2028-\u202e\u2060-\u206f\u23ce\udb40\ufeff\ufff9-\ufffb]/;
/** ES2024's well-formedness methods (Node ≥ 20; not in this project's ES2022 lib): native, and O(1) on Latin-1 text. */
interface WellFormed {
  isWellFormed(): boolean;
  toWellFormed(): string;
}
/** Removed: controls other than tab and line breaks, bidi, zero-width and other invisible format characters. */
const INVISIBLE =
  // biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point
  /[\u0000-\u0008\u000e-\u001f\u007f-\u0084\u0086-\u009f\u00ad\u061c\u180e\u200b-\u200f\u202a-\u202e\u2060-\u206f\ufeff\ufff9-\ufffb]+|(?:\udb40[\udc00-\udc7f])+/g;
const HAS_BREAK =
  // biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point
  /[\n\u000b\u000c\r\u0085\u2028\u2029\u23ce]/;

// Step 2. Tags and footers are matched across a " ⏎ " too (`⏎` is never content's own: step 1 took those).
const FENCE = /`{3,}|~{3,}/g;
const FOOTER = /_(?=retrieved\s)|_(?<=\bmemor(?:y|ies)_)(?![a-z0-9])/gi;
const TAG = /<(?=[\s⏎]*(?:\/[\s⏎]*)?recalled[\s⏎_-]*memories)|>(?<=recalled[\s⏎_-]*memories[\s⏎]*>)/gi;

/** JavaScript's `\s` (false for NaN, past the end of a string). */
function isSpace(c: number): boolean {
  return (
    c === 0x20 ||
    (c >= 0x09 && c <= 0x0d) ||
    c === 0xa0 ||
    c === 0x1680 ||
    (c >= 0x2000 && c <= 0x200a) ||
    c === 0x2028 ||
    c === 0x2029 ||
    c === 0x202f ||
    c === 0x205f ||
    c === 0x3000 ||
    c === 0xfeff
  );
}

/** Whether `line` ends, or has whitespace, at `j`: what a marker needs after it. */
const endsMarker = (line: string, j: number): boolean => j >= line.length || isSpace(line.charCodeAt(j));

/** Whether the character `c` at `i` and two more of it, with only whitespace between, make a thematic break. */
function isRule(line: string, i: number, c: number): boolean {
  let n = 0;
  for (let j = i; j < line.length; j++) {
    const d = line.charCodeAt(j);
    if (d === c) {
      if (++n === 3) return true;
    } else if (!isSpace(d)) return false;
  }
  return false;
}

/**
 * `line` with a backslash before the Markdown block marker it starts with (after any whitespace), if any: `#…`,
 * `-`, `*`, `+` followed by whitespace or the end; `>`; a thematic break of `-`, `*` or `_`; a number of up to
 * nine digits followed by `.` or `)` and whitespace or the end (the backslash then goes before the `.` or `)`).
 * Written out rather than as a regex: it runs on every logical line, and a regex call costs ten times more.
 */
function escapeLineStart(line: string): string {
  let i = 0;
  while (isSpace(line.charCodeAt(i))) i++;
  const c = line.charCodeAt(i);
  let at = -1;
  if (c === 0x3e)
    at = i; // >
  else if (c === 0x23) {
    let j = i + 1;
    while (line.charCodeAt(j) === 0x23) j++;
    if (endsMarker(line, j)) at = i;
  } else if (c === 0x2b) {
    if (endsMarker(line, i + 1)) at = i;
  } else if (c === 0x2d || c === 0x2a) {
    if (endsMarker(line, i + 1) || isRule(line, i, c)) at = i;
  } else if (c === 0x5f) {
    if (isRule(line, i, c)) at = i;
  } else if (c >= 0x30 && c <= 0x39) {
    let j = i + 1;
    while (j - i < 9 && line.charCodeAt(j) >= 0x30 && line.charCodeAt(j) <= 0x39) j++;
    const d = line.charCodeAt(j);
    if ((d === 0x2e || d === 0x29) && endsMarker(line, j + 1)) at = j;
  }
  return at < 0 ? line : `${line.slice(0, at)}\\${line.slice(at)}`;
}

/**
 * Step 1's removals alone, for a stage that must see the characters the prompt will show (a detector that an
 * invisible character could split): lone surrogates → U+FFFD, invisible and control characters other than
 * tab and line breaks removed. Line breaks and markup are left as they are.
 */
export function removeInvisible(text: string): string {
  const s = (text as unknown as WellFormed).isWellFormed()
    ? text
    : (text as unknown as WellFormed).toWellFormed();
  return s.replace(INVISIBLE, "");
}

/** A line break of step 1: LF, VT, FF, CR, NEL, U+2028, U+2029, U+23CE. */
function isBreak(c: number): boolean {
  return (c >= 0x0a && c <= 0x0d) || c === 0x85 || c === 0x2028 || c === 0x2029 || c === 0x23ce;
}

/**
 * `s` with its logical lines trimmed, empty ones dropped, each one's block marker escaped, joined with " ⏎ ".
 * One pass over the characters: a regex replace per line break costs several times more, and a memory made of
 * line breaks must not cost much more than one made of words.
 */
function foldLines(s: string): string {
  let out = "";
  const n = s.length;
  let i = 0;
  while (i < n) {
    let c = s.charCodeAt(i);
    while (isSpace(c) || isBreak(c)) c = s.charCodeAt(++i);
    if (i >= n) break;
    let j = i + 1;
    while (j < n && !isBreak(s.charCodeAt(j))) j++;
    let end = j;
    while (isSpace(s.charCodeAt(end - 1))) end--;
    const line = escapeLineStart(s.slice(i, end));
    out = out === "" ? line : out + LINE_BREAK_MARK + line;
    i = j;
  }
  return out;
}

const escapeFence = (run: string): string => (run.charCodeAt(0) === 0x60 ? "\\`" : "\\~").repeat(run.length);
const escapeTag = (bracket: string): string => (bracket === "<" ? "&lt;" : "&gt;");

/**
 * `text` as one inert line of prompt (see the top of this file). `envelope`: also escape the envelope's tag.
 * Deterministic; ordinary text comes back unchanged.
 */
export function neutralizeContent(text: string, envelope = false): string {
  let s = text;
  if (!(s as unknown as WellFormed).isWellFormed()) s = (s as unknown as WellFormed).toWellFormed();
  if (CHARS.test(s)) {
    s = s.replace(INVISIBLE, "");
    if (s.includes("\t")) s = s.replaceAll("\t", " ");
    s = HAS_BREAK.test(s) ? foldLines(s) : escapeLineStart(s);
  } else {
    s = escapeLineStart(s);
  }
  if (s.includes("```") || s.includes("~~~")) s = s.replace(FENCE, escapeFence);
  if (s.includes("_")) s = s.replace(FOOTER, "\\_");
  if (envelope && (s.includes("<") || s.includes(">"))) s = s.replace(TAG, escapeTag);
  return s;
}
