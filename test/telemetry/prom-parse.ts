/**
 * A strict parser of the Prometheus text exposition format 0.0.4
 * (https://prometheus.io/docs/instrumenting/exposition_formats/), enough to prove `/metrics` is well formed.
 * Throws with the line number on the first violation:
 * - every line is `# HELP name text`, `# TYPE name type`, another `#` comment, blank, or a sample
 *   `name{label="value",…} value [timestamp]` with valid names, escapes and float values;
 * - at most one HELP and one TYPE per family, before its samples; a family's samples are contiguous;
 * - counter samples end in `_total`; histogram samples are `_bucket` (with `le`), `_sum`, `_count`, buckets are
 *   cumulative and end with `le="+Inf"` equal to `_count`; no two samples share name and labels.
 */

export type MetricType = "counter" | "gauge" | "histogram" | "summary" | "untyped";

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

export interface Family {
  name: string;
  type: MetricType;
  help?: string;
  samples: Sample[];
}

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;
const TYPES = new Set(["counter", "gauge", "histogram", "summary", "untyped"]);

function parseValue(text: string, where: string): number {
  if (text === "+Inf") return Number.POSITIVE_INFINITY;
  if (text === "-Inf") return Number.NEGATIVE_INFINITY;
  if (text === "NaN") return Number.NaN;
  if (!/^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(text)) throw new Error(`${where}: bad value "${text}"`);
  return Number(text);
}

/** `{a="x",b="y\"z"}` from position `i` of `line`; returns the labels and the index after `}`. */
function parseLabels(
  line: string,
  start: number,
  where: string,
): { labels: Record<string, string>; end: number } {
  const labels: Record<string, string> = {};
  let i = start + 1;
  while (line[i] !== "}") {
    const eq = line.indexOf("=", i);
    if (eq === -1) throw new Error(`${where}: label without "="`);
    const name = line.slice(i, eq);
    if (!LABEL_NAME.test(name)) throw new Error(`${where}: bad label name "${name}"`);
    if (name in labels) throw new Error(`${where}: label "${name}" repeated`);
    if (line[eq + 1] !== '"') throw new Error(`${where}: label value not quoted`);
    let value = "";
    let j = eq + 2;
    for (;;) {
      const c = line[j];
      if (c === undefined) throw new Error(`${where}: unterminated label value`);
      if (c === '"') break;
      if (c === "\\") {
        const next = line[j + 1];
        if (next === "\\" || next === '"') value += next;
        else if (next === "n") value += "\n";
        else throw new Error(`${where}: bad escape "\\${next}"`);
        j += 2;
        continue;
      }
      value += c;
      j += 1;
    }
    labels[name] = value;
    i = j + 1;
    if (line[i] === ",") i += 1;
    else if (line[i] !== "}") throw new Error(`${where}: expected "," or "}" after a label`);
  }
  return { labels, end: i + 1 };
}

function familyOf(sample: string, families: Map<string, Family>): Family | undefined {
  for (const suffix of ["_bucket", "_sum", "_count", ""]) {
    if (!sample.endsWith(suffix)) continue;
    const f = families.get(sample.slice(0, sample.length - suffix.length));
    if (f && (suffix === "" ? f.type !== "histogram" : f.type === "histogram" || f.type === "summary"))
      return f;
  }
  return undefined;
}

function checkHistogram(f: Family): void {
  const series = new Map<string, Sample[]>();
  for (const s of f.samples) {
    if (!s.name.endsWith("_bucket")) continue;
    if (s.labels.le === undefined) throw new Error(`${f.name}: bucket without le`);
    const { le: _le, ...rest } = s.labels;
    const key = JSON.stringify(rest);
    series.set(key, [...(series.get(key) ?? []), s]);
  }
  for (const [key, buckets] of series) {
    let previous = -1;
    for (const b of buckets) {
      if (b.value < previous) throw new Error(`${f.name}${key}: buckets not cumulative`);
      previous = b.value;
    }
    const last = buckets[buckets.length - 1];
    if (last?.labels.le !== "+Inf") throw new Error(`${f.name}${key}: no le="+Inf" bucket last`);
    const count = f.samples.find((s) => s.name === `${f.name}_count` && JSON.stringify(s.labels) === key);
    if (count?.value !== last.value) throw new Error(`${f.name}${key}: +Inf bucket differs from _count`);
  }
}

export function parsePrometheusText(text: string): Map<string, Family> {
  const families = new Map<string, Family>();
  const seen = new Set<string>();
  const finished = new Set<string>();
  let current: Family | undefined;
  const declare = (name: string, where: string): Family => {
    if (!NAME.test(name)) throw new Error(`${where}: bad metric name "${name}"`);
    let f = families.get(name);
    if (!f) {
      f = { name, type: "untyped", samples: [] };
      families.set(name, f);
    }
    if (f.samples.length > 0) throw new Error(`${where}: HELP/TYPE after samples of ${name}`);
    return f;
  };
  const lines = text.split("\n");
  if (lines.pop() !== "") throw new Error("the exposition must end with a newline");
  lines.forEach((line, n) => {
    const where = `line ${n + 1}`;
    if (line.trim() === "") return;
    const meta = /^# (HELP|TYPE) (\S+)(?: (.*))?$/.exec(line);
    if (meta) {
      const [, kind, name = "", rest = ""] = meta;
      const f = declare(name, where);
      if (kind === "TYPE") {
        if (!TYPES.has(rest) || f.type !== "untyped") throw new Error(`${where}: bad or repeated TYPE`);
        f.type = rest as MetricType;
      } else {
        if (f.help !== undefined) throw new Error(`${where}: repeated HELP for ${name}`);
        f.help = rest;
      }
      return;
    }
    if (line.startsWith("#")) return;
    const nameEnd = line.search(/[{ ]/);
    const name = nameEnd === -1 ? line : line.slice(0, nameEnd);
    if (!NAME.test(name)) throw new Error(`${where}: bad sample name "${name}"`);
    let labels: Record<string, string> = {};
    let i = nameEnd;
    if (line[i] === "{") ({ labels, end: i } = parseLabels(line, i, where));
    const parts = line.slice(i).trim().split(/\s+/);
    if (line[i] !== " " || parts.length < 1 || parts.length > 2)
      throw new Error(`${where}: bad sample "${line}"`);
    const value = parseValue(parts[0] ?? "", where);
    if (parts[1] !== undefined && !/^-?\d+$/.test(parts[1])) throw new Error(`${where}: bad timestamp`);
    const family = familyOf(name, families) ?? declare(name, where);
    if (family !== current) {
      if (current) finished.add(current.name);
      if (finished.has(family.name))
        throw new Error(`${where}: samples of ${family.name} are not contiguous`);
      current = family;
    }
    if (family.type === "counter" && !name.endsWith("_total"))
      throw new Error(`${where}: counter without _total`);
    const id = `${name}${JSON.stringify(labels)}`;
    if (seen.has(id)) throw new Error(`${where}: duplicate sample ${id}`);
    seen.add(id);
    family.samples.push({ name, labels, value });
  });
  for (const f of families.values()) if (f.type === "histogram") checkHistogram(f);
  return families;
}
