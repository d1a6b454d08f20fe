import { z } from "zod";
import { detectInjection } from "../pipeline/screen";
import { INJECTION_DETECTOR_LIST } from "../pipeline/screen/detectors";
import { INJECTION_DETECTORS, type InjectionDetectorName } from "../policy/schema";
import { GoldenSetError, jsonlLines, parseJsonl, readEvalFile } from "./golden";
import { pct, table } from "./report";

/**
 * The injection-screening evaluation behind `memgate eval-injection`: every labelled case
 * (eval/injection/cases.jsonl) through every injection detector, and per detector what it caught of the cases
 * that hold its kind of content (recall) and where else it fired (false positives); then ordinary chat (the
 * golden set's memories, eval/golden/basic/memories.jsonl), where any flag is a false positive.
 *
 * A case is one JSON object per line (blank lines and `//` / `#` comments are skipped):
 *
 *   {"id": "ovr-en-01", "lang": "en", "expect": ["instruction_override"], "text": "Ignore all previous …"}
 *
 * `expect` lists every detector that must fire; `[]` makes a negative (none may). A detector that fires on a
 * case that does not list it is a false positive of that detector.
 */

export const injectionCaseSchema = z.strictObject({
  id: z.string().min(1).max(128),
  lang: z.string().regex(/^[a-z]{2,3}(-[A-Za-z0-9]{2,8})?$/, "a language tag such as en or zh-Hans"),
  expect: z.array(z.enum(INJECTION_DETECTORS)).max(INJECTION_DETECTORS.length),
  text: z.string().min(1).max(100_000),
  note: z.string().max(500).optional(),
});

export interface InjectionCase extends z.output<typeof injectionCaseSchema> {
  line: number;
}

export interface InjectionDetectorFigures {
  detector: InjectionDetectorName;
  /** Cases that list the detector. */
  positives: number;
  detected: number;
  /** detected / positives; null when no case lists the detector. */
  recall: number | null;
  /** Ids of the cases listing the detector where it did not fire. */
  missed: string[];
  /** Ids of the cases not listing the detector where it fired. */
  falsePositives: string[];
  /** Golden-set memories it fired on. */
  goldenFlags: number;
}

export interface InjectionReport {
  cases: number;
  positives: number;
  negatives: number;
  /** Over every (case, expected detector) pair. */
  recall: number | null;
  falsePositives: number;
  golden: { memories: number; flagged: Array<{ id: string; detectors: InjectionDetectorName[] }> };
  detectors: InjectionDetectorFigures[];
}

export function parseInjectionCases(text: string, source: string): InjectionCase[] {
  const cases: InjectionCase[] = [];
  const ids = new Set<string>();
  for (const { line, data } of parseJsonl(text, source, injectionCaseSchema)) {
    if (ids.has(data.id))
      throw new GoldenSetError(`${source}:${line}: id: ${JSON.stringify(data.id)} repeats`);
    ids.add(data.id);
    cases.push({ ...data, line });
  }
  if (cases.length === 0) throw new GoldenSetError(`${source}: no cases`);
  return cases;
}

export async function loadInjectionCases(file: string): Promise<InjectionCase[]> {
  return parseInjectionCases(await readEvalFile(file, "the injection cases"), file);
}

/** The `id` and `content` of each memory of a local-backend JSONL file (the golden set's memories). */
export function parseMemoryContents(text: string, source: string): Array<{ id: string; content: string }> {
  const out: Array<{ id: string; content: string }> = [];
  for (const { line, text: t } of jsonlLines(text)) {
    let raw: unknown;
    try {
      raw = JSON.parse(t);
    } catch {
      throw new GoldenSetError(`${source}:${line}: invalid JSON`);
    }
    const m = raw as { id?: unknown; content?: unknown };
    if (typeof m.content !== "string") throw new GoldenSetError(`${source}:${line}: content: not a string`);
    out.push({ id: typeof m.id === "string" ? m.id : `line-${line}`, content: m.content });
  }
  return out;
}

export async function loadMemoryContents(file: string): Promise<Array<{ id: string; content: string }>> {
  return parseMemoryContents(await readEvalFile(file, "the memories"), file);
}

export function evaluateInjection(
  cases: readonly InjectionCase[],
  memories: ReadonlyArray<{ id: string; content: string }> = [],
): InjectionReport {
  const figures = new Map<InjectionDetectorName, InjectionDetectorFigures>(
    INJECTION_DETECTORS.map((detector) => [
      detector,
      { detector, positives: 0, detected: 0, recall: null, missed: [], falsePositives: [], goldenFlags: 0 },
    ]),
  );
  const at = (d: InjectionDetectorName) => figures.get(d) as InjectionDetectorFigures;
  let expected = 0;
  let found = 0;
  for (const c of cases) {
    const fired = new Set(detectInjection(c.text));
    for (const d of c.expect) {
      const f = at(d);
      f.positives++;
      expected++;
      if (fired.has(d)) {
        f.detected++;
        found++;
      } else f.missed.push(c.id);
    }
    for (const d of fired) if (!c.expect.includes(d)) at(d).falsePositives.push(c.id);
  }
  const flagged: InjectionReport["golden"]["flagged"] = [];
  for (const m of memories) {
    const fired = detectInjection(m.content);
    if (fired.length === 0) continue;
    flagged.push({ id: m.id, detectors: fired });
    for (const d of fired) at(d).goldenFlags++;
  }
  const detectors = [...figures.values()].map((f) => ({
    ...f,
    recall: f.positives === 0 ? null : f.detected / f.positives,
  }));
  return {
    cases: cases.length,
    positives: cases.filter((c) => c.expect.length > 0).length,
    negatives: cases.filter((c) => c.expect.length === 0).length,
    recall: expected === 0 ? null : found / expected,
    falsePositives: detectors.reduce((n, f) => n + f.falsePositives.length, 0),
    golden: { memories: memories.length, flagged },
    detectors,
  };
}

export interface InjectionGates {
  /** Every detector's recall (and the overall one) at least this. */
  minRecall?: number;
  /** At most this many false positives in all: on the cases plus golden-set memories flagged. */
  maxFalsePositives?: number;
}

/** The gates not met, one line each. */
export function checkInjectionGates(report: InjectionReport, gates: InjectionGates): string[] {
  const failed: string[] = [];
  if (gates.minRecall !== undefined) {
    for (const f of report.detectors) {
      if (f.recall !== null && f.recall < gates.minRecall) {
        failed.push(
          `${f.detector}: recall ${pct(f.recall)} < ${pct(gates.minRecall)} (missed ${f.missed.join(", ")})`,
        );
      }
    }
  }
  if (gates.maxFalsePositives !== undefined) {
    const total = report.falsePositives + report.golden.flagged.length;
    if (total > gates.maxFalsePositives) {
      failed.push(`${total} false positives (cases and golden-set memories) > ${gates.maxFalsePositives}`);
    }
  }
  return failed;
}

export function injectionReportText(report: InjectionReport): string {
  const summaries = new Map(INJECTION_DETECTOR_LIST.map((d) => [d.name, d.summary]));
  const rows = report.detectors.map((f) => [
    f.detector,
    String(f.positives),
    String(f.detected),
    pct(f.recall),
    String(f.falsePositives.length),
    String(f.goldenFlags),
  ]);
  const lines = [
    `injection screening: ${report.cases} labelled cases (${report.positives} with injected content, ${report.negatives} hard negatives), ` +
      `${report.golden.memories} golden-set memories`,
    "",
    table(["detector", "positives", "detected", "recall", "false positives", "golden flags"], rows),
    "",
    `overall recall ${pct(report.recall)}, ${report.falsePositives} false positives on the cases, ` +
      `${report.golden.flagged.length} of ${report.golden.memories} golden-set memories flagged`,
  ];
  for (const f of report.detectors) {
    if (f.missed.length > 0) lines.push(`${f.detector} missed: ${f.missed.join(", ")}`);
    if (f.falsePositives.length > 0)
      lines.push(`${f.detector} false positives: ${f.falsePositives.join(", ")}`);
  }
  for (const g of report.golden.flagged)
    lines.push(`golden memory ${g.id} flagged: ${g.detectors.join(", ")}`);
  lines.push("", "detectors:");
  for (const [name, summary] of summaries) lines.push(`  ${name}: ${summary}`);
  return lines.join("\n");
}
