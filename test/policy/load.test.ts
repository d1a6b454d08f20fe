import { readdirSync } from "node:fs";
import { join } from "node:path";
import { formatProblem } from "../../src/config/yaml";
import { canonicalJson } from "../../src/policy/canonical";
import { compilePolicyFile } from "../../src/policy/compile";
import { parsePolicyText } from "../../src/policy/load";

const lines = (text: string, file = "policies/p.yaml"): string[] => {
  const r = parsePolicyText(text, file);
  if (r.ok) throw new Error("expected problems");
  return r.problems.map(formatProblem);
};

describe("policy files", () => {
  test("a minimal policy gets every default of docs/policy.md#fields", () => {
    const r = parsePolicyText("name: minimal\nversion: 1\n", "m.yaml");
    if (!r.ok) throw new Error("expected ok");
    expect(r.policy.retrieval).toEqual({
      topK: 8,
      overfetch: 2,
      clipSentences: 2,
      maxTokens: 1500,
      searchType: "hybrid",
      minScore: 0.3,
      maxQueryChars: 4000,
      replies: false,
    });
    expect(r.policy.tokenizer).toBe("o200k_base");
    expect(r.policy.interleaving.strategy).toBe("alternate");
    expect(r.policy.fallbacks.RATE_LIMITED).toBe("cache");
    expect(r.policy.fallbacks.COLLECTION_NOT_FOUND).toBe("empty");
    expect(r.policy.cache).toEqual({ ttlSeconds: 60, staleSeconds: 3600 });
    expect(r.policy.format.timeZone).toBe("UTC");
    expect(r.policy.format.envelope).toBe("none");
    // Seed 000's clipping and packing unless a file asks for more (policies/default.yaml does).
    expect(r.policy.clip).toEqual({ mode: "leading", answerAware: false, speakerLabel: false });
    // No ranking, selection or sufficiency unless a file asks for them: seed 000's order.
    expect(r.policy.ranking.enabled).toBe(false);
    expect(r.policy.ranking.diversity).toBe(1);
    expect(r.policy.ranking.dynamicK.enabled).toBe(false);
    expect(r.policy.sufficiency).toEqual({ enabled: false, threshold: 0.6, expand: false, expandFactor: 2 });
    expect(r.policy.budget).toEqual({ packing: "truncate", fill: false, maxMemories: 20 });
  });

  test("clip and budget: values and ranges are checked, with the line", () => {
    const text = [
      "name: bad",
      "version: 1",
      "clip:",
      "  mode: best",
      "budget:",
      "  packing: squeeze",
      "  fill: yes",
      "  maxMemories: 51",
    ].join("\n");
    const problems = lines(text);
    expect(problems[0]).toMatch(/^policies\/p\.yaml:4: clip\.mode: .*"leading"\|"relevant"\|"off"/);
    expect(problems[1]).toMatch(/^policies\/p\.yaml:6: budget\.packing: .*"truncate"\|"skip"/);
    expect(problems[2]).toMatch(/^policies\/p\.yaml:7: budget\.fill: /);
    expect(problems[3]).toBe(
      "policies/p.yaml:8: budget.maxMemories: must be an integer from 1 to 50 (got 51)",
    );
  });

  test("JSON is accepted too", () => {
    const r = parsePolicyText('{"name": "j", "version": 2, "retrieval": {"topK": 5}}', "j.json");
    expect(r.ok && r.policy.retrieval.topK).toBe(5);
  });

  test("errors name the file, the line, the field path and the allowed range", () => {
    const text = [
      "name: bad",
      "version: 1",
      "retrieval:",
      "  topK: 50",
      "  clipSentences: 0",
      "  minScore: 1.5",
      "  maxTokens: 99",
    ].join("\n");
    expect(lines(text)).toEqual([
      "policies/p.yaml:4: retrieval.topK: must be an integer from 1 to 20 (got 50)",
      "policies/p.yaml:5: retrieval.clipSentences: must be an integer from 1 to 5 (got 0)",
      "policies/p.yaml:6: retrieval.minScore: must be a number from 0 to 1 (got 1.5)",
      "policies/p.yaml:7: retrieval.maxTokens: must be an integer from 100 to 3000 (got 99)",
    ]);
  });

  test("unknown keys, bad enums and bad time zones are reported", () => {
    const out = lines(
      "name: x\nversion: 1\nretrieval: {topk: 3}\ntokenizer: gpt2\nformat: {timeZone: Mars/Olympus}\nfallbacks: {ZEP_UNAVAILABLE: retry}\n",
    );
    expect(out).toContain('policies/p.yaml:3: retrieval: unknown key(s) "topk"; did you mean "topK"?');
    expect(
      out.some(
        (l) => l.startsWith("policies/p.yaml:4: tokenizer: Invalid option") && l.includes("o200k_base"),
      ),
    ).toBe(true);
    expect(out.some((l) => l.startsWith("policies/p.yaml:5: format.timeZone: an IANA time zone"))).toBe(true);
    expect(
      out.some((l) => l.startsWith("policies/p.yaml:6: fallbacks.ZEP_UNAVAILABLE: Invalid option")),
    ).toBe(true);
  });

  test("format.envelope: none or tagged, nothing else", () => {
    const ok = parsePolicyText("name: x\nversion: 1\nformat: {envelope: tagged}\n", "policies/p.yaml");
    expect(ok.ok && ok.policy.format).toEqual({ timeZone: "UTC", envelope: "tagged" });
    const out = lines("name: x\nversion: 1\nformat: {timeZone: UTC, envelope: xml}\n");
    expect(out.some((l) => l.startsWith("policies/p.yaml:3: format.envelope: Invalid option"))).toBe(true);
  });

  test("missing name and version are required", () => {
    const out = lines("retrieval: {topK: 3}\n");
    expect(out).toContain("policies/p.yaml:1: name: is required");
    expect(out).toContain("policies/p.yaml:1: version: is required");
  });

  test("YAML syntax errors give the line", () => {
    expect(lines("name: x\nversion: [1,\nretrieval: {\n")[0]).toMatch(
      /^policies\/p\.yaml:\d+: not valid YAML: /,
    );
  });

  test("a non-object document is refused", () => {
    expect(lines("- a\n- b\n")).toEqual([
      "policies/p.yaml:1: must be a mapping (an object) of policy fields",
    ]);
  });

  test("__proto__ and constructor keys are refused, and nothing is polluted", () => {
    const out = lines(
      "name: x\nversion: 1\n__proto__: {polluted: true}\nconstructor: {prototype: {polluted: true}}\n",
    );
    expect(out.join("\n")).toContain('unknown key(s) "__proto__", "constructor"');
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  test("duplicate keys are an error, not a silent override", () => {
    expect(lines("name: x\nversion: 1\nversion: 2\n")[0]).toMatch(/not valid YAML/);
  });

  test("an unreadable file is reported, not thrown", async () => {
    const r = await compilePolicyFile("/nonexistent/policy.yaml");
    expect(r.ok).toBe(false);
    if (!r.ok)
      expect(formatProblem(r.problems[0] ?? { file: "", path: [], message: "" })).toBe(
        "/nonexistent/policy.yaml: cannot read the file (ENOENT)",
      );
  });

  test("every shipped policy validates", async () => {
    const dir = join(__dirname, "../../policies");
    const files = readdirSync(dir).filter((f) => /\.(ya?ml|json)$/.test(f));
    expect(files.length).toBeGreaterThanOrEqual(3);
    for (const f of files) {
      const r = await compilePolicyFile(join(dir, f));
      expect(r.ok ? "ok" : r.problems.map(formatProblem).join("\n")).toBe("ok");
    }
  });
});

describe("canonicalJson", () => {
  test("is independent of key order", () => {
    expect(canonicalJson({ b: 1, a: { d: [1, { z: 1, y: 2 }], c: null } })).toBe(
      canonicalJson({ a: { c: null, d: [1, { y: 2, z: 1 }] }, b: 1 }),
    );
    expect(canonicalJson({ a: 1, b: undefined })).toBe('{"a":1}');
  });
});
