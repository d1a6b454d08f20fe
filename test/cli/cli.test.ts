/**
 * The `memgate` command line (docs/configuration.md#command-line, docs/policy.md#policy-files), driven through `main(argv, io)` exactly as bin/memgate.js
 * calls it, plus one run of the real binary.
 */
import { execFileSync, spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import { parse as parseYaml } from "yaml";
import { getTokenizer } from "../../src/pipeline/tokenizers";
import type { RetrievalPayload } from "../../src/retrieval/payload";
import { cliLines, scratchFiles } from "../helpers/cli";

const ROOT = resolve(__dirname, "../..");
const EXAMPLE_POLICY = join(ROOT, "examples", "replay-policy.yaml");
const EXAMPLE_INPUT = join(ROOT, "examples", "replay-input.json");
const SHIPPED = [
  ...readdirSync(join(ROOT, "policies"))
    .filter((f) => f.endsWith(".yaml"))
    .map((f) => join(ROOT, "policies", f)),
  EXAMPLE_POLICY,
];

const cli = cliLines;

/** Writes `text` to a fresh file in this suite's temporary directory and returns its path. */
const scratch = scratchFiles("memgate-cli-");
const file = scratch.file;

/** `file:line: path: message` (path omitted for whole-file problems such as a YAML syntax error). */
const PROBLEM_LINE = /^(?<file>[^:]+):(?<line>\d+): (?:(?<path>[A-Za-z_][\w.[\]]*): )?(?<message>.+)$/;

describe("memgate policy validate", () => {
  test("the shipped policies and the example are valid: exit 0, one ok line each", async () => {
    const run = await cli("policy", "validate", ...SHIPPED);
    expect(run.err).toEqual([]);
    expect(run.code).toBe(0);
    expect(run.out).toHaveLength(SHIPPED.length);
    SHIPPED.forEach((f, i) => {
      expect(run.out[i]).toMatch(
        new RegExp(`^${escapeRegExp(f)}: ok \\([a-z0-9_.-]+ v\\d+, hash [0-9a-f]{12}\\)$`),
      );
    });
  });

  test("a bad file: exit 2, one `file:line: path: message` line per problem, in file order", async () => {
    const bad = file(
      "bad.yaml",
      [
        "name: Bad Name", // 1
        "version: 1", // 2
        "retrieval:", // 3
        "  topK: 50", // 4
        "  minScore: 2", // 5
        "  clipSentence: 3", // 6: typo of clipSentences
        "interleaving:", // 7
        "  strategy: random", // 8
        "tokenizer: gpt2", // 9
        "",
      ].join("\n"),
    );
    const run = await cli("policy", "validate", bad);
    expect(run.code).toBe(2);
    expect(run.out).toEqual([]);
    const problems = run.err.map((line) => line.match(PROBLEM_LINE)?.groups);
    expect(problems.map((p) => [p?.file, Number(p?.line), p?.path])).toEqual([
      [bad, 1, "name"],
      [bad, 4, "retrieval.topK"],
      [bad, 5, "retrieval.minScore"],
      [bad, 6, "retrieval"],
      [bad, 8, "interleaving.strategy"],
      [bad, 9, "tokenizer"],
    ]);
    expect(run.err[1]).toContain("must be an integer from 1 to 20 (got 50)");
    expect(run.err[3]).toContain('"clipSentence"');
    expect(run.err[4]).toContain("score_first");
  });

  test("not YAML, not a mapping, missing fields, unreadable: each is one line, exit 2", async () => {
    const broken = file("broken.yaml", "name: x\nversion: 1\nretrieval: {topK: 3\n");
    const list = file("list.yaml", "- name: x\n");
    const empty = file("missing.yaml", "description: no name, no version\n");
    const absent = scratch.path("does-not-exist.yaml");
    const run = await cli("policy", "validate", broken, list, empty, absent);
    expect(run.code).toBe(2);
    for (const line of run.err) expect(line).not.toContain("\n");
    expect(run.err).toEqual([
      expect.stringMatching(new RegExp(`^${escapeRegExp(broken)}:\\d+: not valid YAML: `)),
      `${list}:1: must be a mapping (an object) of policy fields`,
      expect.stringMatching(new RegExp(`^${escapeRegExp(empty)}(:\\d+)?: name: is required$`)),
      expect.stringMatching(new RegExp(`^${escapeRegExp(empty)}(:\\d+)?: version: is required$`)),
      `${absent}: cannot read the file (ENOENT)`,
    ]);
  });

  test("the same name in two files is a problem of the second, with the line of its name", async () => {
    const copy = file("copy.yaml", "# another default\nversion: 2\nname: default\n");
    const run = await cli("policy", "validate", join(ROOT, "policies", "default.yaml"), copy);
    expect(run.code).toBe(2);
    expect(run.out).toHaveLength(1);
    expect(run.err).toEqual([
      `${copy}:3: name: policy "default" is also defined in ${join(ROOT, "policies", "default.yaml")}`,
    ]);
  });

  test("a custom pattern RE2 cannot compile rejects the policy, naming the pattern and its line", async () => {
    const re2 = file(
      "re2.yaml",
      [
        "name: re2-bad",
        "version: 1",
        "redaction:",
        "  enabled: true",
        "  patterns:",
        '    - "\\\\bEMP-\\\\d{6}\\\\b"',
        "    - name: backref",
        '      pattern: "(a)\\\\1"',
        "    - name: lookahead",
        '      pattern: "foo(?=bar)"',
        "",
      ].join("\n"),
    );
    const run = await cli("policy", "validate", re2);
    expect(run.code).toBe(2);
    const problems = run.err.map((line) => line.match(PROBLEM_LINE)?.groups);
    expect(problems.map((p) => [Number(p?.line), p?.path])).toEqual([[7, "redaction.patterns[1]"]]);
    expect(run.err[0]).toContain("not a valid RE2 pattern");
    // Compilation stops at the first bad pattern; fixing it reveals the next one.
    const fixed = file("re2-fixed.yaml", readFileSync(re2, "utf8").replace("(a)\\\\1", "(a)a"));
    const again = await cli("policy", "validate", fixed);
    expect(again.code).toBe(2);
    expect(again.err).toEqual([
      expect.stringMatching(/:9: redaction\.patterns\[2\]: .*not a valid RE2 pattern/),
    ]);
  });

  test("no file at all is a usage error (exit 2)", async () => {
    const run = await cli("policy", "validate");
    expect(run.code).toBe(2);
    expect(run.err.join("\n")).toContain("missing required argument");
  });
});

describe("memgate policy schema", () => {
  type Schema = Record<string, unknown>;
  let schema: Schema = {};

  beforeAll(async () => {
    const run = await cli("policy", "schema");
    expect(run.code).toBe(0);
    expect(run.out).toHaveLength(1);
    schema = JSON.parse(run.out[0] ?? "") as Schema;
  });

  const at = (s: unknown, ...path: string[]): unknown =>
    path.reduce<unknown>((node, key) => (isObject(node) ? node[key] : undefined), s);

  test("is a JSON Schema with the contract's ranges and names", () => {
    expect(schema.$schema).toBe("https://json-schema.org/draft/2020-12/schema");
    expect(schema.type).toBe("object");
    expect(schema.required).toEqual(["name", "version"]);
    expect(schema.additionalProperties).toBe(false);
    const retrieval = at(schema, "properties", "retrieval", "properties");
    const range = (key: string) => ["type", "minimum", "maximum"].map((k) => at(retrieval, key, k));
    expect(range("topK")).toEqual(["integer", 1, 20]);
    expect(range("clipSentences")).toEqual(["integer", 1, 5]);
    expect(range("maxTokens")).toEqual(["integer", 100, 3000]);
    expect(range("minScore")).toEqual(["number", 0, 1]);
    expect(at(retrieval, "searchType", "enum")).toEqual(["hybrid", "semantic", "keyword"]);
    expect(at(schema, "properties", "interleaving", "properties", "strategy", "enum")).toEqual([
      "alternate",
      "score_first",
      "recency_first",
      "weighted",
    ]);
    expect(at(schema, "properties", "tokenizer", "enum")).toEqual(["o200k_base", "cl100k_base", "approx"]);
    expect(at(schema, "properties", "backend", "enum")).toEqual(["local", "zep", "openmemory"]);
    expect(at(schema, "properties", "redaction", "properties", "detectors", "items", "enum")).toEqual([
      "email",
      "ssn",
      "credit_card",
      "phone",
      "ipv4",
      "iban",
      "ipv6",
      "private_key",
      "jwt",
      "github_token",
      "aws_access_key",
      "slack_token",
      "stripe_key",
      "google_api_key",
      "openai_key",
      "generic_secret",
    ]);
    expect(at(schema, "properties", "fallbacks", "properties", "ZEP_UNAVAILABLE", "enum")).toEqual([
      "skip",
      "empty",
      "cache",
    ]);
  });

  test("accepts every shipped policy and rejects what the loader rejects", () => {
    for (const f of SHIPPED) {
      expect([relative(ROOT, f), validate(schema, parseYaml(readFileSync(f, "utf8")))]).toEqual([
        relative(ROOT, f),
        [],
      ]);
    }
    expect(validate(schema, { name: "x", version: 1, retrieval: { topK: 50 } })).toEqual([
      "/retrieval/topK: above maximum 20",
    ]);
    expect(validate(schema, { name: "x", version: 1, retrieval: { clipSentence: 2 } })).toEqual([
      "/retrieval: unknown key clipSentence",
    ]);
    expect(validate(schema, { name: "x", version: 1, budget: { relative: { share: 0 } } })).toEqual([
      "/budget/relative/share: not above 0",
    ]);
    expect(validate(schema, { version: 1, tokenizer: "gpt2" })).toEqual([
      ": missing name",
      '/tokenizer: not one of ["o200k_base","cl100k_base","approx"]',
    ]);
  });
});

describe("memgate replay", () => {
  let payload: RetrievalPayload;

  beforeAll(async () => {
    const run = await cli("replay", "--policy", EXAMPLE_POLICY, "--input", EXAMPLE_INPUT, "--explain");
    expect(run.err).toEqual([]);
    expect(run.code).toBe(0);
    expect(run.out).toHaveLength(1);
    payload = JSON.parse(run.out[0] ?? "") as RetrievalPayload;
  });

  const changes = (stage: string) => {
    const trace = payload.trace?.find((t) => t.stage === stage);
    if (trace === undefined) throw new Error(`no ${stage} in the trace`);
    return trace;
  };
  const memory = (id: string) => {
    const m = payload.memories.find((x) => x.id === id);
    if (m === undefined) throw new Error(`${id} is not in the output`);
    return m;
  };

  test("prints {memories, metadata, systemPrompt, trace}; every stage ran, in order", () => {
    expect(Object.keys(payload)).toEqual(["memories", "metadata", "systemPrompt", "trace"]);
    expect(payload.metadata.appliedFilters).toEqual([
      "redaction",
      "score_threshold",
      "deduplication",
      "interleave:alternate",
      "clip",
      "token_budget",
    ]);
    // The trace also shows what was fetched and the topK cut as its own stage (explain only).
    expect(payload.trace?.map((t) => t.stage)).toEqual([
      "fetch",
      "redaction",
      "score_threshold",
      "deduplication",
      "top_k",
      "interleave",
      "clip",
      "token_budget",
    ]);
    expect(payload.trace?.map((t) => [t.in, t.out])).toEqual([
      [14, 14],
      [14, 14],
      [14, 13],
      [13, 11],
      [11, 6],
      [6, 6],
      [6, 6],
      [6, 4],
    ]);
    expect(payload.metadata).toMatchObject({
      totalResults: 14,
      includedResults: 4,
      config: { topK: 6, clipSentences: 2, maxTokens: 120, searchType: "hybrid", minScore: 0.3 },
      policy: { name: "replay-example", version: 1, hash: expect.stringMatching(/^[0-9a-f]{64}$/) },
      backend: "replay",
      cache: "bypass",
      fallback: null,
    });
  });

  test("redaction: the card, the e-mail and the phone number are gone, and the trace says which", () => {
    expect(changes("redaction").changes).toEqual([
      { id: "m05", reason: "redacted:email" },
      { id: "m05", reason: "redacted:credit_card" },
      { id: "m05", reason: "redacted:phone" },
      { id: "m06", reason: "redacted:phone" },
    ]);
    const m05 = memory("m05");
    expect(m05.provenance.wasRedacted).toBe(true);
    expect(m05.content).not.toMatch(/4111|@|555/);
    expect(m05.content.match(/\[REDACTED\]/g)).toHaveLength(3);
    expect(JSON.stringify(payload)).not.toMatch(/4111 1111|maria\.santos@|555-01/);
  });

  test("threshold and dedup: below_min_score, exact and near duplicates, beyond_topK", () => {
    expect(changes("score_threshold").changes).toEqual([{ id: "m08", reason: "below_min_score" }]);
    expect(changes("deduplication").changes).toEqual([
      { id: "m02", reason: "duplicate_of:m01" }, // other case, spaces and "!!"
      { id: "m03", reason: "duplicate_of:m01" }, // same text and score, older
    ]);
    expect(changes("top_k").detail).toEqual({ topK: 6, reserve: 0 });
    expect(new Set(changes("top_k").changes.map((c) => c.reason))).toEqual(new Set(["beyond_topK"]));
    expect(changes("top_k").changes.map((c) => c.id)).toEqual(["m06", "m13", "m10", "m11", "m12"]);
  });

  test("interleave: the newest memory comes second although four score higher", () => {
    expect(payload.memories.map((m) => m.id)).toEqual(["m01", "m05", "m04", "m07"]);
    expect(memory("m05").score).toBeLessThan(memory("m04").score);
    expect(memory("m05").score).toBeLessThan(memory("m07").score);
  });

  test("clip: two sentences, not cut at Dr., 3.5, e.g. or p.m.; originalLength is the length before", () => {
    expect(changes("clip").changes).toEqual([
      { id: "m04", reason: "clipped" },
      { id: "m07", reason: "clipped" },
    ]);
    const m04 = memory("m04");
    expect(m04.content).toBe(
      "My cardiologist, Dr. Okafor, wants to see me again in 3.5 weeks. " +
        "She said to cut back on caffeine, e.g. no espresso after 2 p.m. and only decaf at dinner....",
    );
    expect(m04.provenance.originalLength).toBe(238);
  });

  test("budget: three fit, the fourth is truncated with ..., the rest dropped; totalTokens is exact", () => {
    const budget = changes("token_budget");
    expect(budget.changes).toEqual([
      { id: "m07", reason: "truncated_by_budget" },
      { id: "m14", reason: "dropped_by_budget" },
      { id: "m09", reason: "dropped_by_budget" },
    ]);
    expect(memory("m07").content).toMatch(/^Maria is planning two weeks in Lisbon\b.*[^.]\.\.\.$/);
    const o200k = getTokenizer("o200k_base");
    const used = payload.memories.reduce((sum, m) => sum + o200k.count(m.content), 0);
    expect(payload.metadata.totalTokens).toBe(used);
    expect(budget.detail).toEqual({
      maxTokens: 120,
      usedTokens: used,
      tokenizer: "o200k_base",
      packing: "truncate",
    });
    expect(used).toBeLessThanOrEqual(120);
  });

  test("the system prompt has every section, with New York times", () => {
    expect(payload.systemPrompt).toBe(
      [
        "## Relevant Context from Previous Conversations",
        "",
        "### Previous Messages",
        `[2026-02-27T16:05:00-05:00] assistant: ${memory("m05").content}`,
        `[2025-03-14T11:30:00-04:00] user: ${memory("m04").content}`,
        "",
        "### Known Facts",
        "- Maria is allergic to peanuts and always carries an EpiPen. (confidence: 0.93)",
        "",
        "### Conversation Summaries",
        `- ${memory("m07").content}`,
        "",
        "_Retrieved 4 memories_",
        "",
      ].join("\n"),
    );
  });

  test("without --explain there is no trace, and the rest is the same", async () => {
    const run = await cli("replay", "--policy", EXAMPLE_POLICY, "--input", EXAMPLE_INPUT);
    expect(run.code).toBe(0);
    const plain = JSON.parse(run.out[0] ?? "") as RetrievalPayload;
    expect(Object.keys(plain)).toEqual(["memories", "metadata", "systemPrompt"]);
    expect(plain.memories).toEqual(payload.memories);
    expect(plain.systemPrompt).toBe(payload.systemPrompt);
    expect({ ...plain.metadata, queryTime: 0 }).toEqual({ ...payload.metadata, queryTime: 0 });
  });

  /** Exit 2, nothing on stdout, exactly one line on stderr, which is returned. */
  async function rejected(...argv: string[]): Promise<string> {
    const run = await cli(...argv);
    expect(run.code).toBe(2);
    expect(run.out).toEqual([]);
    expect(run.err).toHaveLength(1);
    expect(run.err[0]).not.toContain("\n");
    return run.err[0] ?? "";
  }

  test("invalid input: bad JSON, a schema violation naming its path, a missing file", async () => {
    const badJson = file("bad.json", '{"query": "x", "userId": "u", "results": [');
    expect(await rejected("replay", "--policy", EXAMPLE_POLICY, "--input", badJson)).toMatch(
      new RegExp(`^${escapeRegExp(badJson)}: not valid JSON: `),
    );

    const input = JSON.parse(readFileSync(EXAMPLE_INPUT, "utf8")) as {
      results: Array<Record<string, unknown>>;
    };
    const patch = (i: number, change: Record<string, unknown>) => {
      const copy = structuredClone(input);
      copy.results[i] = { ...copy.results[i], ...change };
      return file(`patched-${i}.json`, JSON.stringify(copy));
    };
    expect(await rejected("replay", "--policy", EXAMPLE_POLICY, "--input", patch(3, { score: 1.5 }))).toMatch(
      /: results\[3\]\.score: /,
    );
    expect(
      await rejected("replay", "--policy", EXAMPLE_POLICY, "--input", patch(7, { timestamp: "yesterday" })),
    ).toMatch(/: results\[7\]\.timestamp: must be an ISO 8601 date-time$/);
    expect(
      await rejected("replay", "--policy", EXAMPLE_POLICY, "--input", patch(0, { typ: "fact" })),
    ).toMatch(/: results\[0\]: .*"typ"/);
    const noUser = file("no-user.json", JSON.stringify({ query: "q", results: [] }));
    expect(await rejected("replay", "--policy", EXAMPLE_POLICY, "--input", noUser)).toMatch(/: userId: /);
    const absent = scratch.path("absent.json");
    expect(await rejected("replay", "--policy", EXAMPLE_POLICY, "--input", absent)).toBe(
      `${absent}: cannot read the file`,
    );
  });

  test("an invalid policy: exit 2 with its first problem, `file:line: path: message`", async () => {
    const bad = file("replay-bad.yaml", "name: r\nversion: 1\nretrieval:\n  maxTokens: 50\n");
    expect(await rejected("replay", "--policy", bad, "--input", EXAMPLE_INPUT)).toBe(
      `${bad}:4: retrieval.maxTokens: must be an integer from 100 to 3000 (got 50)`,
    );
    const re2 = file(
      "replay-re2.yaml",
      'name: r\nversion: 1\nredaction:\n  patterns:\n    - name: x\n      pattern: "(?<=a)b"\n',
    );
    expect(await rejected("replay", "--policy", re2, "--input", EXAMPLE_INPUT)).toMatch(
      new RegExp(`^${escapeRegExp(re2)}:5: redaction\\.patterns\\[0\\]: .*not a valid RE2 pattern`),
    );
  });

  test("a missing option is a usage error (exit 2)", async () => {
    const run = await cli("replay", "--policy", EXAMPLE_POLICY);
    expect(run.code).toBe(2);
    expect(run.err.join("\n")).toContain("--input");
  });

  test("an empty candidate list gives an empty payload, not an error", async () => {
    const empty = file("empty.json", JSON.stringify({ query: "q", userId: "u-1", results: [] }));
    const run = await cli("replay", "--policy", EXAMPLE_POLICY, "--input", empty);
    expect(run.code).toBe(0);
    const p = JSON.parse(run.out[0] ?? "") as RetrievalPayload;
    expect([p.memories, p.systemPrompt, p.metadata.totalTokens]).toEqual([[], "", 0]);
  });
});

describe("other commands", () => {
  test("an unknown command exits 2 and says so", async () => {
    const run = await cli("frobnicate");
    expect(run.code).toBe(2);
    expect(run.out).toEqual([]);
    expect(run.err.join("\n")).toMatch(/unknown command 'frobnicate'/);
  });

  test("keys hash prints the key's SHA-256 as 64 hex characters", async () => {
    const key = "mg_test_key_for_the_cli_suite";
    const run = await cli("keys", "hash", key);
    expect(run.code).toBe(0);
    expect(run.out).toEqual([createHash("sha256").update(key, "utf8").digest("hex")]);
    expect(run.out[0]).toMatch(/^[0-9a-f]{64}$/);
  });
});

describe("the installed binary", () => {
  const entry = join(ROOT, "dist", "cli", "main.js");

  beforeAll(() => {
    // `npm test` builds dist/ first; run alone, jest builds it here rather than skipping this test.
    if (!existsSync(entry)) {
      execFileSync(process.execPath, [require.resolve("typescript/bin/tsc"), "-p", "tsconfig.build.json"], {
        cwd: ROOT,
        stdio: "inherit",
      });
    }
    if (!existsSync(entry)) throw new Error(`${entry} is missing after building: run \`npm run build\``);
  });

  test("node bin/memgate.js policy validate policies/default.yaml exits 0 with one ok line", () => {
    const child = spawnSync(
      process.execPath,
      ["bin/memgate.js", "policy", "validate", "policies/default.yaml"],
      {
        cwd: ROOT,
        encoding: "utf8",
      },
    );
    expect(child.stderr).toBe("");
    expect(child.stdout).toMatch(/^policies\/default\.yaml: ok \(default v\d+, hash [0-9a-f]{12}\)\n$/);
    expect(child.status).toBe(0);
  });
});

// ---- helpers -------------------------------------------------------------------------------------------

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

/**
 * A JSON Schema validator for exactly the keywords `memgate policy schema` emits (no dependency). A keyword it
 * does not know fails the test rather than being ignored, so a schema change cannot make this check vacuous.
 */
function validate(schema: unknown, value: unknown, at = ""): string[] {
  if (!isObject(schema)) throw new Error(`${at}: schema node is not an object`);
  const errors: string[] = [];
  const KNOWN = new Set([
    "$schema",
    "$id",
    "title",
    "description",
    "default",
    "type",
    "properties",
    "required",
    "additionalProperties",
    "enum",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "minLength",
    "maxLength",
    "pattern",
    "items",
    "minItems",
    "maxItems",
    "anyOf",
  ]);
  for (const key of Object.keys(schema))
    if (!KNOWN.has(key)) throw new Error(`${at}: unsupported keyword ${key}`);

  if (Array.isArray(schema.anyOf)) {
    const branches = schema.anyOf.map((s) => validate(s, value, at));
    if (branches.every((e) => e.length > 0)) errors.push(`${at}: matches no anyOf branch`);
  }
  const type = schema.type;
  if (type !== undefined) {
    const ok =
      (type === "object" && isObject(value)) ||
      (type === "array" && Array.isArray(value)) ||
      (type === "string" && typeof value === "string") ||
      (type === "boolean" && typeof value === "boolean") ||
      (type === "number" && typeof value === "number") ||
      (type === "integer" && Number.isInteger(value));
    if (!ok) return [...errors, `${at}: not of type ${String(type)}`];
  }
  if (Array.isArray(schema.enum) && !schema.enum.includes(value)) {
    errors.push(`${at}: not one of ${JSON.stringify(schema.enum)}`);
  }
  if (typeof value === "number") {
    if (typeof schema.minimum === "number" && value < schema.minimum)
      errors.push(`${at}: below minimum ${schema.minimum}`);
    if (typeof schema.maximum === "number" && value > schema.maximum)
      errors.push(`${at}: above maximum ${schema.maximum}`);
    if (typeof schema.exclusiveMinimum === "number" && value <= schema.exclusiveMinimum)
      errors.push(`${at}: not above ${schema.exclusiveMinimum}`);
    if (typeof schema.exclusiveMaximum === "number" && value >= schema.exclusiveMaximum)
      errors.push(`${at}: not below ${schema.exclusiveMaximum}`);
  }
  if (typeof value === "string") {
    const length = [...value].length;
    if (typeof schema.minLength === "number" && length < schema.minLength) errors.push(`${at}: too short`);
    if (typeof schema.maxLength === "number" && length > schema.maxLength) errors.push(`${at}: too long`);
    if (typeof schema.pattern === "string" && !new RegExp(schema.pattern, "u").test(value)) {
      errors.push(`${at}: does not match ${schema.pattern}`);
    }
  }
  if (Array.isArray(value)) {
    if (typeof schema.minItems === "number" && value.length < schema.minItems)
      errors.push(`${at}: too few items`);
    if (typeof schema.maxItems === "number" && value.length > schema.maxItems)
      errors.push(`${at}: too many items`);
    if (schema.items !== undefined) {
      for (const [i, v] of value.entries()) errors.push(...validate(schema.items, v, `${at}/${i}`));
    }
  }
  if (isObject(value)) {
    const properties = isObject(schema.properties) ? schema.properties : {};
    if (Array.isArray(schema.required)) {
      for (const key of schema.required)
        if (!(String(key) in value)) errors.push(`${at}: missing ${String(key)}`);
    }
    for (const [key, v] of Object.entries(value)) {
      if (key in properties) errors.push(...validate(properties[key], v, `${at}/${key}`));
      else if (schema.additionalProperties === false) errors.push(`${at}: unknown key ${key}`);
    }
  }
  return errors;
}
