/**
 * The labelled redaction corpus (eval/redaction/*.jsonl) through every built-in detector: 100 % recall and no
 * false positive, per detector. Also the runner itself (it must be able to fail) and `memgate eval-redaction`.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { main } from "../../src/cli/main";
import {
  checkRedactionGates,
  evaluateRedaction,
  loadRedactionCorpus,
  type RedactionCase,
  type RedactionReport,
  redactionReportText,
} from "../../src/eval/redaction";
import { DETECTORS } from "../../src/policy/schema";

const CORPUS = resolve(__dirname, "../../eval/redaction");

async function cli(...argv: string[]): Promise<{ code: number; out: string; err: string }> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await main(argv, { out: (l) => out.push(l), err: (l) => err.push(l) });
  return { code, out: out.join("\n"), err: err.join("\n") };
}

describe("the redaction corpus", () => {
  let cases: RedactionCase[];
  let report: RedactionReport;
  beforeAll(async () => {
    cases = await loadRedactionCorpus(CORPUS);
    report = evaluateRedaction(cases, CORPUS);
  });

  test("is large and varied: ≥ 300 cases, ≥ 220 of PII, positives and negatives in many languages", () => {
    expect(report.cases).toBeGreaterThanOrEqual(300);
    expect(report.files.find((f) => f.file === "pii.jsonl")?.cases).toBeGreaterThanOrEqual(220);
    const pii = cases.filter((c) => c.file === "pii.jsonl");
    expect(pii.filter((c) => c.expect.length === 0).length).toBeGreaterThanOrEqual(80);
    const langs = new Set(pii.map((c) => c.lang));
    for (const lang of ["en", "es", "fr", "de", "pt", "it", "nl", "ja", "zh"]) expect(langs).toContain(lang);
    // Every built-in detector is exercised by at least one positive case.
    const expected = (d: string) => report.detectors.find((f) => f.detector === d)?.expected ?? 0;
    expect(DETECTORS.filter((d) => expected(d) === 0)).toEqual([]);
  });

  test("every expected stretch is redacted by its detector, and nothing else is (100 % recall, 0 false positives)", () => {
    // The lists name file:line, detector and text, so a failure says which case broke.
    expect(report.misses).toEqual([]);
    expect(report.falsePositives).toEqual([]);
    for (const d of report.detectors) {
      if (d.expected > 0)
        expect({ detector: d.detector, recall: d.recall }).toEqual({ detector: d.detector, recall: 1 });
    }
    expect(report.overall.recall).toBe(1);
    expect(checkRedactionGates(report, { minRecall: 1, maxFalsePositives: 0 })).toEqual([]);
  });
});

describe("the redaction runner", () => {
  const one = (text: string, expect: RedactionCase["expect"], line = 1): RedactionCase => ({
    text,
    expect,
    lang: "en",
    file: "t.jsonl",
    line,
  });

  test("a miss, a wrong detector and an extra redaction are counted against the right detectors", () => {
    const report = evaluateRedaction([
      one("mail ana@example.com or 415-555-0132", [{ detector: "email", match: "ana@example.com" }], 1),
      one("card 4111 1111 1111 1111", [{ detector: "phone", match: "4111 1111 1111 1111" }], 2),
      one("nothing here", [{ detector: "ssn", match: "nothing" }], 3),
      one("from 10.0.0.1", [], 4),
    ]);
    const of = (d: string) => report.detectors.find((f) => f.detector === d);
    expect(of("email")).toMatchObject({ cases: 1, expected: 1, found: 1, recall: 1, falsePositives: 0 });
    expect(of("phone")).toMatchObject({ cases: 1, expected: 1, found: 0, recall: 0, falsePositives: 1 });
    expect(of("credit_card")).toMatchObject({ cases: 0, expected: 0, recall: null, falsePositives: 1 });
    expect(of("ssn")).toMatchObject({ expected: 1, found: 0, recall: 0 });
    expect(of("ipv4")).toMatchObject({ falsePositives: 1 });
    expect(report.overall).toMatchObject({ expected: 3, found: 1, falsePositives: 3 });
    expect(report.misses.map((m) => [m.line, m.detector])).toEqual([
      [2, "phone"],
      [3, "ssn"],
    ]);
    expect(report.falsePositives.map((m) => [m.line, m.detector, m.match])).toEqual([
      [1, "phone", "415-555-0132"],
      [2, "credit_card", "4111 1111 1111 1111"],
      [4, "ipv4", "10.0.0.1"],
    ]);
    expect(checkRedactionGates(report, { minRecall: 1, maxFalsePositives: 0 })).toEqual([
      "recall of ssn 0.0 % is below 100.0 %",
      "recall of phone 0.0 % is below 100.0 %",
      "recall of overall 33.3 % is below 100.0 %",
      "3 false positives, more than 0",
    ]);
    expect(checkRedactionGates(report, { minRecall: 0.3, maxFalsePositives: 3 })).toEqual([
      "recall of ssn 0.0 % is below 30.0 %",
      "recall of phone 0.0 % is below 30.0 %",
    ]);
    const text = redactionReportText(report);
    expect(text).toMatch(/^phone\s+1\s+1\s+0\s+0\.0 %\s+1$/m);
    expect(text).toContain('t.jsonl:4 ipv4 "10.0.0.1"');
  });

  test("the same text twice is matched once per expectation", () => {
    const report = evaluateRedaction([
      one("a@b.co and a@b.co", [
        { detector: "email", match: "a@b.co" },
        { detector: "email", match: "a@b.co" },
      ]),
      one("a@b.co and a@b.co", [{ detector: "email", match: "a@b.co" }], 2),
    ]);
    expect(report.overall).toMatchObject({ expected: 3, found: 3, falsePositives: 1 });
  });
});

describe("memgate eval-redaction", () => {
  let dir = "";
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "memgate-redaction-"));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));
  const write = (name: string, rows: object[]) =>
    writeFileSync(join(dir, name), `${rows.map((r) => JSON.stringify(r)).join("\n")}\n`);

  test("the shipped corpus meets --min-recall 1 --max-fp 0", async () => {
    const run = await cli("eval-redaction", "--corpus", CORPUS, "--min-recall", "1", "--max-fp", "0");
    expect(run.err).toBe("");
    expect(run.code).toBe(0);
    expect(run.out).toMatch(/^overall\s+\d+\s+(\d+)\s+\1\s+100\.0 %\s+0$/m);
    expect(run.out).toMatch(/^iban\s+\d+/m);
  });

  test("exit 1 when a gate is not met, with one line per gate; --json carries the report", async () => {
    write("a.jsonl", [
      { text: "mail ana@example.com", expect: [{ detector: "email", match: "ana@example.com" }], lang: "en" },
      { text: "call 415-555-0132", expect: [], lang: "en", note: "a negative that is not" },
    ]);
    const run = await cli("eval-redaction", "--corpus", dir, "--min-recall", "100%", "--max-fp", "0");
    expect(run.code).toBe(1);
    expect(run.err).toBe("eval-redaction: 1 false positives, more than 0");
    expect(run.out).toContain('a.jsonl:2 phone "415-555-0132" (a negative that is not)');
    expect((await cli("eval-redaction", "--corpus", dir, "--max-fp", "1")).code).toBe(0);
    const json = await cli("eval-redaction", "--corpus", dir, "--json", "--max-fp", "0");
    expect(json.code).toBe(1);
    const parsed = JSON.parse(json.out);
    expect(parsed.overall).toMatchObject({ cases: 2, expected: 1, found: 1, falsePositives: 1 });
    expect(parsed.failedGates).toEqual(["1 false positives, more than 0"]);
  });

  test("exit 2 on an invalid corpus or option, naming the file, line and field", async () => {
    write("bad.jsonl", [{ text: "x", expect: [{ detector: "email", match: "y" }], lang: "en" }]);
    const notInText = await cli("eval-redaction", "--corpus", dir);
    expect(notInText.code).toBe(2);
    expect(notInText.err).toBe(`eval-redaction: ${join(dir, "bad.jsonl")}:1: expect[0].match: not in text`);
    write("bad.jsonl", [{ text: "x", expect: [{ detector: "nope", match: "x" }], lang: "en" }]);
    expect((await cli("eval-redaction", "--corpus", dir)).err).toMatch(
      /bad\.jsonl:1: expect\[0\]\.detector: /,
    );
    expect((await cli("eval-redaction", "--corpus", join(dir, "missing"))).code).toBe(2);
    const empty = mkdtempSync(join(tmpdir(), "memgate-redaction-empty-"));
    try {
      expect((await cli("eval-redaction", "--corpus", empty)).err).toMatch(/no \.jsonl files/);
    } finally {
      rmSync(empty, { recursive: true, force: true });
    }
    for (const [flag, value] of [
      ["--min-recall", "1.5"],
      ["--min-recall", "abc"],
      ["--max-fp", "-1"],
      ["--max-fp", "0.5"],
    ] as const) {
      const run = await cli("eval-redaction", "--corpus", CORPUS, flag, value);
      expect(run.code).toBe(2);
      expect(run.err).toContain(`eval-redaction: ${flag}: must be`);
    }
  });
});
