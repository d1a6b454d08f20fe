/**
 * Checks PromQL expressions (dashboard panels, alert rules) against a Prometheus text exposition, with
 * Prometheus's own grammar (@prometheus-io/lezer-promql, the parser of the Prometheus UI):
 * - the expression parses with no error node;
 * - every selector's metric name is a sample name the exposition has (`_bucket`, `_sum`, `_count` included);
 * - every label a selector matches on is a label of that metric's samples, and the value it compares with is one
 *   the samples hold (`=`, `!=`: that value; `=~`, `!~` made of literal alternatives `a|b`: each of them; any
 *   other regex: at least one value matches it), so a typo in a label value is caught too;
 * - every label an aggregation groups by (`by (…)`, `without (…)`) or a binary operation matches on
 *   (`on (…)`, `ignoring (…)`) is a label of the metrics inside it.
 * `job` and `instance` are allowed everywhere: Prometheus attaches them when it scrapes, so `/metrics` has none.
 */
import type { SyntaxNode } from "@lezer/common";
import { parser } from "@prometheus-io/lezer-promql";
import type { Family } from "../telemetry/prom-parse";

/** Labels Prometheus adds to every scraped series (its target labels). */
export const TARGET_LABELS: ReadonlySet<string> = new Set(["job", "instance"]);

/** Sample name (e.g. `x_bucket`) → the label sets of its samples. */
export type SeriesIndex = ReadonlyMap<string, ReadonlyArray<Record<string, string>>>;

export function indexSeries(families: ReadonlyMap<string, Family>): SeriesIndex {
  const index = new Map<string, Array<Record<string, string>>>();
  for (const f of families.values()) {
    for (const s of f.samples) index.set(s.name, [...(index.get(s.name) ?? []), s.labels]);
  }
  return index;
}

export interface Selector {
  metric: string;
  matchers: Array<{ label: string; op: string; value: string }>;
}

export interface Analysis {
  /** Syntax errors (positions in the expression). */
  errors: string[];
  selectors: Selector[];
  /** Labels named by `by`/`without`/`on`/`ignoring`, with the metrics they apply to. */
  groupings: Array<{ labels: string[]; metrics: string[] }>;
}

const text = (expr: string, n: SyntaxNode): string => expr.slice(n.from, n.to);

/** A PromQL string literal's value ("…", '…' or `…`), with its escapes resolved. */
function unquote(literal: string): string {
  const quote = literal[0];
  const body = literal.slice(1, -1);
  if (quote === "`") return body;
  return body.replace(/\\(.)/g, (_m, c: string) => ({ n: "\n", t: "\t", r: "\r" })[c] ?? c);
}

function childrenOf(n: SyntaxNode): SyntaxNode[] {
  const out: SyntaxNode[] = [];
  for (let c = n.firstChild; c !== null; c = c.nextSibling) out.push(c);
  return out;
}

function descendants(n: SyntaxNode, name: string): SyntaxNode[] {
  return childrenOf(n).flatMap((c) => [...(c.name === name ? [c] : []), ...descendants(c, name)]);
}

function selectorOf(expr: string, node: SyntaxNode): Selector {
  let metric = "";
  const matchers: Selector["matchers"] = [];
  for (const c of childrenOf(node)) {
    if (c.name === "Identifier") metric = text(expr, c);
    if (c.name !== "LabelMatchers") continue;
    for (const m of childrenOf(c)) {
      if (m.name === "QuotedLabelMatcher") {
        // {"metric_name"} or {"label"="value"} (UTF-8 names): only the bare metric-name form is used here.
        const literal = m.getChild("StringLiteral");
        const op = m.getChild("MatchOp");
        if (literal !== null && op === null) metric = unquote(text(expr, literal));
        else matchers.push({ label: "(quoted)", op: "?", value: text(expr, m) });
        continue;
      }
      if (m.name !== "UnquotedLabelMatcher") continue;
      const label = m.getChild("LabelName");
      const op = m.getChild("MatchOp");
      const value = m.getChild("StringLiteral");
      if (label === null || op === null || value === null) continue;
      const l = text(expr, label);
      const v = unquote(text(expr, value));
      if (l === "__name__" && text(expr, op) === "=") metric = v;
      else matchers.push({ label: l, op: text(expr, op), value: v });
    }
  }
  return { metric, matchers };
}

/** Parses one expression and collects its selectors and grouping labels. */
export function analyse(expr: string): Analysis {
  const tree = parser.parse(expr);
  const errors: string[] = [];
  tree.iterate({
    enter(n) {
      if (n.type.isError) errors.push(`syntax error at ${n.from}: "${expr.slice(n.from, n.from + 20)}"`);
    },
  });
  const top = tree.topNode;
  const selectors = descendants(top, "VectorSelector").map((n) => selectorOf(expr, n));
  const groupings: Analysis["groupings"] = [];
  for (const kind of ["AggregateExpr", "BinaryExpr"]) {
    for (const n of descendants(top, kind)) {
      const modifier =
        kind === "AggregateExpr" ? n.getChild("AggregateModifier") : n.getChild("MatchingModifierClause");
      if (modifier === null) continue;
      const labels = childrenOf(modifier)
        .filter((c) => c.name === "GroupingLabels")
        .flatMap((g) => childrenOf(g).filter((c) => c.name === "LabelName" || c.name === "QuotedLabelName"))
        .map((c) => (c.name === "QuotedLabelName" ? unquote(text(expr, c)) : text(expr, c)));
      const metrics = descendants(n, "VectorSelector").map((s) => selectorOf(expr, s).metric);
      groupings.push({ labels, metrics });
    }
  }
  return { errors, selectors, groupings };
}

const LITERAL_ALTERNATION = /^[A-Za-z0-9_.+-]+(\|[A-Za-z0-9_.+-]+)*$/;

/**
 * What is wrong with `expr` against the exposition indexed in `series` ([] when nothing is). `skip` names the
 * selectors not to look for in it (series Prometheus makes itself, or metrics of a feature this exposition's
 * server did not run: test/ops/monitoring-files.ts).
 */
export function problemsOf(
  expr: string,
  series: SeriesIndex,
  skip: (s: Selector) => boolean = () => false,
): string[] {
  const { errors, selectors, groupings } = analyse(expr);
  const problems = [...errors];
  if (selectors.length === 0) problems.push("no metric selector");
  const labelsOf = (metric: string): Set<string> =>
    new Set((series.get(metric) ?? []).flatMap((labels) => Object.keys(labels)));
  for (const { metric, matchers } of selectors.filter((s) => !skip(s))) {
    const samples = series.get(metric);
    if (metric === "" || samples === undefined) {
      problems.push(`metric ${metric || "(none)"} is not in /metrics`);
      continue;
    }
    const known = labelsOf(metric);
    for (const { label, op, value } of matchers) {
      if (TARGET_LABELS.has(label)) continue;
      if (!known.has(label)) {
        problems.push(`${metric} has no label ${label} (it has: ${[...known].sort().join(", ")})`);
        continue;
      }
      const values = new Set(samples.map((l) => l[label]).filter((v): v is string => v !== undefined));
      const wanted =
        op === "=" || op === "!=" ? [value] : LITERAL_ALTERNATION.test(value) ? value.split("|") : undefined;
      if (wanted !== undefined) {
        for (const w of wanted) {
          if (!values.has(w))
            problems.push(`${metric}{${label}${op}"${value}"}: no series has ${label}="${w}"`);
        }
      } else {
        const re = new RegExp(`^(?:${value})$`);
        if (![...values].some((v) => re.test(v)))
          problems.push(`${metric}{${label}${op}"${value}"}: the regex matches no ${label} value`);
      }
    }
  }
  for (const { labels, metrics } of groupings) {
    const available = new Set(metrics.flatMap((m) => [...labelsOf(m)]));
    for (const l of labels) {
      if (!TARGET_LABELS.has(l) && !available.has(l))
        problems.push(`grouping label ${l} is on none of ${metrics.join(", ")}`);
    }
  }
  return problems;
}

/** The labels an expression's result can carry (those of its metrics, and the target labels). */
export function resultLabels(expr: string, series: SeriesIndex): Set<string> {
  const out = new Set(TARGET_LABELS);
  for (const { metric } of analyse(expr).selectors) {
    for (const labels of series.get(metric) ?? []) for (const k of Object.keys(labels)) out.add(k);
  }
  return out;
}
