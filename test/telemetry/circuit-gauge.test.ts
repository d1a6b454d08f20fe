/**
 * `memgate_backend_circuit_state` (issue 13, point 5): one series per tenant and backend instance in use, read
 * from the circuit breakers at each scrape — 0 closed, 1 half-open, 2 open — without calling any backend.
 */
import request from "supertest";
import { METRICS } from "../../src/telemetry/catalogue";
import { type Harness, KEYS, makeHarness } from "../helpers/harness";
import { makeCandidate } from "../helpers/items";
import { parsePrometheusText, type Sample } from "./prom-parse";
import { installTelemetry, type TestTelemetry } from "./setup";

const body = (query: string) => ({ userId: "u-123", sessionId: "s-9", query, useMemory: true });

describe("backend circuit state gauge", () => {
  let tel: TestTelemetry;
  let h: Harness;

  beforeAll(() => {
    tel = installTelemetry();
  });
  afterAll(() => tel.close());
  afterEach(() => h.close());

  async function circuitSamples(): Promise<Sample[]> {
    const res = await request(h.app).get("/metrics").expect(200);
    const family = parsePrometheusText(res.text).get(METRICS.circuitState.prometheus);
    expect(family?.type).toBe("gauge");
    expect(family?.help).toContain("0 closed, 1 half-open, 2 open");
    return (family?.samples ?? []).map((s) => ({
      ...s,
      labels: Object.fromEntries(Object.entries(s.labels).filter(([k]) => k === "backend" || k === "tenant")),
    }));
  }

  test("closed (0) for every instance in use from the first scrape, open (2) once failing calls trip it", async () => {
    h = await makeHarness({ env: { MEMGATE_BREAKER_HALF_OPEN_MS: "60000" } });
    // No retrieval yet: the gauge is there, one series per tenant and backend the harness built.
    const before = await circuitSamples();
    expect(before).toEqual(
      expect.arrayContaining([
        { name: METRICS.circuitState.prometheus, labels: { backend: "zep", tenant: "acme" }, value: 0 },
        {
          name: METRICS.circuitState.prometheus,
          labels: { backend: "openmemory", tenant: "acme" },
          value: 0,
        },
        { name: METRICS.circuitState.prometheus, labels: { backend: "local", tenant: "globex" }, value: 0 },
        { name: METRICS.circuitState.prometheus, labels: { backend: "zep", tenant: "globex" }, value: 0 },
      ]),
    );
    expect(before).toHaveLength(4);

    const zep = h.zep.acme;
    if (zep === undefined) throw new Error("no fake Zep");
    zep.setUser("u-123", [makeCandidate({ id: "f1", score: 0.9 })]).fail("unavailable", { status: 503 });
    for (let i = 0; i < 5; i++)
      await request(h.app)
        .post("/v1/retrieve")
        .set("x-api-key", KEYS.acmeChat)
        .send(body(`q${i}`))
        .expect(200);
    const calls = zep.searchCalls + zep.existsCalls;

    const after = await circuitSamples();
    expect(after).toContainEqual({
      name: METRICS.circuitState.prometheus,
      labels: { backend: "zep", tenant: "acme" },
      value: 2,
    });
    expect(after).toContainEqual({
      name: METRICS.circuitState.prometheus,
      labels: { backend: "zep", tenant: "globex" },
      value: 0,
    });
    // Scraping calls no backend.
    expect(zep.searchCalls + zep.existsCalls).toBe(calls);
  });

  test("half-open (1) while the probe is in flight, then closed (0) again", async () => {
    h = await makeHarness({ env: { MEMGATE_BREAKER_HALF_OPEN_MS: "100", MEMGATE_RETRY_MAX: "0" } });
    const zep = h.zep.acme;
    if (zep === undefined) throw new Error("no fake Zep");
    zep.setUser("u-123", [makeCandidate({ id: "f1", score: 0.9 })]).fail("unavailable", { status: 503 });
    for (let i = 0; i < 5; i++)
      await request(h.app)
        .post("/v1/retrieve")
        .set("x-api-key", KEYS.acmeChat)
        .send(body(`q${i}`))
        .expect(200);
    zep.script = { kind: "ok" };
    zep.userExists = async () => {
      await new Promise((r) => setTimeout(r, 400));
      return true;
    };
    await new Promise((r) => setTimeout(r, 150));
    const probe = request(h.app)
      .post("/v1/retrieve")
      .set("x-api-key", KEYS.acmeChat)
      .send(body("probe"))
      .then((r) => r);
    await new Promise((r) => setTimeout(r, 100));
    const acmeZep = (samples: Sample[]) =>
      samples.find((s) => s.labels.backend === "zep" && s.labels.tenant === "acme")?.value;
    expect(acmeZep(await circuitSamples())).toBe(1);
    expect((await probe).status).toBe(200);
    expect(acmeZep(await circuitSamples())).toBe(0);
  });
});
