import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import request from "supertest";
import { BackendError } from "../../src/backends/types";
import { type Harness, KEYS, makeHarness } from "../helpers/harness";
import { makeCandidate } from "../helpers/items";

async function waitFor(check: () => Promise<boolean>, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error("condition not met in time");
}

describe("operations endpoints", () => {
  let h: Harness;
  afterEach(() => h.close());

  test("/healthz answers without auth", async () => {
    h = await makeHarness();
    await request(h.app)
      .get("/healthz")
      .expect(200, {
        status: "ok",
        version: JSON.parse(readFileSync(join(__dirname, "../../package.json"), "utf8")).version,
      });
  });

  test("/readyz: ready when policies are loaded; backends are not pinged, a failing ping changes nothing", async () => {
    h = await makeHarness();
    const ready = await request(h.app).get("/readyz").expect(200);
    expect(ready.body.status).toBe("ready");
    expect(ready.body.checks.map((c: { name: string }) => c.name)).toEqual(["policies", "backends"]);
    expect(ready.body.checks).toContainEqual({
      name: "backends",
      ok: true,
      detail: "4 of 4 circuits closed",
    });
    const zep = h.zep.acme;
    if (!zep) throw new Error("no fake");
    let pings = 0;
    zep.ping = async () => {
      pings++;
      throw new BackendError({ kind: "unavailable", backend: "zep", message: "Zep ping failed: HTTP 503" });
    };
    const still = await request(h.app).get("/readyz").expect(200);
    expect(still.body.status).toBe("ready");
    expect(pings).toBe(0);
  });

  test("a policy edited on disk while the server runs is served at once; a bad edit is rejected", async () => {
    h = await makeHarness({ watchPolicies: true });
    h.zep.acme?.setUser("u-1", [
      makeCandidate({ id: "a", content: "First. Second. Third.", score: 0.9 }),
      makeCandidate({ id: "b", content: "Other memory.", score: 0.8 }),
    ]);
    const ask = (query: string) =>
      request(h.app)
        .post("/v1/retrieve")
        .set("x-api-key", KEYS.acmeChat)
        .send({ userId: "u-1", sessionId: "s-1", query, useMemory: true, policy: "fast" });
    const before = await ask("q1").expect(200);
    expect(before.body.metadata.policy.version).toBe(1);
    expect(before.body.memories[0].content).toBe("First. Second....");

    const file = join(h.dir, "policies", "fast.yaml");
    writeFileSync(
      file,
      "name: fast\nversion: 2\ntokenizer: approx\nretrieval: { minScore: 0, clipSentences: 1 }\n",
    );
    await waitFor(async () => (await ask("q2")).body.metadata.policy.version === 2);
    const after = await ask("q3").expect(200);
    expect(after.body.memories[0].content).toBe("First....");

    writeFileSync(file, "name: fast\nversion: 3\nretrieval: { topK: 99 }\n");
    await waitFor(async () => {
      const res = await request(h.app).get("/v1/policies").set("x-api-key", KEYS.acmeOps);
      const fast = res.body.policies.find((p: { name: string }) => p.name === "fast");
      return fast?.lastError !== null && fast?.lastError !== undefined;
    });
    const listed = await request(h.app).get("/v1/policies").set("x-api-key", KEYS.acmeOps).expect(200);
    const fast = listed.body.policies.find((p: { name: string }) => p.name === "fast");
    expect(fast).toMatchObject({ name: "fast", version: 2, status: "active" });
    expect(fast.lastError).toContain("retrieval.topK: must be an integer from 1 to 20 (got 99)");
    expect(fast.hash).toMatch(/^[0-9a-f]{64}$/);
    const still = await ask("q4").expect(200);
    expect(still.body.metadata.policy.version).toBe(2);
  });
});
