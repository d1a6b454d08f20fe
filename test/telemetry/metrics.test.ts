/**
 * The metrics of docs/observability.md#metric-catalogue through the OpenTelemetry metrics API (read with an in-memory exporter), and
 * `GET /metrics` as valid Prometheus text exposition with Prometheus-style names.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Attributes } from "@opentelemetry/api";
import type { ResourceMetrics } from "@opentelemetry/sdk-metrics";
import request from "supertest";
import { METRICS } from "../../src/telemetry/catalogue";
import { type Harness, KEYS, makeHarness } from "../helpers/harness";
import { makeCandidate } from "../helpers/items";
import { points, total } from "./points";
import { parsePrometheusText } from "./prom-parse";
import { installTelemetry, type TestTelemetry } from "./setup";

const body = (patch: Record<string, unknown> = {}) => ({
  userId: "u-123",
  sessionId: "s-9",
  query: "what do I usually order?",
  useMemory: true,
  ...patch,
});

const memories = [
  makeCandidate({ id: "f1", content: "Ana orders an oat milk flat white.", score: 0.92 }),
  makeCandidate({ id: "f2", content: "ana orders an oat milk flat white", score: 0.6 }),
  makeCandidate({ id: "m1", content: "Make it decaf today, please.", score: 0.55, type: "message" }),
];

describe("metrics", () => {
  let tel: TestTelemetry;
  let h: Harness;

  beforeAll(() => {
    tel = installTelemetry();
  });
  afterAll(() => tel.close());
  beforeEach(async () => {
    h = await makeHarness({
      env: { MEMGATE_KEY_RATE_LIMIT: "40/60" },
      policies: {
        // One per-user bucket whatever the policy (issue 26 finding 8): the two `default` requests count in it too,
        // so `tight` admits its first request (the third) and limits its second.
        tight: "name: tight\nversion: 1\nrateLimit: { perUser: { points: 3, durationSeconds: 60 } }\n",
        pii:
          "name: pii\nversion: 1\nretrieval: { minScore: 0 }\nredaction: { enabled: true, " +
          "detectors: [email, phone, iban], patterns: [{ name: acct, pattern: 'ACCT-[0-9]+' }] }\n",
      },
    });
    h.zep.acme?.setUser("u-123", memories);
  });
  afterEach(() => h.close());

  const post = (payload: object) =>
    request(h.app).post("/v1/retrieve").set("x-api-key", KEYS.acmeChat).send(payload);

  async function traffic(): Promise<void> {
    await post(body()).expect(200); // miss: backend + pipeline (1 duplicate of 3)
    await post(body()).expect(200); // hit
    await post(body({ useMemory: false })).expect(200); // MEMORY_DISABLED → skip (bypass)
    await post(body({ policy: "tight" })).expect(200); // miss
    await post(body({ policy: "tight" })).expect(200); // RATE_LIMITED (user) → cache: served fresh (hit)
    h.zep.acme?.fail("unavailable", { status: 503 });
    await post(body({ query: "another question" })).expect(200); // ZEP_UNAVAILABLE → skip
  }

  test("retrieval, cache, fallback, backend, rate-limit and policy metrics, by low-cardinality labels", async () => {
    const before = await tel.metrics();
    const base = (name: string, match: Attributes = {}) => {
      try {
        return total(before, name, match);
      } catch {
        return 0;
      }
    };
    const latencyBefore = base(METRICS.latency.otel);
    await traffic();
    const rm = await tel.metrics();

    expect(total(rm, METRICS.latency.otel) - latencyBefore).toBe(6);
    expect(
      total(rm, METRICS.results.otel, { backend: "zep", policy: "default", outcome: "ok" }),
    ).toBeGreaterThan(0);
    const tokens = points(rm, METRICS.tokens.otel).find((p) => p.attributes.outcome === "ok");
    expect(tokens?.sum).toBeGreaterThan(0);
    // Budget used: one ratio per retrieval, tokens over the policy's maxTokens (default: 1500), same labels.
    const okDefault = (p: { attributes: Attributes }) =>
      p.attributes.outcome === "ok" && p.attributes.policy === "default";
    const used = points(rm, METRICS.tokens.otel).find(okDefault);
    const budget = points(rm, METRICS.tokenBudgetUsed.otel).find(okDefault);
    expect(budget?.value).toBe(used?.value);
    expect(budget?.sum ?? 0).toBeGreaterThan(0);
    expect((budget?.sum ?? 0) * 1500).toBeCloseTo(used?.sum ?? -1, 6);

    const dedup = points(rm, METRICS.dedup.otel).find((p) => p.attributes.policy === "default");
    expect(dedup?.value).toBeGreaterThanOrEqual(1);
    expect((dedup?.sum ?? 0) / (dedup?.value ?? 1)).toBeCloseTo(1 / 3, 5);

    expect(
      total(rm, METRICS.cacheLookups.otel, { cache: "hit" }) -
        base(METRICS.cacheLookups.otel, { cache: "hit" }),
    ).toBe(2);
    expect(
      total(rm, METRICS.cacheLookups.otel, { cache: "miss" }) -
        base(METRICS.cacheLookups.otel, { cache: "miss" }),
    ).toBe(2);
    const [rate] = points(rm, METRICS.cacheHitRate.otel);
    expect(rate?.value).toBeGreaterThan(0);
    expect(rate?.value).toBeLessThan(1);

    const fallback = (code: string, action: string) =>
      total(rm, METRICS.fallbacks.otel, { code, action }) - base(METRICS.fallbacks.otel, { code, action });
    expect(fallback("MEMORY_DISABLED", "skip")).toBe(1);
    expect(fallback("RATE_LIMITED", "cache")).toBe(1);
    expect(fallback("ZEP_UNAVAILABLE", "skip")).toBe(1);

    const backend = (outcome: string) =>
      total(rm, METRICS.backendLatency.otel, { backend: "zep", operation: "search", outcome });
    expect(backend("ok")).toBeGreaterThanOrEqual(2);
    expect(
      total(rm, METRICS.backendLatency.otel, { backend: "zep", outcome: "unavailable" }),
    ).toBeGreaterThan(0);
    expect(
      total(rm, METRICS.rateLimited.otel, { scope: "user" }) -
        base(METRICS.rateLimited.otel, { scope: "user" }),
    ).toBe(1);
    expect(total(rm, METRICS.policyReloads.otel, { type: "loaded" })).toBeGreaterThanOrEqual(3);
  });

  test("redactions are counted per detector from the redaction stage's trace, never with the text", async () => {
    h.zep.acme?.setUser("u-pii", [
      makeCandidate({ id: "r1", content: "Mail ana@example.com or call +44 20 7946 0958.", score: 0.9 }),
      makeCandidate({ id: "r2", content: "IBAN DE89 3704 0044 0532 0130 00, bob@example.org", score: 0.8 }),
      makeCandidate({ id: "r3", content: "Account ACCT-4417 is closed.", score: 0.7 }),
      makeCandidate({ id: "r4", content: "Nothing personal in this one.", score: 0.6 }),
    ]);
    const count = (rm: ResourceMetrics, detector: string) => total(rm, METRICS.redactions.otel, { detector });
    const before = await tel.metrics();
    await post(body({ userId: "u-pii", policy: "pii" })).expect(200);
    const rm = await tel.metrics();
    // One count per memory and detector: two memories held an e-mail address.
    const delta = (d: string) => count(rm, d) - count(before, d);
    expect(["email", "phone", "iban", "custom", "ssn"].map(delta)).toEqual([2, 1, 1, 1, 0]);
    // Every built-in detector's series exists from the start, at 0 until it fires.
    expect(points(rm, METRICS.redactions.otel).map((p) => p.attributes.detector)).toEqual(
      expect.arrayContaining(["ipv6", "credit_card", "custom"]),
    );

    const res = await request(h.app).get("/metrics").expect(200);
    const family = parsePrometheusText(res.text).get(METRICS.redactions.prometheus);
    expect(family?.type).toBe("counter");
    expect(family?.samples.find((s) => s.labels.detector === "email")?.value).toBeGreaterThanOrEqual(2);
    // Nowhere in the scrape (a secret's full form cannot be a number), and no piece of one in any label or name:
    // a short digit run such as "7946" may be part of a runtime gauge's value ("0.00794624"), which says nothing.
    for (const secret of ["ana@example.com", "20 7946 0958", "DE89 3704", "ACCT-4417"]) {
      expect(res.text).not.toContain(secret);
    }
    const named = [...parsePrometheusText(res.text)].flatMap(([name, f]) => [
      name,
      ...f.samples.flatMap((sample) => Object.values(sample.labels)),
    ]);
    for (const piece of ["ana@", "example.com", "7946", "0958", "DE89", "acct"]) {
      expect(named.filter((text) => text.toLowerCase().includes(piece.toLowerCase()))).toEqual([]);
    }
  });

  test("a rejected policy change and a caller over its key's rate are counted", async () => {
    const before = await tel.metrics();
    const rejectedBefore = (() => {
      try {
        return total(before, METRICS.policyRejections.otel);
      } catch {
        return 0;
      }
    })();
    writeFileSync(
      join(h.dir, "policies", "broken.yaml"),
      "name: broken\nversion: 1\nretrieval: { topK: 99 }\n",
    );
    await h.services.policies.reload();
    await h.close();
    h = await makeHarness({ env: { MEMGATE_KEY_RATE_LIMIT: "1/60" } });
    await post(body()).expect(200);
    await post(body()).expect(429);
    const rm = await tel.metrics();
    expect(total(rm, METRICS.policyRejections.otel) - rejectedBefore).toBe(1);
    expect(total(rm, METRICS.rateLimited.otel, { scope: "key" })).toBe(1);
  });

  test("GET /metrics is Prometheus text exposition with Prometheus-style names, without auth", async () => {
    await traffic();
    const res = await request(h.app).get("/metrics").expect(200);
    expect(res.headers["content-type"]).toBe("text/plain; version=0.0.4; charset=utf-8");
    const families = parsePrometheusText(res.text);
    const expected: Array<[string, string]> = [
      [METRICS.latency.prometheus, "histogram"],
      [METRICS.results.prometheus, "histogram"],
      [METRICS.tokens.prometheus, "histogram"],
      [METRICS.tokenBudgetUsed.prometheus, "histogram"],
      [METRICS.dedup.prometheus, "histogram"],
      [METRICS.redactions.prometheus, "counter"],
      [METRICS.cacheLookups.prometheus, "counter"],
      [METRICS.cacheHitRate.prometheus, "gauge"],
      [METRICS.fallbacks.prometheus, "counter"],
      [METRICS.backendLatency.prometheus, "histogram"],
      [METRICS.policyReloads.prometheus, "counter"],
      [METRICS.rateLimited.prometheus, "counter"],
      [METRICS.circuitState.prometheus, "gauge"],
    ];
    for (const [name, type] of expected) {
      expect({ name, type: families.get(name)?.type }).toEqual({ name, type });
      expect(families.get(name)?.help).toBeTruthy();
    }
    const fallbacks = families.get(METRICS.fallbacks.prometheus)?.samples ?? [];
    expect(fallbacks.some((s) => s.labels.code === "ZEP_UNAVAILABLE" && s.labels.action === "skip")).toBe(
      true,
    );
    const latency = families.get(METRICS.latency.prometheus)?.samples ?? [];
    expect(latency.some((s) => s.name.endsWith("_bucket") && s.labels.le === "+Inf")).toBe(true);
    // Only memgate's catalogue names (and non-memgate instruments' own) — no raw dotted OTel names leak through.
    for (const name of families.keys()) expect(name).toMatch(/^[a-zA-Z_:][a-zA-Z0-9_:]*$/);
  });

  test("the parser used above rejects malformed exposition (so the test above can fail)", () => {
    expect(() => parsePrometheusText("# TYPE a counter\na 1\n")).toThrow(/_total/);
    expect(() => parsePrometheusText('a{b="c} 1\n')).toThrow();
    expect(() => parsePrometheusText("a 1\nb 2\na 3\n")).toThrow(/contiguous|duplicate/);
    expect(() => parsePrometheusText("a one\n")).toThrow(/bad value/);
    expect(() => parsePrometheusText("a 1")).toThrow(/newline/);
    expect(() =>
      parsePrometheusText(
        '# TYPE h histogram\nh_bucket{le="1"} 2\nh_bucket{le="+Inf"} 1\nh_sum 1\nh_count 1\n',
      ),
    ).toThrow(/cumulative/);
    expect(
      parsePrometheusText('# HELP a x\n# TYPE a gauge\na{l="q\\"x"} 1.5e3\n').get("a")?.samples[0],
    ).toEqual({
      name: "a",
      labels: { l: 'q"x' },
      value: 1500,
    });
  });
});
