/**
 * The documentation stands alone (issue 17, point 4): every relative link in the repository's Markdown resolves
 * to a file in the repository (and an `#anchor` into Markdown to one of its headings), every `docs/…` path that
 * code, tests, scripts, policies and examples cite exists (with its anchor), and nothing points outside the
 * repository (the old contract file in a shared folder beside it, citations of its sections, absolute paths of a
 * development machine).
 * What is checked is what exists when the test runs: the repository's files as git knows them (tracked, plus new
 * files not ignored), read from the working tree.
 */
import { execFileSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, extname, join, normalize, relative, resolve, sep } from "node:path";
import { anchorsOf, extractLinks, githubSlug } from "./markdown";

const ROOT = resolve(__dirname, "..", "..");
const SKIPPED_DIRS = new Set(["node_modules", "dist", ".git", "coverage"]);

/** Repository-relative paths (with `/`) of the files in the working tree that git tracks or would track. */
function repositoryFiles(): string[] {
  let listed: string[];
  try {
    listed = execFileSync("git", ["ls-files", "-z", "--cached", "--others", "--exclude-standard"], {
      cwd: ROOT,
      encoding: "utf8",
      maxBuffer: 64 * 1024 * 1024,
    })
      .split("\0")
      .filter((f) => f !== "");
  } catch {
    listed = walk(ROOT, ignoredByGit()); // not a git checkout (e.g. an unpacked archive)
  }
  return listed.filter(
    (f) => !f.split("/").some((part) => SKIPPED_DIRS.has(part)) && existsSync(join(ROOT, f)),
  );
}

/** The .gitignore's simple forms (`name/`, `*.ext`, `name`) as a test on a file or folder name. */
function ignoredByGit(): (name: string) => boolean {
  const file = join(ROOT, ".gitignore");
  const patterns = existsSync(file)
    ? readFileSync(file, "utf8")
        .split(/\r?\n/)
        .map((l) => l.trim().replace(/^\/|\/$/g, ""))
        .filter((l) => l !== "" && !l.startsWith("#") && !l.startsWith("!"))
    : [];
  return (name) => patterns.some((p) => (p.startsWith("*.") ? name.endsWith(p.slice(1)) : name === p));
}

function walk(dir: string, ignored: (name: string) => boolean): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (SKIPPED_DIRS.has(entry.name) || ignored(entry.name)) continue;
    const full = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...walk(full, ignored));
    else if (entry.isFile()) out.push(relative(ROOT, full).split(sep).join("/"));
  }
  return out;
}

const FILES = repositoryFiles();
const read = (file: string) => readFileSync(join(ROOT, file), "utf8");
const isText = (file: string) => !read(file).includes("\u0000");
const MARKDOWN = FILES.filter((f) => f.endsWith(".md"));

const anchorCache = new Map<string, Set<string>>();
function anchorsOfFile(file: string): Set<string> {
  let anchors = anchorCache.get(file);
  if (anchors === undefined) {
    anchors = anchorsOf(read(file));
    anchorCache.set(file, anchors);
  }
  return anchors;
}

/**
 * Why `target` (relative to `fromDir`, repository-relative) does not resolve, or undefined when it does: the path
 * must stay inside the repository and exist; an anchor into a Markdown file must be one of its anchors.
 */
function problemWith(target: string, fromDir: string, selfFile?: string): string | undefined {
  const hash = target.indexOf("#");
  const rawPath = hash < 0 ? target : target.slice(0, hash);
  const anchor = hash < 0 ? undefined : decodeURIComponent(target.slice(hash + 1));
  let file: string;
  if (rawPath === "") {
    if (selfFile === undefined) return "an anchor without a file";
    file = selfFile;
  } else {
    const path = decodeURIComponent(rawPath.split("?")[0] ?? "");
    if (path.startsWith("/")) return "an absolute path (links must be relative to the file)";
    file = normalize(join(fromDir, path)).split(sep).join("/").replace(/\/$/, "");
    if (file === ".." || file.startsWith("../")) return "points outside the repository";
    if (!existsSync(join(ROOT, file))) return `no such file or directory: ${file}`;
  }
  if (anchor === undefined || anchor === "") return undefined;
  if (!file.endsWith(".md") || statSync(join(ROOT, file)).isDirectory()) return undefined;
  if (!anchorsOfFile(file).has(anchor)) return `no heading with the anchor #${anchor} in ${file}`;
  return undefined;
}

const EXTERNAL = /^[a-z][a-z0-9+.-]*:/i; // http:, https:, mailto:, …

/** `docs/…` paths (with an optional `#anchor`) as code and config cite them; not inside longer paths or URLs. */
const DOCS_CITATION = /(?<![\w./-])docs\/[\w./-]*[\w/](?:#[\w-]+)?/g;
const CITING_EXTENSIONS = new Set([".ts", ".js", ".mjs", ".cjs", ".yaml", ".yml", ".sh", ".json"]);
const CITING_DIRS = [
  "src/",
  "test/",
  "bench/",
  "scripts/",
  "bin/",
  "examples/",
  "policies/",
  "config/",
  "deploy/",
];

function citingFiles(): string[] {
  return FILES.filter(
    (f) =>
      (CITING_DIRS.some((d) => f.startsWith(d)) && CITING_EXTENSIONS.has(extname(f))) ||
      f === "Dockerfile" ||
      f.startsWith(".ci/"),
  );
}

/** Built at run time, so this file does not hold the strings it forbids. */
const FORBIDDEN: Array<{ what: string; re: RegExp }> = [
  { what: "a path into the old shared folder", re: new RegExp(["\\.\\.", "shared"].join("/")) },
  { what: "a section of the old contract file", re: new RegExp(["CONTRACT", "§"].join(" ")) },
  { what: "the old contract file", re: new RegExp(["shared", "CONTRACT\\.md"].join("/")) },
  { what: "an absolute path of a development machine", re: new RegExp(`(?<![\\w.~-])/${"work"}/`) },
];

function lineOf(text: string, index: number): number {
  return text.slice(0, index).split("\n").length;
}

describe("Markdown helpers", () => {
  test("GitHub slugs: lower case, punctuation and symbols removed, spaces to hyphens", () => {
    expect(githubSlug("Several replicas (Redis)")).toBe("several-replicas-redis");
    expect(githubSlug("What the shaped context still holds (`memgate eval`)")).toBe(
      "what-the-shaped-context-still-holds-memgate-eval",
    );
    expect(githubSlug("Zep (`@getzep/zep-cloud` v3)")).toBe("zep-getzepzep-cloud-v3");
    expect(githubSlug("Pipeline (stages 2–8 + format, `runPipeline`), 16 candidates × ~500 characters")).toBe(
      "pipeline-stages-28--format-runpipeline-16-candidates--500-characters",
    );
    expect(githubSlug("The **bold** and [linked](x.md) and snake_case")).toBe(
      "the-bold-and-linked-and-snake_case",
    );
    expect(githubSlug("Untrusted memory: injection screening")).toBe("untrusted-memory-injection-screening");
    expect(githubSlug("Über Größe")).toBe("über-größe");
  });

  test("links outside code, anchors of headings (repeated ones numbered), nothing from code blocks", () => {
    const md = [
      "# Title",
      "See [the API](docs/api.md#errors), ![shot](img/a.png) and `[not](a-link.md)`.",
      "```md",
      "# Not a heading",
      "[not a link](nowhere.md)",
      "```",
      "## Title",
      "[ref]: docs/policy.md",
      "Setext heading",
      "---",
      '<img src="pics/x.png" alt=""> <a id="custom"></a>',
    ].join("\n");
    expect(extractLinks(md).map((l) => [l.target, l.line])).toEqual([
      ["docs/api.md#errors", 2],
      ["img/a.png", 2],
      ["docs/policy.md", 8],
      ["pics/x.png", 11],
    ]);
    expect([...anchorsOf(md)].sort()).toEqual(["custom", "setext-heading", "title", "title-1"]);
  });
});

describe("the documentation stands alone", () => {
  test("the repository's Markdown is found (README, docs/)", () => {
    expect(MARKDOWN).toContain("README.md");
    for (const page of ["docs/README.md", "docs/api.md", "docs/policy.md", "docs/configuration.md"]) {
      expect(MARKDOWN).toContain(page);
    }
  });

  test("every relative link in the Markdown files resolves, anchors included", () => {
    const problems: string[] = [];
    let checked = 0;
    for (const file of MARKDOWN) {
      for (const { target, line } of extractLinks(read(file))) {
        if (EXTERNAL.test(target)) continue;
        checked++;
        const problem = problemWith(target, dirname(file), file);
        if (problem !== undefined) problems.push(`${file}:${line}: ${target}: ${problem}`);
      }
    }
    expect(problems).toEqual([]);
    expect(checked).toBeGreaterThan(50); // the links were found, not skipped
  });

  test("every docs/… path cited by code, tests, scripts, policies and examples exists, anchors included", () => {
    const problems: string[] = [];
    let checked = 0;
    for (const file of citingFiles()) {
      const text = read(file);
      for (const m of text.matchAll(DOCS_CITATION)) {
        checked++;
        const problem = problemWith(m[0], ".");
        if (problem !== undefined) problems.push(`${file}:${lineOf(text, m.index)}: ${m[0]}: ${problem}`);
      }
    }
    expect(problems).toEqual([]);
    expect(checked).toBeGreaterThan(50);
  });

  test("nothing in the repository points outside it (the old shared folder and contract, machine paths)", () => {
    const problems: string[] = [];
    const textFiles = FILES.filter(isText);
    expect(textFiles.length).toBeGreaterThan(100);
    for (const file of textFiles) {
      const text = read(file);
      for (const { what, re } of FORBIDDEN) {
        const m = new RegExp(re.source, "g").exec(text);
        if (m) problems.push(`${file}:${lineOf(text, m.index)}: ${what}: ${JSON.stringify(m[0])}`);
      }
    }
    expect(problems).toEqual([]);
  });

  test("package.json names only files that exist or that the build makes", () => {
    const pkg = JSON.parse(read("package.json")) as { main?: string; bin?: Record<string, string> | string };
    const bins = typeof pkg.bin === "string" ? [pkg.bin] : Object.values(pkg.bin ?? {});
    expect(bins.length).toBeGreaterThan(0);
    for (const bin of bins) expect(existsSync(join(ROOT, bin))).toBe(true);
    if (pkg.main !== undefined) {
      // dist/ is built from src/ (tsconfig.build.json): dist/x.js exists after `npm run build` iff src/x.ts does.
      const built = /^(\.\/)?dist\//.test(pkg.main);
      const source = built ? pkg.main.replace(/^(\.\/)?dist\//, "src/").replace(/\.js$/, ".ts") : pkg.main;
      expect({ main: pkg.main, source, exists: existsSync(join(ROOT, source)) }).toEqual({
        main: pkg.main,
        source,
        exists: true,
      });
    }
  });
});
