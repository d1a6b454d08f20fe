/**
 * The longest run of literal characters that every match of an RE2 pattern contains, or `undefined` when none
 * can be told for sure. A custom pattern is then run only on texts that contain it: RE2 pays a fixed cost per
 * text (it converts the text to UTF-8), which made one custom pattern (`\bEMP-\d{6}\b`) cost more per
 * retrieval than most built-in detectors together.
 *
 * Deliberately conservative, since a wrong literal would skip text that must be redacted. Only a small subset
 * of the syntax is read; anything else gives `undefined`:
 *
 * - literal characters, and escaped punctuation (`\.`, `\-`, `\/`), at the top level;
 * - `\d \D \w \W \s \S \b \B`, `.`, `^`, `$`, classes `[…]` (no `[` inside, no `]` first) and groups `(…)`,
 *   `(?:…)`: they end a run;
 * - quantifiers `? * +` and `{n}`, `{n,}`, `{n,m}`: the character before one is not part of the run;
 * - a `|` outside every group, the `i` flag, `(?…)` (flags, named groups) or any other escape (`\x41`, `\p{L}`,
 *   `\Q…\E`, octal) give no literal at all.
 */
export function requiredLiteral(source: string, flags = ""): string | undefined {
  if (flags.includes("i")) return undefined;
  let best = "";
  let run = "";
  let depth = 0;
  const endRun = () => {
    if (run.length > best.length) best = run;
    run = "";
  };
  /** Adds `c` to the run when it stands at the top level and no quantifier follows it (at `next`). */
  const literal = (c: string, next: number) => {
    const after = source[next];
    if (depth === 0 && (after === undefined || !"?*+{".includes(after))) run += c;
    else endRun();
  };
  let i = 0;
  while (i < source.length) {
    const c = source[i] ?? "";
    if (c === "\\") {
      const e = source[i + 1];
      if (e === undefined) return undefined;
      if ("dDwWsSbB".includes(e)) endRun();
      else if (!/[!-/:-@[-`{-~]/.test(e))
        return undefined; // only escaped ASCII punctuation is a literal
      else literal(e, i + 2);
      i += 2;
    } else if (c === "[") {
      const close = source.indexOf("]", i + 1);
      const body = close === -1 ? "" : source.slice(i + 1, close);
      if (close === -1 || body === "" || body === "^" || body.includes("[") || body.endsWith("\\"))
        return undefined;
      endRun();
      i = close + 1;
    } else if (c === "{") {
      const close = source.indexOf("}", i);
      if (close === -1 || !/^\{\d+(?:,\d*)?\}$/.test(source.slice(i, close + 1))) return undefined;
      endRun();
      i = close + 1;
    } else if (c === "(") {
      // `(?:` groups like `(`; any other `(?` (flags such as `(?i)`, named groups) gives no literal.
      const plain = source[i + 1] !== "?";
      if (!plain && source[i + 2] !== ":") return undefined;
      depth++;
      endRun();
      i += plain ? 1 : 3;
    } else if (c === ")") {
      depth--;
      if (depth < 0) return undefined;
      endRun();
      i++;
    } else if (c === "|") {
      if (depth === 0) return undefined;
      endRun();
      i++;
    } else if (".^$?*+}]".includes(c)) {
      endRun();
      i++;
    } else {
      // A whole code point: a quantifier after an astral character applies to both of its code units.
      const width = (source.codePointAt(i) ?? 0) > 0xffff ? 2 : 1;
      literal(source.slice(i, i + width), i + width);
      i += width;
    }
  }
  endRun();
  return depth === 0 && best.length >= 2 ? best : undefined;
}
