/**
 * Just enough Markdown for checking links (test/docs/links.test.ts): the links of a document and the anchors
 * its headings get on GitHub. Not a parser: fenced code blocks and inline code spans are skipped, the rest is
 * read line by line with regexes.
 */

export interface MarkdownLink {
  /** As written: `docs/api.md#errors`, `#fallbacks`, `https://…`. */
  target: string;
  /** 1-based line of the document. */
  line: number;
}

const FENCE = /^ {0,3}(`{3,}|~{3,})/;

/** Each line with its number, and whether it lies inside a fenced code block (fence lines included). */
function linesOf(text: string): Array<{ line: number; text: string; code: boolean }> {
  const out: Array<{ line: number; text: string; code: boolean }> = [];
  let fence: string | undefined;
  text.split(/\r?\n/).forEach((t, i) => {
    const m = FENCE.exec(t);
    if (fence === undefined && m?.[1] !== undefined) {
      fence = m[1];
      out.push({ line: i + 1, text: t, code: true });
      return;
    }
    if (fence !== undefined) {
      const close = m?.[1];
      if (close !== undefined && close[0] === fence[0] && close.length >= fence.length && t.trim() === close)
        fence = undefined;
      out.push({ line: i + 1, text: t, code: true });
      return;
    }
    out.push({ line: i + 1, text: t, code: false });
  });
  return out;
}

/** The line without its inline code spans (`` `x` ``, ``` ``x`` ```), whose text is not Markdown. */
function withoutCodeSpans(line: string): string {
  return line.replace(/(`+)(?:(?!\1)[\s\S])*?\1/g, " ");
}

/** Inline links and images `[text](target "title")`, reference definitions `[x]: target`, HTML href/src. */
export function extractLinks(markdown: string): MarkdownLink[] {
  const links: MarkdownLink[] = [];
  for (const { line, text, code } of linesOf(markdown)) {
    if (code) continue;
    const plain = withoutCodeSpans(text);
    for (const m of plain.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) {
      if (m[1] !== undefined) links.push({ target: m[1], line });
    }
    const def = /^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+"[^"]*")?\s*$/.exec(plain);
    if (def?.[1] !== undefined) links.push({ target: def[1], line });
    for (const m of plain.matchAll(/<(?:a|img|source)\b[^>]*?\s(?:href|src)\s*=\s*["']([^"']+)["']/gi)) {
      if (m[1] !== undefined) links.push({ target: m[1], line });
    }
  }
  return links;
}

/**
 * GitHub's anchor for a heading (github-slugger): the heading's text as rendered, lower-cased, with everything
 * but letters, marks, numbers, connector punctuation (`_`), hyphens and spaces removed, spaces turned into
 * hyphens.
 */
export function githubSlug(heading: string): string {
  return renderedText(heading)
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc}\- ]/gu, "")
    .replace(/ /g, "-");
}

/** The text a heading renders to: no images, link targets, code ticks, emphasis markers or HTML tags. */
function renderedText(heading: string): string {
  return heading
    .replace(/!\[([^\]]*)\]\([^)]*\)/g, "$1")
    .replace(/\[([^\]]*)\]\([^)]*\)/g, "$1")
    .replace(/<[^>]+>/g, "")
    .replace(/`+/g, "")
    .replace(/(\*{1,3}|_{1,3})(?=\S)([\s\S]*?\S)\1(?![\p{L}\p{N}])/gu, "$2")
    .trim();
}

/**
 * Every anchor a document offers: its headings' slugs (a repeated slug gets `-1`, `-2`, … as on GitHub) and
 * explicit `<a id="…">` / `<a name="…">` anchors.
 */
export function anchorsOf(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  const add = (heading: string) => {
    const base = githubSlug(heading);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    anchors.add(n === 0 ? base : `${base}-${n}`);
  };
  const lines = linesOf(markdown);
  lines.forEach(({ text, code }, i) => {
    if (code) return;
    const atx = /^ {0,3}#{1,6}(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$/.exec(text);
    if (atx) {
      add(atx[1] ?? "");
    } else {
      const next = lines[i + 1];
      const isParagraph = text.trim() !== "" && !/^ {0,3}([-*+>|]|\d+[.)])/.test(text);
      if (next !== undefined && !next.code && isParagraph && /^ {0,3}(=+|-+)[ \t]*$/.test(next.text))
        add(text);
    }
    for (const m of withoutCodeSpans(text).matchAll(/<a\b[^>]*?\s(?:id|name)\s*=\s*["']([^"']+)["']/gi)) {
      if (m[1] !== undefined) anchors.add(m[1]);
    }
  });
  return anchors;
}
