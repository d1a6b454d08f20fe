import { readdir } from "node:fs/promises";
import { join } from "node:path";
import { z } from "zod";
import { inspectRedaction, type RedactionHit } from "../pipeline/redaction";
import { DETECTORS, redactionSchema } from "../policy/schema";
import { GoldenSetError, parseJsonl, readEvalFile } from "./golden";
import { table } from "./report";

/**
 * The redaction evaluation behind `memgate eval-redaction`: every labelled case of a corpus directory
 * (eval/redaction/*.jsonl) through a redactor with every built-in detector on, and per detector what it
 * redacted of what it should have (recall) and what it redacted that it should not have (false positives).
 *
 * A case is one JSON object per line (blank lines and `//` / `#` comments are skipped):
 *
 *   {"text": "mail ana@example.com", "expect": [{"detector": "email", "match": "ana@example.com"}],
 *    "lang": "en", "note": "plain address"}
 *
 * `expect` lists every stretch that must be redacted, each with the detector that must redact it, as the exact
 * text it replaces; `[]` makes a negative (nothing may be redacted). A redaction counts for an expectation
 * when the same detector replaced exactly that text; anything else it replaced is a false positive of that
 * detector: on a negative, or beside the expected stretches of a positive. A stretch found by the wrong
 * detector is both a miss (of the expected one) and a false positive (of the one that fired).
 */

export const redactionCaseSchema = z.strictObject({
  text: z.string().min(1).max(100_000),
  expect: z
    .array(z.strictObject({ detector: z.enum(DETECTORS), match: z.string().min(1).max(10_000) }))
    .max(100),
  lang: z.string().regex(/^[a-z]{2,3}(-[A-Za-z0-9]{2,8})?$/, "a language tag such as en or zh-Hans"),
  note: z.string().max(500).optional(),
});

export interface RedactionCase extends z.output<typeof redactionCaseSchema> {
  /** The corpus file's name (`pii.jsonl`) and the 1-based line. */
  file: string;
  line: number;
}

/** One expectation that was not met, or one redaction nobody expected. */
export interface RedactionMiss {
  file: string;
  line: number;
  detector: string;
  match: string;
  note?: string;
}

export interface DetectorFigures {
  detector: string;
  /** Cases expecting at least one redaction by this detector. */
  cases: number;
  expected: number;
  found: number;
  /** found / expected; null when nothing is expected of the detector. */
  recall: number | null;
  falsePositives: number;
}

export interface RedactionReport {
  corpus: string;
  files: Array<{ file: string; cases: number }>;
  languages: Array<{ lang: string; cases: number }>;
  cases: number;
  positives: number;
  negatives: number;
  detectors: DetectorFigures[];
  overall: Omit<DetectorFigures, "detector">;
  misses: RedactionMiss[];
  falsePositives: RedactionMiss[];
}

/** Every `*.jsonl` of `dir`, by name, validated; an unreadable or invalid file throws a `GoldenSetError`. */
export async function loadRedactionCorpus(dir: string): Promise<RedactionCase[]> {
  let names: string[];
  try {
    names = (await readdir(dir)).filter((n) => n.endsWith(".jsonl")).sort();
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? "unreadable";
    throw new GoldenSetError(`${dir}: cannot read the redaction corpus (${code})`);
  }
  if (names.length === 0) throw new GoldenSetError(`${dir}: no .jsonl files in the redaction corpus`);
  const cases: RedactionCase[] = [];
  for (const file of names) {
    const path = join(dir, file);
    const text = await readEvalFile(path, "the redaction corpus");
    for (const { line, data } of parseJsonl(text, path, redactionCaseSchema)) {
      data.expect.forEach((e, i) => {
        if (!data.text.includes(e.match)) {
          throw new GoldenSetError(`${path}:${line}: expect[${i}].match: not in text`);
        }
      });
      cases.push({ ...data, file, line });
    }
  }
  return cases;
}

/** Runs `cases` through a redactor with every built-in detector and counts, per detector and overall. */
export function evaluateRedaction(cases: readonly RedactionCase[], corpus = ""): RedactionReport {
  const inspect = inspectRedaction(redactionSchema.parse({ enabled: true, detectors: [...DETECTORS] }));
  const misses: RedactionMiss[] = [];
  const falsePositives: RedactionMiss[] = [];
  const figures = new Map<string, DetectorFigures>(
    DETECTORS.map((d) => [
      d,
      { detector: d, cases: 0, expected: 0, found: 0, recall: null, falsePositives: 0 },
    ]),
  );
  const figuresOf = (detector: string): DetectorFigures => {
    let f = figures.get(detector);
    if (f === undefined) {
      f = { detector, cases: 0, expected: 0, found: 0, recall: null, falsePositives: 0 };
      figures.set(detector, f);
    }
    return f;
  };

  for (const c of cases) {
    const hits: Array<RedactionHit | undefined> = inspect(c.text).hits;
    for (const detector of new Set(c.expect.map((e) => e.detector))) figuresOf(detector).cases++;
    for (const e of c.expect) {
      const f = figuresOf(e.detector);
      f.expected++;
      const at = hits.findIndex((h) => h !== undefined && h.detector === e.detector && h.match === e.match);
      if (at === -1) {
        misses.push({ file: c.file, line: c.line, detector: e.detector, match: e.match, note: c.note });
      } else {
        f.found++;
        hits[at] = undefined;
      }
    }
    for (const h of hits) {
      if (h === undefined) continue;
      figuresOf(h.detector).falsePositives++;
      falsePositives.push({ file: c.file, line: c.line, detector: h.detector, match: h.match, note: c.note });
    }
  }

  const detectors = [...figures.values()].map((f) => ({
    ...f,
    recall: f.expected === 0 ? null : f.found / f.expected,
  }));
  const sum = (key: "expected" | "found" | "falsePositives") => detectors.reduce((n, f) => n + f[key], 0);
  const expected = sum("expected");
  const found = sum("found");
  const positives = cases.filter((c) => c.expect.length > 0).length;
  const count = (key: (c: RedactionCase) => string) => {
    const counts = new Map<string, number>();
    for (const c of cases) counts.set(key(c), (counts.get(key(c)) ?? 0) + 1);
    return [...counts];
  };
  return {
    corpus,
    files: count((c) => c.file).map(([file, n]) => ({ file, cases: n })),
    languages: count((c) => c.lang)
      .sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))
      .map(([lang, n]) => ({ lang, cases: n })),
    cases: cases.length,
    positives,
    negatives: cases.length - positives,
    detectors,
    overall: {
      cases: cases.length,
      expected,
      found,
      recall: expected === 0 ? null : found / expected,
      falsePositives: sum("falsePositives"),
    },
    misses,
    falsePositives,
  };
}

const pct = (v: number | null): string => (v === null ? "—" : `${(v * 100).toFixed(1)} %`);

/** The report as text: the table per detector, then every miss and every false positive. */
export function redactionReportText(r: RedactionReport): string {
  const row = (name: string, f: Omit<DetectorFigures, "detector">) => [
    name,
    String(f.cases),
    String(f.expected),
    String(f.found),
    pct(f.recall),
    String(f.falsePositives),
  ];
  const lines = [
    `redaction corpus ${r.corpus}: ${r.cases} cases (${r.positives} positive, ${r.negatives} negative) in ` +
      `${r.files.map((f) => `${f.file} ${f.cases}`).join(", ")}; every built-in detector on`,
    `languages: ${r.languages.map((l) => `${l.lang} ${l.cases}`).join(", ")}`,
    "",
    table(
      ["detector", "cases", "expected", "redacted", "recall", "false positives"],
      [...r.detectors.map((f) => row(f.detector, f)), row("overall", r.overall)],
    ),
  ];
  const list = (title: string, items: readonly RedactionMiss[]) => {
    if (items.length === 0) return;
    lines.push("", `${title} (${items.length}):`);
    for (const m of items) {
      lines.push(
        `  ${m.file}:${m.line} ${m.detector} ${JSON.stringify(m.match)}${m.note ? ` (${m.note})` : ""}`,
      );
    }
  };
  list("missed", r.misses);
  list("false positives", r.falsePositives);
  return lines.join("\n");
}

export interface RedactionGates {
  /** Every detector with expectations, and the overall figure, must reach this recall (0–1). */
  minRecall?: number;
  /** At most this many false positives in all. */
  maxFalsePositives?: number;
}

/** One line per gate not met; empty when every gate holds. */
export function checkRedactionGates(r: RedactionReport, gates: RedactionGates): string[] {
  const failed: string[] = [];
  const { minRecall, maxFalsePositives } = gates;
  if (minRecall !== undefined) {
    for (const f of [...r.detectors, { ...r.overall, detector: "overall" }]) {
      if (f.recall !== null && f.recall < minRecall) {
        failed.push(`recall of ${f.detector} ${pct(f.recall)} is below ${pct(minRecall)}`);
      }
    }
  }
  if (maxFalsePositives !== undefined && r.overall.falsePositives > maxFalsePositives) {
    failed.push(`${r.overall.falsePositives} false positives, more than ${maxFalsePositives}`);
  }
  return failed;
}
