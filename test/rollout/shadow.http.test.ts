/**
 * A shadow policy against live traffic through the gateway (real wiring, the production Prometheus reader): the
 * answers are byte-identical with and without it (only the measured `queryTime` differs between two runs), the
 * backend is searched as often, only cache misses are shadowed, and the shadow metrics (GET /metrics), the
 * sampled log line (kept ids, no content) and the playground's shadow report appear.
 */
import request from "supertest";
import type { ShadowReport } from "../../src/rollout/shadow";
import { METRICS } from "../../src/telemetry/catalogue";
import type { ShadowReport as PageShadowReport } from "../../src/ui/wire";
import { type Harness, KEYS, makeHarness } from "../helpers/harness";
import { parsePrometheusText, type Sample } from "../telemetry/prom-parse";
import { installTelemetry, type TestTelemetry } from "../telemetry/setup";
import { ANA_MEMORIES, LEAN, SHADOWED } from "./fixtures";

const memories = ANA_MEMORIES;

const turn = (userId: string, query: string) => ({
  userId,
  sessionId: "s-1",
  query,
  useMemory: true,
  turnTime: "2026-05-01T10:00:00Z",
});

/** Three misses (two users, two questions) and one hit (the first again). */
const TRAFFIC = [
  turn("ana", "what do I drink in the morning?"),
  turn("ana", "where do I live?"),
  turn("bo", "what do I drink in the morning?"),
  turn("ana", "what do I drink in the morning?"),
];

/** The answers of TRAFFIC, `queryTime` (a measured duration) set to 0; and how often zep was searched. */
async function answers(h: Harness): Promise<{ bodies: string[]; searches: number }> {
  h.zep.acme?.setUser("ana", memories).setUser("bo", memories.slice(1));
  const bodies: string[] = [];
  for (const body of TRAFFIC) {
    const res = await request(h.app)
      .post("/v1/retrieve")
      .set("x-api-key", KEYS.acmeChat)
      .send(body)
      .expect(200);
    bodies.push(res.text.replace(/"queryTime":[0-9.e-]+/, '"queryTime":0'));
  }
  return { bodies, searches: h.zep.acme?.searchCalls ?? -1 };
}

/** The page's wire type reads what the server answers (compile time). */
const forThePage = (report: ShadowReport): PageShadowReport => report;

const sample = (samples: readonly Sample[] | undefined, name: string, labels: Record<string, string>) =>
  samples?.find((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))?.value;

describe("shadow policy on live traffic", () => {
  let tel: TestTelemetry;
  beforeAll(() => {
    tel = installTelemetry();
  });
  afterAll(() => tel.close());

  test("answers are byte-identical with and without it; metrics, log line and report appear", async () => {
    const plain = await makeHarness({ policies: { lean: LEAN } });
    const without = await answers(plain).finally(() => plain.close());

    const h = await makeHarness({
      policies: { lean: LEAN },
      tenants: SHADOWED,
      env: { MEMGATE_PLAYGROUND: "on" },
    });
    try {
      const withShadow = await answers(h);
      expect(withShadow.bodies).toEqual(without.bodies);
      expect(JSON.parse(withShadow.bodies[3] ?? "{}").metadata.cache).toBe("hit");
      // No second backend call: one search per miss, with or without the shadow.
      expect(withShadow.searches).toBe(3);
      expect(without.searches).toBe(3);
      await h.services.shadow?.idle();

      const families = parsePrometheusText((await request(h.app).get("/metrics").expect(200)).text);
      const labels = { tenant: "acme", policy: "default", shadow: "lean" };
      const runs = families.get(METRICS.shadowRuns.prometheus)?.samples;
      expect(sample(runs, "memgate_shadow_runs_total", { ...labels, outcome: "ran" })).toBe(3); // misses only
      expect(sample(runs, "memgate_shadow_runs_total", { ...labels, outcome: "dropped" })).toBe(0);
      expect(sample(runs, "memgate_shadow_runs_total", { ...labels, outcome: "error" })).toBe(0);
      const delta = families.get(METRICS.shadowTokenDelta.prometheus);
      expect(delta?.type).toBe("histogram");
      // The lean shadow keeps fewer memories: fewer tokens on every run (the sign is the `direction` label).
      const fewer = { ...labels, direction: "fewer" };
      expect(sample(delta?.samples, "memgate_shadow_token_delta_count", fewer)).toBe(3);
      expect(sample(delta?.samples, "memgate_shadow_token_delta_sum", fewer)).toBeGreaterThan(0);
      expect(sample(delta?.samples, "memgate_shadow_token_delta_bucket", { ...fewer, le: "0" })).toBe(0);
      expect(delta?.samples.some((s) => s.labels.direction === "more")).toBe(false);
      const overlap = families.get(METRICS.shadowOverlap.prometheus)?.samples;
      expect(sample(overlap, "memgate_shadow_overlap_ratio_count", labels)).toBe(3);
      const overlapSum = sample(overlap, "memgate_shadow_overlap_ratio_sum", labels) ?? -1;
      expect(overlapSum).toBeGreaterThan(0);
      expect(overlapSum).toBeLessThan(3);
      const exclusive = families.get(METRICS.shadowExclusive.prometheus)?.samples;
      const name = "memgate_shadow_exclusive_memories_total";
      expect(sample(exclusive, name, { ...labels, side: "primary" })).toBeGreaterThan(0);
      expect(sample(exclusive, name, { ...labels, side: "shadow" })).toBe(0);
      // The served policy is a label of the retrieval metrics too (canary and stable side by side).
      const latency = families.get(METRICS.latency.prometheus)?.samples ?? [];
      expect(latency.some((s) => s.labels.policy === "default")).toBe(true);

      // The sampled log line: the first run, both sides' kept ids, never content.
      const lines = h.logs.flatMap((l) => l.split("\n")).filter((l) => l.includes('"msg":"shadow run"'));
      expect(lines.length).toBeGreaterThanOrEqual(1);
      const line = JSON.parse(lines[0] ?? "{}");
      expect(line).toMatchObject({ level: 30, tenant: "acme", policy: "default", shadow: "lean" });
      expect(line.shadowIds).toEqual(["m1", "m2"]);
      expect(line.primaryIds).toEqual(expect.arrayContaining(["m1", "m2", "m3"]));
      expect(lines.join("\n")).not.toMatch(/oat milk|hazelnut|Lisbon/);

      // The playground's live report of the tenant (admin).
      await request(h.app).get("/v1/playground/shadow").set("x-api-key", KEYS.acmeChat).expect(403);
      const report = forThePage(
        (await request(h.app).get("/v1/playground/shadow").set("x-api-key", KEYS.acmeOps).expect(200))
          .body as ShadowReport,
      );
      expect(report).toMatchObject({
        tenant: "acme",
        rule: { policy: "lean", sample: 1 },
        runs: 3,
        counts: { ran: 3, dropped: 0, error: 0 },
      });
      expect(report.tokens?.shadowMean).toBeLessThan(report.tokens?.primaryMean ?? 0);
      expect(report.overlap?.median).toBeLessThan(1);
      // What the shadow drops most of what the served policy kept: m4 and m5 (below its minScore 0.5) on each of
      // the three runs; ana's m3 (score 0.55) beyond its topK of 2 on her two runs (bo has no m1: his m3 fits).
      expect(report.drops.shadow[0]).toEqual({ reason: "below_min_score", count: 6 });
      expect(report.drops.shadow).toContainEqual({ reason: "beyond_topK", count: 2 });
      expect(report.drops.primary).toEqual([]);
      expect(report.recent).toHaveLength(3);
    } finally {
      await h.close();
    }
  });
  test("the shadow runs after the answer is handed back, never before", async () => {
    const h = await makeHarness({ policies: { lean: LEAN }, tenants: SHADOWED });
    try {
      h.zep.acme?.setUser("ana", memories);
      const principal = h.services.tenants.authenticate(KEYS.acmeChat);
      if (principal === null || h.services.shadow === undefined)
        throw new Error("no principal or shadow runner");
      const runner = h.services.shadow;
      const outcome = await h.services.retrieval.retrieve({
        principal,
        userId: "ana",
        query: "what do I drink in the morning?",
        turn: { sessionId: "s-1", useMemory: true },
      });
      // The caller has its answer (a miss) and the shadow has not run yet: it is queued behind it.
      expect(outcome.kind === "payload" && outcome.payload.metadata.cache).toBe("miss");
      expect(runner.report("acme", undefined).counts.ran).toBe(0);
      await runner.idle();
      expect(runner.report("acme", undefined).counts.ran).toBe(1);
    } finally {
      await h.close();
    }
  });
});
