/**
 * Policy lifecycle through the HTTP API (issue 28, item 3), with the policy files edited on disk while the gateway
 * watches them: a change must raise `version`, a deleted file retires its policy (a request naming it is refused
 * exactly as an unknown one; a tenant whose default it was keeps its last version and /readyz says degraded), and
 * GET /v1/policies/{name}/effective shows the compiled policy.
 */
import { unlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import request from "supertest";
import { policySchema } from "../../src/policy/schema";
import { type Harness, KEYS, makeHarness } from "../helpers/harness";
import { makeCandidate } from "../helpers/items";

let h: Harness;
afterEach(() => h.close());

async function waitFor(what: string, check: () => Promise<boolean>, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`timed out waiting for ${what}`);
}

const retrieve = (body: Record<string, unknown>, key: string = KEYS.acmeChat) =>
  request(h.app)
    .post("/v1/retrieve")
    .set("x-api-key", key)
    .send({ userId: "u-1", sessionId: "s-1", query: "coffee", useMemory: true, ...body });

const listed = async (name: string) => {
  const res = await request(h.app).get("/v1/policies").set("x-api-key", KEYS.acmeOps).expect(200);
  return res.body.policies.find((p: { name: string }) => p.name === name);
};

/** A problem answer without its per-request id. */
const sameAnswer = (res: request.Response) => {
  const { requestId: _id, ...rest } = res.body as Record<string, unknown>;
  return { status: res.status, type: res.headers["content-type"], body: rest };
};

describe("GET /v1/policies/{name}/effective", () => {
  test("the compiled policy with every default filled in; admin scope; unknown is 404", async () => {
    h = await makeHarness();
    const res = await request(h.app)
      .get("/v1/policies/fast/effective")
      .set("x-api-key", KEYS.acmeOps)
      .expect(200);
    // fast.yaml sets tokenizer, minScore and cache only: the rest is the schema's defaults.
    expect(res.body).toMatchObject({ name: "fast", version: 1, file: "fast.yaml" });
    expect(res.body.policy).toEqual(
      JSON.parse(
        JSON.stringify(
          policySchema.parse({
            name: "fast",
            version: 1,
            tokenizer: "approx",
            retrieval: { minScore: 0 },
            cache: { ttlSeconds: 60, staleSeconds: 3600 },
          }),
        ),
      ),
    );
    expect(res.body.policy.retrieval).toMatchObject({ topK: 8, overfetch: 2, maxTokens: 1500, minScore: 0 });
    expect(res.body.policy.fallbacks.COLLECTION_NOT_FOUND).toBe("empty");
    expect(res.body.hash).toBe((await listed("fast")).hash);

    await request(h.app).get("/v1/policies/fast/effective").set("x-api-key", KEYS.acmeChat).expect(403);
    await request(h.app).get("/v1/policies/fast/effective").expect(401);
    const unknown = await request(h.app)
      .get("/v1/policies/nosuch/effective")
      .set("x-api-key", KEYS.acmeOps)
      .expect(404);
    expect(unknown.body).toMatchObject({ code: "NOT_FOUND", detail: 'no policy named "nosuch"' });
  });
});

describe("policy lifecycle while the server runs", () => {
  test("a changed file with the same or a lower version is refused: the old one keeps serving, lastError says why", async () => {
    h = await makeHarness({ watchPolicies: true });
    const file = join(h.dir, "policies", "fast.yaml");
    writeFileSync(file, "name: fast\nversion: 1\ntokenizer: approx\nretrieval: { minScore: 0, topK: 3 }\n");
    await waitFor("the refusal", async () => (await listed("fast"))?.lastError != null);
    const fast = await listed("fast");
    expect(fast).toMatchObject({ version: 1, status: "active", rejectedChanges: 1 });
    expect(fast.lastError).toBe(
      "fast.yaml:2: version: 1 is not above the serving version 1: a changed policy must raise its version (version 1 keeps serving)",
    );
    const effective = await request(h.app)
      .get("/v1/policies/fast/effective")
      .set("x-api-key", KEYS.acmeOps)
      .expect(200);
    expect(effective.body.policy.retrieval.topK).toBe(8);

    writeFileSync(file, "name: fast\nversion: 2\ntokenizer: approx\nretrieval: { minScore: 0, topK: 3 }\n");
    await waitFor("version 2", async () => (await listed("fast"))?.version === 2);
    expect(await listed("fast")).toMatchObject({ lastError: null, status: "active" });
  });

  test("a deleted file retires its policy: naming it is answered exactly as an unknown policy", async () => {
    h = await makeHarness({ watchPolicies: true });
    h.zep.acme?.setUser("u-1", [makeCandidate({ id: "a", content: "Coffee, black.", score: 0.9 })]);
    expect((await retrieve({ policy: "fast" }).expect(200)).body.metadata.policy.name).toBe("fast");
    const unknownBefore = sameAnswer(await retrieve({ policy: "nosuch" }));

    unlinkSync(join(h.dir, "policies", "fast.yaml"));
    await waitFor("retired", async () => (await listed("fast"))?.status === "retired");

    const named = await retrieve({ policy: "fast" });
    const unknown = await retrieve({ policy: "nosuch" });
    expect(unknownBefore.status).toBe(400);
    expect(sameAnswer(named)).toEqual({
      ...sameAnswer(unknown),
      body: { ...sameAnswer(unknown).body, detail: 'policy: no policy named "fast"' },
    });
    expect(sameAnswer(unknown).body).toMatchObject({ detail: 'policy: no policy named "nosuch"' });
    const effective = await request(h.app).get("/v1/policies/fast/effective").set("x-api-key", KEYS.acmeOps);
    expect(effective.status).toBe(404);
    expect((await listed("fast")).lastError).toContain("fast.yaml was deleted");
    // Nobody's default: /readyz stays ready.
    expect((await request(h.app).get("/readyz").expect(200)).body.status).toBe("ready");
  });

  test("a tenant whose default policy file is deleted keeps the last version; /readyz says degraded, naming it", async () => {
    h = await makeHarness({ watchPolicies: true });
    h.zep.acme?.setUser("u-1", [makeCandidate({ id: "a", content: "Coffee, black.", score: 0.9 })]);
    const before = (await retrieve({}).expect(200)).body.metadata.policy;
    expect(before.name).toBe("default");

    unlinkSync(join(h.dir, "policies", "default.yaml"));
    await waitFor("retired", async () => (await listed("default"))?.status === "retired");

    const after = await retrieve({}).expect(200);
    expect(after.body.metadata.policy).toEqual(before); // the same name, version and hash
    expect(after.body.memories.map((m: { id: string }) => m.id)).toEqual(["a"]);
    // Named explicitly, it is an unknown policy like any other.
    expect((await retrieve({ policy: "default" })).status).toBe(400);

    const ready = await request(h.app).get("/readyz").expect(200);
    expect(ready.body.status).toBe("degraded");
    const check = ready.body.checks.find((c: { name: string }) => c.name === "policies:retired-defaults");
    expect(check).toMatchObject({ ok: false, degraded: true });
    expect(check.detail).toMatch(
      /^default policy "default" \(version \d+\) of 2 tenants: the file was deleted/,
    );
    // The probe is unauthenticated: it counts the tenants, never names them.
    expect(JSON.stringify(ready.body)).not.toMatch(/acme|globex/);

    // A file defining it again makes it active and the replica ready.
    writeFileSync(join(h.dir, "policies", "default-again.yaml"), "name: default\nversion: 9\n");
    await waitFor("active again", async () => (await listed("default"))?.status === "active");
    expect((await request(h.app).get("/readyz").expect(200)).body.status).toBe("ready");
    expect((await retrieve({}).expect(200)).body.metadata.policy.version).toBe(9);
  });
});
