/**
 * Series that exist before their first event (issue 28, item 5): every tenant of the tenants file has its
 * `memgate_retrievals_total` at 0 for each policy it may use (`["*"]`: every loaded policy, also one loaded
 * later) and outcome, and `memgate_retrieval_cache_lookups_total` at 0 for each policy, backend it has and cache result;
 * the readiness gauges follow /readyz and draining.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import request from "supertest";
import { observeReadiness } from "../../src/telemetry/metrics";
import { type Harness, makeHarness } from "../helpers/harness";
import { type Family, parsePrometheusText } from "./prom-parse";
import { installTelemetry, type TestTelemetry } from "./setup";

describe("zero series for known tenants, and the readiness gauges", () => {
  let tel: TestTelemetry;
  let h: Harness;
  beforeEach(async () => {
    tel = installTelemetry();
    h = await makeHarness();
  });
  afterEach(async () => {
    await h.close();
    await tel.close();
  });

  const scrape = async (): Promise<Map<string, Family>> =>
    parsePrometheusText((await request(h.app).get("/metrics").expect(200)).text);
  const labelSets = (families: Map<string, Family>, name: string, keys: string[]) =>
    (families.get(name)?.samples ?? []).map((s) => keys.map((k) => s.labels[k]).join("/")).sort();
  const policyNames = () =>
    h.services.policies
      .list()
      .policies.map((p) => p.name)
      .sort();

  test("each tenant: its policies × outcomes and its backends × cache results, all at 0", async () => {
    const families = await scrape();
    const retrievals = families.get("memgate_retrievals_total")?.samples ?? [];
    expect(retrievals.every((s) => s.value === 0)).toBe(true);
    expect(labelSets(families, "memgate_retrievals_total", ["tenant", "policy", "outcome"])).toEqual(
      [
        ...policyNames().flatMap((p) => [`acme/${p}/fallback`, `acme/${p}/ok`]),
        "globex/default/fallback",
        "globex/default/ok",
      ].sort(),
    );
    expect(policyNames().length).toBeGreaterThan(3);
    const caches = ["bypass", "hit", "miss", "stale"];
    expect(
      labelSets(families, "memgate_retrieval_cache_lookups_total", [
        "tenant",
        "policy",
        "backend",
        "cache",
        "door",
      ]),
    ).toEqual(
      [
        ...policyNames().flatMap((p) =>
          ["openmemory", "zep"].flatMap((b) => caches.map((c) => `acme/${p}/${b}/${c}/retrieve`)),
        ),
        ...["local", "zep"].flatMap((b) => caches.map((c) => `globex/default/${b}/${c}/retrieve`)),
      ].sort(),
    );
  });

  test("a policy loaded later gets its series for the tenants that may use it", async () => {
    writeFileSync(join(h.dir, "policies", "later.yaml"), "name: later\nversion: 1\n");
    await h.services.policies.reload();
    expect(policyNames()).toContain("later");
    const later = labelSets(await scrape(), "memgate_retrievals_total", [
      "tenant",
      "policy",
      "outcome",
    ]).filter((s) => s.includes("/later/"));
    expect(later).toEqual(["acme/later/fallback", "acme/later/ok"]); // globex may use only `default`
  });

  test("memgate_ready and memgate_readiness_check follow /readyz, draining included", async () => {
    let families = await scrape();
    expect(families.get("memgate_ready")?.samples.map((s) => s.value)).toEqual([1]);
    expect(labelSets(families, "memgate_readiness_check", ["check"])).toEqual(["backends", "policies"]);
    expect(families.get("memgate_readiness_check")?.samples.map((s) => s.value)).toEqual([0, 0]);

    // Draining: the app answers 503 to everything but /readyz and a scrape, which sees the replica draining (and
    // closes the connection); an OTLP export reads the same gauge from the SDK.
    h.services.lifecycle.shuttingDown = true;
    await request(h.app).post("/v1/retrieve").send({}).expect(503);
    const draining = await request(h.app).get("/metrics").expect(200);
    expect(draining.headers.connection).toBe("close");
    expect(
      parsePrometheusText(draining.text)
        .get("memgate_ready")
        ?.samples.map((s) => s.value),
    ).toEqual([0]);
    const ready = (await tel.metrics()).scopeMetrics
      .flatMap((sm) => sm.metrics)
      .find((m) => m.descriptor.name === "readiness.ready");
    expect(ready?.dataPoints.map((p) => p.value)).toEqual([0]);
    h.services.lifecycle.shuttingDown = false;
    families = await scrape();
    expect(families.get("memgate_ready")?.samples.map((s) => s.value)).toEqual([1]);
  });

  test("a readiness source that throws reads as not ready, and the scrape still answers", async () => {
    const stop = observeReadiness(() => Promise.reject(new Error("broken check")));
    try {
      const values = (await scrape()).get("memgate_ready")?.samples.map((s) => s.value);
      // One series (no labels): the harness's services observe 1 first, the broken source 0 after them.
      expect(values).toEqual([0]);
    } finally {
      stop();
    }
  });
});
