/**
 * The monitoring files memgate ships — the Grafana dashboard (deploy/grafana/dashboards/memgate.json) and the
 * Prometheus alert rules (deploy/prometheus/alerts.yml) — read as Grafana and Prometheus read them, and the list of
 * what they name that a scrape of `GET /metrics` cannot show: series Prometheus makes itself, and metrics that
 * exist only when a feature is on. Used by test/ops/dashboards.test.ts (in-process gateway, fake backends) and
 * test/ops/real-server.test.ts (`memgate serve`).
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { parse as parseYaml } from "yaml";
import type { Selector } from "./promql";

export const ROOT = join(__dirname, "../..");
export const DASHBOARD_FILE = "deploy/grafana/dashboards/memgate.json";
export const RULES_FILE = "deploy/prometheus/alerts.yml";
/** Grafana's reference to the dashboard's `datasource` variable. */
// biome-ignore lint/suspicious/noTemplateCurlyInString: Grafana's variable syntax, not a template literal
export const DATASOURCE_VAR = "${datasource}";

export interface Target {
  expr: string;
  legendFormat?: string;
  refId: string;
}
export interface Panel {
  id: number;
  type: string;
  title: string;
  gridPos: { h: number; w: number; x: number; y: number };
  datasource?: { type: string; uid: string };
  targets?: Target[];
  panels?: Panel[];
}
export interface Variable {
  name: string;
  type: string;
  query: string | { query: string };
  allValue?: string;
  includeAll?: boolean;
}
export interface Dashboard {
  uid: string;
  title: string;
  panels: Panel[];
  templating: { list: Variable[] };
}

export const dashboard = JSON.parse(readFileSync(join(ROOT, DASHBOARD_FILE), "utf8")) as Dashboard;
export const rulesText = readFileSync(join(ROOT, RULES_FILE), "utf8");

export function allPanels(panels: readonly Panel[]): Panel[] {
  return panels.flatMap((p) => [p, ...allPanels(p.panels ?? [])]);
}

/**
 * Grafana's variables as Prometheus would receive them: the interval macros as durations, each query variable
 * as its "All" value. An unknown `$name` is left in place, so the parser reports it.
 */
export function interpolate(expr: string): string {
  const vars = new Map<string, string>([
    ["__rate_interval", "5m"],
    ["__interval", "1m"],
    ["__range", "1h"],
  ]);
  for (const v of dashboard.templating.list) {
    if (v.type === "query" && v.allValue !== undefined) vars.set(v.name, v.allValue);
  }
  return expr.replace(/\$\{(\w+)\}|\$(\w+)/g, (m, a?: string, b?: string) => vars.get(a ?? b ?? "") ?? m);
}

/** `{{label}}` in a legend, `{{ $labels.label }}` in an annotation. */
export function templateLabels(template: string): string[] {
  return [
    ...[...template.matchAll(/\{\{\s*(\w+)\s*\}\}/g)].map((m) => m[1] ?? ""),
    ...[...template.matchAll(/\$labels\.(\w+)/g)].map((m) => m[1] ?? ""),
  ];
}

export interface Rule {
  alert: string;
  expr: string;
  for?: string;
  labels: Record<string, string>;
  annotations: Record<string, string>;
}

/** The rule file's structure, as Prometheus loads it (https://prometheus.io/docs/prometheus/latest/configuration/alerting_rules/). */
export function loadRules(text: string): Rule[] {
  const doc = parseYaml(text) as unknown;
  const problems: string[] = [];
  const rules: Rule[] = [];
  const isRecord = (v: unknown): v is Record<string, unknown> =>
    typeof v === "object" && v !== null && !Array.isArray(v);
  const stringMap = (v: unknown) => isRecord(v) && Object.values(v).every((x) => typeof x === "string");
  if (!isRecord(doc) || !Array.isArray(doc.groups) || Object.keys(doc).length !== 1)
    throw new Error("the rule file must be { groups: [...] }");
  const groupNames = new Set<string>();
  for (const g of doc.groups as unknown[]) {
    if (!isRecord(g) || typeof g.name !== "string" || !Array.isArray(g.rules)) {
      problems.push(`group ${JSON.stringify(g)}: needs name and rules`);
      continue;
    }
    if (groupNames.has(g.name)) problems.push(`group ${g.name} twice`);
    groupNames.add(g.name);
    for (const key of Object.keys(g)) {
      if (!["name", "interval", "limit", "labels", "rules"].includes(key))
        problems.push(`group ${g.name}: unknown key ${key}`);
    }
    for (const r of g.rules as unknown[]) {
      if (!isRecord(r)) {
        problems.push(`${g.name}: a rule is not a mapping`);
        continue;
      }
      const name = String(r.alert);
      for (const key of Object.keys(r)) {
        if (!["alert", "expr", "for", "keep_firing_for", "labels", "annotations"].includes(key))
          problems.push(`${name}: unknown key ${key}`);
      }
      if (typeof r.alert !== "string" || !/^[A-Za-z_][A-Za-z0-9_]*$/.test(r.alert))
        problems.push(`${name}: alert must be a metric-style name`);
      if (typeof r.expr !== "string" || r.expr.trim() === "") problems.push(`${name}: expr missing`);
      if (r.for !== undefined && !(typeof r.for === "string" && /^(\d+[smhdwy])+$/.test(r.for)))
        problems.push(`${name}: for must be a duration`);
      if (!stringMap(r.labels) || typeof (r.labels as Record<string, unknown>).severity !== "string")
        problems.push(`${name}: labels must map strings and name a severity`);
      if (!stringMap(r.annotations) || !("summary" in (r.annotations as object)))
        problems.push(`${name}: annotations must map strings and hold a summary`);
      rules.push(r as unknown as Rule);
    }
  }
  if (problems.length > 0) throw new Error(problems.join("\n"));
  return rules;
}

/** Every query of the dashboard, with its panel's title. */
export function dashboardTargets(): Array<Target & { panel: string }> {
  return allPanels(dashboard.panels)
    .filter((p) => p.type !== "row")
    .flatMap((p) => (p.targets ?? []).map((t) => ({ panel: p.title, ...t })));
}

/**
 * Series Prometheus makes itself, never in any `/metrics`: left out of the checks, with the reason.
 */
export const FROM_PROMETHEUS: ReadonlyMap<string, string> = new Map([
  ["up", "Prometheus's scrape health, one series per target it scrapes (MemgateTargetDown, Replicas up)"],
]);

/** A feature of the gateway that a test's server may run or not. */
export type Feature = "redis" | "shadow" | "canary";

/**
 * What the files name that exists only when a feature is on: a metric (by name pattern), or one label value of
 * a metric. A server running the feature must show it; one without it is not asked to.
 */
export interface FeatureGate {
  feature: Feature;
  metric: RegExp;
  /** Only selectors matching these labels with `=` (absent: every selector of the metric). */
  labels?: Readonly<Record<string, string>>;
  why: string;
}

export const FEATURE_GATES: readonly FeatureGate[] = [
  {
    feature: "redis",
    metric: /^memgate_readiness_check$/,
    labels: { check: "redis" },
    why: "the redis readiness check exists only with REDIS_URL, REDIS_CLUSTER_NODES or REDIS_SENTINELS (MemgateRedisDegraded)",
  },
  {
    feature: "shadow",
    metric: /^memgate_shadow_/,
    why: "shadow metrics are recorded only while a shadow policy runs (MEMGATE_SHADOW_POLICY, a tenant's policies.shadow)",
  },
];

/**
 * The selectors a server running `features` cannot be asked for: Prometheus's own series, and those of the
 * features it does not run. For problemsOf's `skip`.
 */
export function notExpected(features: ReadonlySet<Feature>): (s: Selector) => boolean {
  return (s) =>
    FROM_PROMETHEUS.has(s.metric) ||
    FEATURE_GATES.some(
      (g) =>
        !features.has(g.feature) &&
        g.metric.test(s.metric) &&
        Object.entries(g.labels ?? {}).every(([label, value]) =>
          s.matchers.some((m) => m.label === label && m.op === "=" && m.value === value),
        ),
    );
}
