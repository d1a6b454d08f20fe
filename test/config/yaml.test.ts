import { z } from "zod";
import { addLines, formatProblem, parseYaml, problemsFromZod } from "../../src/config/yaml";

const schema = z.object({ a: z.object({ n: z.number().max(3), s: z.string() }).strict() }).strict();
const text = ["a:", "  n: 5", "  extra: 1", "  more: 2"].join("\n");

function parsed(t: string, file = "f.yaml") {
  const r = parseYaml(t, file);
  if (!r.ok) throw new Error(r.problems.map(formatProblem).join("\n"));
  return r;
}

describe("parseYaml", () => {
  test("a value and the line of each path (the deepest part that exists)", () => {
    const { value, lineOf } = parsed(text);
    expect(value).toEqual({ a: { n: 5, extra: 1, more: 2 } });
    expect(lineOf(["a", "more"])).toBe(4);
    expect(lineOf(["a", "absent"])).toBe(2);
  });

  test("syntax errors and duplicate keys name the format the file claims", () => {
    const yaml = parseYaml("a: 1\na: 2\n", "f.yaml");
    expect(yaml.ok ? [] : yaml.problems.map(formatProblem)).toEqual([
      expect.stringMatching(/^f\.yaml:\d+: not valid YAML: /),
    ]);
    const json = parseYaml('{"a": ', "f.json");
    expect(json.ok ? [] : json.problems.map(formatProblem)[0]).toMatch(/^f\.json:\d+: not valid JSON: /);
  });
});

describe("problemsFromZod", () => {
  const { value, lineOf } = parsed(text);
  const error = schema.safeParse(value).error;
  if (error === undefined) throw new Error("expected an error");

  test("by default: values not echoed, unknown keys grouped on the line of the first, missing is required", () => {
    expect(problemsFromZod("f.yaml", error, { lineOf, input: value }).map(formatProblem)).toEqual([
      expect.stringMatching(/^f\.yaml:2: a\.n: .*3$/),
      "f.yaml:2: a.s: is required",
      'f.yaml:3: a: unknown key(s) "extra", "more"',
    ]);
  });

  test("echoValues appends a scalar value; unknownKey reports each key on its own line", () => {
    const lines = problemsFromZod("f.yaml", error, {
      lineOf,
      input: value,
      echoValues: true,
      unknownKey: (_parent, key) => `no such key (${key.length} chars)`,
    }).map(formatProblem);
    expect(lines).toEqual([
      expect.stringMatching(/^f\.yaml:2: a\.n: .* \(got 5\)$/),
      "f.yaml:2: a.s: is required",
      "f.yaml:3: a.extra: no such key (5 chars)",
      "f.yaml:4: a.more: no such key (4 chars)",
    ]);
  });
});

test("addLines finds the line of a problem found after parsing, and leaves a path not in the file without one", () => {
  const problems = addLines(
    [
      { file: "f.yaml", path: ["a", "more"], message: "m" },
      { file: "f.yaml", path: ["b"], message: "m" },
      { file: "f.yaml", line: 9, path: ["a"], message: "m" },
    ],
    text,
  );
  expect(problems.map((p) => p.line)).toEqual([4, undefined, 9]);
});
