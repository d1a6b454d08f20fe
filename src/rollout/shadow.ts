/**
 * Shadow policies (tenants file `policies.shadow`, dev mode MEMGATE_SHADOW_POLICY; docs/rollouts.md#shadow): a
 * sampled share of cache misses also runs the shadow policy's pipeline on the SAME candidates the served policy
 * got — no second backend call, nothing cached, no limit taken, no reinforcement written, no stage metrics — and
 * the two are compared: token delta, Jaccard overlap of the kept memory ids, the memories only one side kept and
 * why the other side dropped them. The answer never changes: the run is queued with `setImmediate`, after the
 * produced answer has gone back through the core to its door, and at most `maxPending` runs wait at once (one
 * more is dropped and counted).
 *
 * Recorded: the `shadow.*` metrics (src/telemetry/metrics.ts), a sampled log line with both sides' kept ids (never
 * content), and the recent runs of each tenant in memory for the playground's shadow report (`report`).
 */
import type { Logger } from "../logging/logger";
import { type PipelineInput, runPipeline } from "../pipeline";
import type { StageTrace } from "../pipeline/types";
import type { CompiledPolicy } from "../policy/compile";
import type { PolicyRegistry } from "../policy/registry-types";
import { withTopK } from "../retrieval/policy";
import {
  recordShadowComparison,
  recordShadowRun,
  type ShadowLabels,
  type ShadowOutcome,
} from "../telemetry/metrics";
import type { ShadowRule } from "../tenants/types";

/** One produced (cache-miss) answer offered to the tenant's shadow policy. */
export interface ShadowOffer {
  tenant: string;
  rule: ShadowRule;
  /** The policy that served the answer (the default, a canary or the one the request named). */
  served: CompiledPolicy;
  /** The pipeline input the served policy's first shaping got (its candidates, query, turn time). */
  input: PipelineInput;
  /** What was served: the kept memory ids and their tokens. */
  answer: { ids: readonly string[]; tokens: number };
  /** A door's own result count (Zep `limit`, OpenMemory `k`): the shadow gets it too. */
  topK?: number | undefined;
}

export const DROP_REASONS = [
  "below_min_score",
  "duplicate",
  "beyond_topK",
  "beyond_maxMemories",
  "dropped_by_budget",
  "not_needed",
  "injection_drop",
  "other",
] as const;
/** Why a side left out a memory the other side kept (a trace reason, grouped). */
export type DropReason = (typeof DROP_REASONS)[number];

/** One finished shadow run, as the report keeps it (ids and counts only, never content). */
export interface ShadowRun {
  at: string;
  policy: string;
  shadow: string;
  primaryTokens: number;
  shadowTokens: number;
  overlap: number;
  /** Memories only the served policy kept, with why the shadow dropped each. */
  primaryOnly: Array<{ id: string; reason: DropReason }>;
  /** Memories only the shadow kept, with why the served policy dropped each. */
  shadowOnly: Array<{ id: string; reason: DropReason }>;
}

/** The playground's shadow report of one tenant: the recent runs in this process, summed up. */
export interface ShadowReport {
  tenant: string;
  rule: ShadowRule | null;
  /** Runs in the window (the most recent `window` runs). */
  runs: number;
  window: number;
  counts: Record<ShadowOutcome, number>;
  tokens: { primaryMean: number; shadowMean: number; deltaMean: number; deltaMedian: number } | null;
  overlap: { mean: number; median: number; min: number } | null;
  /** What each side drops most: why it left out memories the other side kept, most frequent first. */
  drops: {
    primary: Array<{ reason: DropReason; count: number }>;
    shadow: Array<{ reason: DropReason; count: number }>;
  };
  recent: Array<Omit<ShadowRun, "primaryOnly" | "shadowOnly"> & { primaryOnly: number; shadowOnly: number }>;
}

export interface ShadowOptions {
  policies: PolicyRegistry;
  logger: Logger;
  /** Runs queued at most; one more is dropped (default 8). */
  maxPending?: number;
  /** The log line: the first run, then one in this many (default 20). */
  logEvery?: number;
  /** Recent runs kept per tenant for the report (default 200). */
  window?: number;
  /** The sampling draw in [0, 1) (tests). */
  random?: () => number;
}

export class ShadowRunner {
  private pending = 0;
  private ran = 0;
  private readonly idlers: Array<() => void> = [];
  private readonly recent = new Map<string, ShadowRun[]>();
  private readonly counts = new Map<string, Record<ShadowOutcome, number>>();
  private readonly maxPending: number;
  private readonly logEvery: number;
  private readonly window: number;
  private readonly random: () => number;

  constructor(private readonly opts: ShadowOptions) {
    this.maxPending = opts.maxPending ?? 8;
    this.logEvery = opts.logEvery ?? 20;
    this.window = opts.window ?? 200;
    this.random = opts.random ?? Math.random;
  }

  /**
   * Offers a produced answer: sampled by the rule's `sample`, queued when fewer than `maxPending` runs wait
   * (else dropped and counted). Never throws, never delays the caller. A shadow that is the served policy is
   * not run (nothing to compare).
   */
  offer(o: ShadowOffer): void {
    if (o.rule.policy === o.served.policy.name) return;
    if (o.rule.sample <= 0 || (o.rule.sample < 1 && this.random() >= o.rule.sample)) return;
    const labels: ShadowLabels = { tenant: o.tenant, policy: o.served.policy.name, shadow: o.rule.policy };
    if (this.pending >= this.maxPending) {
      this.count(labels, "dropped");
      return;
    }
    this.pending++;
    setImmediate(() => {
      try {
        this.run(o, labels);
      } catch (err) {
        this.opts.logger.warn({ err, ...labels }, "shadow run failed");
        this.count(labels, "error");
      } finally {
        this.pending--;
        if (this.pending === 0) for (const done of this.idlers.splice(0)) done();
      }
    });
  }

  /** Resolves when no run is queued (tests; shutdown). */
  idle(): Promise<void> {
    if (this.pending === 0) return Promise.resolve();
    return new Promise((resolve) => this.idlers.push(resolve));
  }

  /** The tenant's shadow report (the playground's panel). */
  report(tenant: string, rule: ShadowRule | undefined): ShadowReport {
    return summarize(
      tenant,
      rule,
      this.recent.get(tenant) ?? [],
      this.counts.get(tenant) ?? { ran: 0, dropped: 0, error: 0 },
      this.window,
    );
  }

  private run(o: ShadowOffer, labels: ShadowLabels): void {
    const loaded = this.opts.policies.get(o.rule.policy);
    if (loaded === undefined) {
      this.opts.logger.warn(labels, "shadow policy not loaded: run skipped");
      this.count(labels, "error");
      return;
    }
    const shadowPolicy = o.topK === undefined ? loaded : withTopK(loaded, o.topK);
    // Not observed: a shadow is not traffic (no stage spans, no redaction or injection counts).
    const shadow = runPipeline({ ...o.input, explain: false }, shadowPolicy);
    const primaryIds = new Set(o.answer.ids);
    const shadowIds = new Set(shadow.memories.map((m) => m.id));
    const primaryOnlyIds = [...primaryIds].filter((id) => !shadowIds.has(id));
    const shadowOnlyIds = [...shadowIds].filter((id) => !primaryIds.has(id));
    const union = new Set([...primaryIds, ...shadowIds]).size;
    const overlap = union === 0 ? 1 : (primaryIds.size - primaryOnlyIds.length) / union;
    const tokenDelta = shadow.totalTokens - o.answer.tokens;
    // Why the served policy dropped what only the shadow kept: its trace, from the same pipeline on the same
    // input (the served answer's own trace is not kept outside `explain`); only when there is something to explain.
    const servedTrace =
      shadowOnlyIds.length === 0 ? [] : runPipeline({ ...o.input, explain: false }, o.served).trace;
    const run: ShadowRun = {
      at: new Date().toISOString(),
      policy: labels.policy,
      shadow: labels.shadow,
      primaryTokens: o.answer.tokens,
      shadowTokens: shadow.totalTokens,
      overlap,
      primaryOnly: primaryOnlyIds.map((id) => ({ id, reason: dropReason(shadow.trace, id) })),
      shadowOnly: shadowOnlyIds.map((id) => ({ id, reason: dropReason(servedTrace, id) })),
    };
    recordShadowComparison(labels, {
      tokenDelta,
      overlap,
      primaryOnly: primaryOnlyIds.length,
      shadowOnly: shadowOnlyIds.length,
    });
    this.count(labels, "ran");
    this.keep(o.tenant, run);
    this.ran++;
    if (this.ran === 1 || this.ran % this.logEvery === 0) {
      this.opts.logger.info(
        {
          ...labels,
          sampled: `1 in ${this.logEvery}`,
          primaryIds: [...primaryIds],
          shadowIds: [...shadowIds],
          primaryTokens: o.answer.tokens,
          shadowTokens: shadow.totalTokens,
          overlap: Math.round(overlap * 1000) / 1000,
        },
        "shadow run",
      );
    }
  }

  private count(labels: ShadowLabels, outcome: ShadowOutcome): void {
    recordShadowRun(labels, outcome);
    const c = this.counts.get(labels.tenant) ?? { ran: 0, dropped: 0, error: 0 };
    c[outcome]++;
    this.counts.set(labels.tenant, c);
  }

  private keep(tenant: string, run: ShadowRun): void {
    const runs = this.recent.get(tenant) ?? [];
    runs.push(run);
    if (runs.length > this.window) runs.splice(0, runs.length - this.window);
    this.recent.set(tenant, runs);
  }
}

/** The first trace change that dropped the memory, grouped; `other` when no stage names it (e.g. not selected). */
function dropReason(trace: readonly StageTrace[], id: string): DropReason {
  for (const stage of trace) {
    for (const change of stage.changes) {
      if (change.id !== id) continue;
      const r = change.reason;
      if (r.startsWith("duplicate_of:")) return "duplicate";
      if (r.startsWith("injection:") && r.endsWith(":drop")) return "injection_drop";
      if (
        r === "below_min_score" ||
        r === "beyond_topK" ||
        r === "beyond_maxMemories" ||
        r === "dropped_by_budget" ||
        r === "not_needed"
      )
        return r;
    }
  }
  return "other";
}

function mean(xs: readonly number[]): number {
  return Math.round((xs.reduce((a, b) => a + b, 0) / xs.length) * 1000) / 1000;
}

function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  const m = s.length % 2 === 1 ? (s[mid] ?? 0) : ((s[mid - 1] ?? 0) + (s[mid] ?? 0)) / 2;
  return Math.round(m * 1000) / 1000;
}

function tally<T extends string>(xs: readonly T[]): Array<{ reason: T; count: number }> {
  const counts = new Map<T, number>();
  for (const x of xs) counts.set(x, (counts.get(x) ?? 0) + 1);
  return [...counts]
    .map(([reason, count]) => ({ reason, count }))
    .sort((a, b) => b.count - a.count || a.reason.localeCompare(b.reason));
}

/** The report of some recent runs: means, medians, what each side drops most, the last ten. */
export function summarize(
  tenant: string,
  rule: ShadowRule | undefined,
  runs: readonly ShadowRun[],
  counts: Record<ShadowOutcome, number>,
  window: number,
): ShadowReport {
  const n = runs.length;
  const deltas = runs.map((r) => r.shadowTokens - r.primaryTokens);
  const overlaps = runs.map((r) => r.overlap);
  return {
    tenant,
    rule: rule ?? null,
    runs: n,
    window,
    counts: { ...counts },
    tokens:
      n === 0
        ? null
        : {
            primaryMean: mean(runs.map((r) => r.primaryTokens)),
            shadowMean: mean(runs.map((r) => r.shadowTokens)),
            deltaMean: mean(deltas),
            deltaMedian: median(deltas),
          },
    overlap: n === 0 ? null : { mean: mean(overlaps), median: median(overlaps), min: Math.min(...overlaps) },
    drops: {
      // The served side drops what only the shadow kept, and the other way round.
      primary: tally(runs.flatMap((r) => r.shadowOnly.map((m) => m.reason))),
      shadow: tally(runs.flatMap((r) => r.primaryOnly.map((m) => m.reason))),
    },
    recent: runs
      .slice(-10)
      .reverse()
      .map(({ primaryOnly, shadowOnly, ...r }) => ({
        ...r,
        primaryOnly: primaryOnly.length,
        shadowOnly: shadowOnly.length,
      })),
  };
}
