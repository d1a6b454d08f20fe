/**
 * Config files written by hand (policy files, the tenants file): YAML (or JSON, which is YAML) parsed with line
 * numbers, and every problem reported as `file:line: path: message`. Each file keeps its own schema and its
 * cross-field rules (src/policy/load.ts, src/tenants/file.ts); this module is what they share.
 */
import { extname } from "node:path";
import { type Document, isNode, LineCounter, parseDocument } from "yaml";
import type { ZodError } from "zod";

/** A path into a config file: keys and array indexes. */
export type Path = Array<string | number>;
/** The 1-based line of a path in the file, when known. */
export type LineOf = (path: Path) => number | undefined;
/** Reports a problem at a path of the file. */
export type At = (path: Path, message: string) => void;

/** One problem in a config file, precise enough to fix without reading the code. */
export interface ConfigProblem {
  file: string;
  /** 1-based line in the file when known. */
  line?: number;
  path: Path;
  message: string;
}

/** `policies/a.yaml:4: retrieval.topK: must be an integer from 1 to 20 (got 50)` */
export function formatProblem(p: ConfigProblem): string {
  const where = p.line === undefined ? p.file : `${p.file}:${p.line}`;
  const path = p.path.length > 0 ? `${formatPath(p.path)}: ` : "";
  return `${where}: ${path}${p.message}`;
}

/** `tenants[0].keys[1].sha256` */
export function formatPath(path: ReadonlyArray<PropertyKey>): string {
  return path
    .map((seg, i) => (typeof seg === "number" ? `[${seg}]` : `${i === 0 ? "" : "."}${String(seg)}`))
    .join("");
}

/** In file order, so an ops team reads them top to bottom (stable for problems without a line). */
export function byLine<T extends ConfigProblem>(problems: T[]): T[] {
  return problems.sort((a, b) => (a.line ?? 0) - (b.line ?? 0));
}

export type YamlParse =
  | { ok: true; value: unknown; lineOf: LineOf }
  | { ok: false; problems: ConfigProblem[] };

function parse(text: string): { doc: Document; lineCounter: LineCounter } {
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { lineCounter, uniqueKeys: true, prettyErrors: false });
  return { doc, lineCounter };
}

/** The line of the deepest node of `path` that exists in the document, the root included from `minDepth` 0. */
function lineFinder(doc: Document, lineCounter: LineCounter, minDepth = 0): LineOf {
  return (path) => {
    for (let n = path.length; n >= minDepth; n--) {
      const node = doc.getIn(path.slice(0, n), true);
      if (isNode(node) && node.range) return lineCounter.linePos(node.range[0]).line;
    }
    return undefined;
  };
}

/**
 * Parses YAML or JSON text (a duplicate key is an error) into a plain value and a `lineOf` for its paths. Never
 * throws: a syntax error, an alias without its anchor (`*x`) or an alias bomb is a problem naming the line.
 */
export function parseYaml(text: string, file: string): YamlParse {
  const format = extname(file) === ".json" ? "JSON" : "YAML";
  const { doc, lineCounter } = parse(text);
  if (doc.errors.length > 0) {
    return {
      ok: false,
      problems: doc.errors.map((e) => ({
        file,
        line: lineCounter.linePos(e.pos[0]).line,
        path: [],
        message: `not valid ${format}: ${e.message.split("\n")[0]}`,
      })),
    };
  }
  let value: unknown;
  try {
    // Throws on an alias without its anchor (`*x`) and on alias bombs (test/fuzz/policy.fuzz.test.ts).
    value = doc.toJS({ maxAliasCount: 50 });
  } catch (err) {
    const reason = err instanceof Error ? err.message.split("\n")[0] : "cannot be read";
    return { ok: false, problems: [{ file, line: 1, path: [], message: `not valid ${format}: ${reason}` }] };
  }
  return { ok: true, value, lineOf: lineFinder(doc, lineCounter) };
}

/**
 * Problems found after parsing (e.g. an RE2 pattern) come without a line: find it in the file's text (the line of
 * the deepest part of the path that is in the file; none when not even its first key is).
 */
export function addLines<T extends ConfigProblem>(problems: readonly T[], text: string): T[] {
  const { doc, lineCounter } = parse(text);
  const lineOf = lineFinder(doc, lineCounter, 1);
  return problems.map((p) => {
    if (p.line !== undefined) return p;
    const line = lineOf(p.path);
    return line === undefined ? p : { ...p, line };
  });
}

export interface ZodProblemOptions {
  /** Where each path is in the file; without it, problems have no line. */
  lineOf?: LineOf;
  /** The value that was validated: with it a missing field reads "is required". */
  input?: unknown;
  /**
   * Append the offending value when it is a number, string or boolean (`(got 50)`). Only for files that hold no
   * secrets: a misplaced secret must not reach a log through an error about it.
   */
  echoValues?: boolean;
  /**
   * One problem per unknown key, at the key's own path, with this message. Without it, one problem per object:
   * `unknown key(s) "a", "b"` at the object, on the line of its first unknown key.
   */
  unknownKey?: (parent: Path, key: string) => string;
  /** The key the author probably meant for an unknown one (src/config/suggest.ts), added as "did you mean". */
  suggest?: (parent: Path, key: string) => string | undefined;
}

/** Zod issues as problems, in file order. */
export function problemsFromZod(
  file: string,
  error: ZodError,
  opts: ZodProblemOptions = {},
): ConfigProblem[] {
  const { lineOf = () => undefined, input, echoValues = false, unknownKey, suggest } = opts;
  const problems: ConfigProblem[] = [];
  for (const issue of error.issues) {
    const path = issue.path.filter((s): s is string | number => typeof s !== "symbol");
    if (issue.code === "unrecognized_keys") {
      if (unknownKey !== undefined) {
        for (const key of issue.keys) {
          const at = [...path, key];
          const meant = suggest?.(path, key);
          const message = unknownKey(path, key);
          problems.push({
            file,
            line: lineOf(at),
            path: at,
            message: meant === undefined ? message : `${message}; did you mean "${meant}"?`,
          });
        }
        continue;
      }
      const first = issue.keys[0];
      const line = first === undefined ? undefined : lineOf([...path, first]);
      problems.push({
        file,
        line: line ?? lineOf(path),
        path,
        message: `unknown key(s) ${issue.keys.map((k) => `"${k}"`).join(", ")}${didYouMean(issue.keys, path, suggest)}`,
      });
      continue;
    }
    let message = issue.message;
    const got = valueAt(input, path);
    if (issue.code === "invalid_type" && got === undefined && input !== undefined) message = "is required";
    if (echoValues && (typeof got === "number" || typeof got === "string" || typeof got === "boolean")) {
      message += ` (got ${JSON.stringify(got)})`;
    }
    problems.push({ file, line: lineOf(path), path, message });
  }
  return byLine(problems);
}

function valueAt(root: unknown, path: Path): unknown {
  let cur: unknown = root;
  for (const seg of path) {
    if (cur === null || typeof cur !== "object") return undefined;
    if (!Object.hasOwn(cur, seg)) return undefined;
    cur = (cur as Record<string | number, unknown>)[seg];
  }
  return cur;
}

/** `; did you mean "budget"?` (one unknown key) or `; did you mean "budget" (for "budgt"), …?`; "" when none is close. */
function didYouMean(keys: readonly string[], parent: Path, suggest: ZodProblemOptions["suggest"]): string {
  if (suggest === undefined) return "";
  const pairs = keys.flatMap((k) => {
    const meant = suggest(parent, k);
    return meant === undefined ? [] : [{ k, meant }];
  });
  if (pairs.length === 0) return "";
  if (keys.length === 1) return `; did you mean "${pairs[0]?.meant}"?`;
  return `; did you mean ${pairs.map((p) => `"${p.meant}" (for "${p.k}")`).join(", ")}?`;
}
