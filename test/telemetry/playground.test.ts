/**
 * A policy tried in the playground is not traffic: its stages add nothing to the redaction, injection and dedup
 * counts the dashboards and alerts read; the same policy on /v1/retrieve does.
 */
import request from "supertest";
import { METRICS } from "../../src/telemetry/catalogue";
import { type Harness, KEYS, makeHarness } from "../helpers/harness";
import { makeCandidate } from "../helpers/items";
import { total } from "./points";
import { installTelemetry, type TestTelemetry } from "./setup";

const ops = { authorization: `Bearer ${KEYS.acmeOps}` };

describe("playground telemetry", () => {
  let tel: TestTelemetry;
  let h: Harness;
  beforeAll(() => {
    tel = installTelemetry();
  });
  afterAll(() => tel.close());
  afterEach(async () => h?.close());

  it("counts no redactions for a comparison, and does for the same policy on /v1/retrieve", async () => {
    h = await makeHarness({ env: { MEMGATE_PLAYGROUND: "on" } });
    h.zep.acme?.setUser("ana", [
      makeCandidate({ id: "r1", content: "Mail ana@example.com about the order.", score: 0.9 }),
    ]);
    const redactions = async () => total(await tel.metrics(), METRICS.redactions.otel, { detector: "email" });
    const start = await redactions();
    const compared = await request(h.app)
      .post("/v1/playground/compare")
      .set(ops)
      .send({ userId: "ana", query: "order", policies: [{ name: "strict-pii" }] })
      .expect(200);
    expect(JSON.stringify(compared.body.runs[0].payload.trace)).toContain("redacted:email");
    expect(await redactions()).toBe(start);

    await request(h.app)
      .post("/v1/retrieve")
      .set(ops)
      .send({ userId: "ana", query: "order", sessionId: "s-1", useMemory: true, policy: "strict-pii" })
      .expect(200);
    expect(await redactions()).toBe(start + 1);
  });

  it("logs the playground's requests under readable routes (its API and its page's files)", async () => {
    h = await makeHarness({ env: { MEMGATE_PLAYGROUND: "on" } });
    h.zep.acme?.setUser("ana", [makeCandidate({ id: "r1", content: "Ana orders tea.", score: 0.9 })]);
    await request(h.app).get("/ui").expect(200);
    await request(h.app).get("/ui/app.js").expect(200);
    await request(h.app).get("/ui/mode").expect(200);
    await request(h.app).get("/v1/playground").set(ops).expect(200);
    await request(h.app).post("/v1/playground/validate").set(ops).send({ text: "name: x\nversion: 1\n" });
    await request(h.app)
      .post("/v1/playground/compare")
      .set(ops)
      .send({ userId: "ana", query: "tea", policies: [{ name: "default" }] })
      .expect(200);
    await request(h.app)
      .post("/v1/playground/eval")
      .set(ops)
      .send({ policies: [{ name: "default" }] });
    const paths = h.logs
      .map((l) => JSON.parse(l) as { msg?: string; path?: string })
      .filter((l) => l.msg === "request")
      .map((l) => l.path);
    expect(paths).toEqual([
      "/ui",
      "/ui/app.js",
      "/ui/mode",
      "/v1/playground",
      "/v1/playground/validate",
      "/v1/playground/compare",
      "/v1/playground/eval",
    ]);
  });
});
