/**
 * Finding 01 (issue 26, HIGH): two tenants whose `local` backend names the same `dataFile` shared one writable
 * store (the store was keyed by file path). Tenant A's `POST /memory/add` was retrieved by tenant B, and A's
 * `DELETE /users/{id}/memories` deleted B's memories. Each tenant now has its own store, loaded from the file:
 * the file is the seed both start from, and what one tenant writes or deletes stays with that tenant.
 *
 * Driven as an attacker would: tenant A's own key over HTTP, against the real wiring and the real local factory.
 */
import request from "supertest";
import { BACKEND_FACTORIES } from "../../src/server/services";
import { hashKey } from "../../src/tenants/keys";
import { type Harness, makeHarness } from "../helpers/harness";

const KEY_A = "mg_test_tenant_a_0123456789";
const KEY_B = "mg_test_tenant_b_0123456789";

/** Both tenants name the same file (the harness writes `globex.jsonl` with the records below). */
const TENANTS = `tenants:
  - id: tenant-a
    keys:
      - { name: app, sha256: ${hashKey(KEY_A)}, scopes: [retrieve, proxy] }
    policies: { allowed: ["*"], default: default }
    backends:
      local: { dataFile: globex.jsonl }
  - id: tenant-b
    keys:
      - { name: app, sha256: ${hashKey(KEY_B)}, scopes: [retrieve, proxy] }
    policies: { allowed: ["*"], default: default }
    backends:
      local: { dataFile: globex.jsonl }
`;

const SEED = [
  {
    id: "seed-1",
    userId: "bob",
    content: "Bob keeps the spare office key under the blue flower pot.",
    type: "fact",
    timestamp: "2026-03-01T09:00:00Z",
    sessionId: "s-1",
  },
];

function retrieve(h: Harness, key: string, userId: string, query: string) {
  return request(h.app)
    .post("/v1/retrieve")
    .set("x-api-key", key)
    .send({ userId, sessionId: "s-9", query, useMemory: true, policy: "fast" })
    .expect(200);
}

const ids = (res: { body: { memories: Array<{ id: string }> } }) => res.body.memories.map((m) => m.id);

describe("Finding 01 — tenants naming the same local dataFile do not share a writable store", () => {
  let h: Harness;

  beforeEach(async () => {
    h = await makeHarness({ tenants: TENANTS, localRecords: SEED, factories: BACKEND_FACTORIES });
  });

  afterEach(async () => {
    await h.close();
  });

  test("the boot log names the file and both tenants", () => {
    const line = h.logs.find((l) => l.includes("local data file loaded once per tenant"));
    expect(line).toBeDefined();
    expect(JSON.parse(line ?? "{}")).toMatchObject({
      dataFile: `${h.dir}/globex.jsonl`,
      tenants: ["tenant-a", "tenant-b"],
    });
  });

  test("both tenants start from the file's records", async () => {
    expect(ids(await retrieve(h, KEY_A, "bob", "spare office key"))).toEqual(["seed-1"]);
    expect(ids(await retrieve(h, KEY_B, "bob", "spare office key"))).toEqual(["seed-1"]);
  });

  test("what tenant A adds is not retrieved, listed or fetched by tenant B", async () => {
    const added = await request(h.app)
      .post("/memory/add")
      .set("x-api-key", KEY_A)
      .send({ content: "Planted note: the vault code is 4417.", user_id: "bob" })
      .expect(200);
    const id: string = added.body.id;
    expect(typeof id).toBe("string");

    expect(ids(await retrieve(h, KEY_A, "bob", "vault code"))).toContain(id);
    expect(ids(await retrieve(h, KEY_B, "bob", "vault code"))).not.toContain(id);

    const listed = await request(h.app).get("/users/bob/memories").set("x-api-key", KEY_B).expect(200);
    expect(JSON.stringify(listed.body)).not.toContain(id);
    const all = await request(h.app).get("/memory/all").set("x-api-key", KEY_B).expect(200);
    expect(JSON.stringify(all.body)).not.toContain(id);
    await request(h.app).get(`/memory/${id}`).set("x-api-key", KEY_B).expect(404);
    const query = await request(h.app)
      .post("/memory/query")
      .set("x-api-key", KEY_B)
      .send({ query: "vault code", filters: { user_id: "bob" } })
      .expect(200);
    expect(JSON.stringify(query.body)).not.toContain(id);
  });

  test("tenant A deleting a user's memories leaves tenant B's untouched", async () => {
    await request(h.app).delete("/users/bob/memories").set("x-api-key", KEY_A).expect(200);
    expect(ids(await retrieve(h, KEY_A, "bob", "spare office key"))).toEqual([]);
    expect(ids(await retrieve(h, KEY_B, "bob", "spare office key"))).toEqual(["seed-1"]);
    await request(h.app).get("/memory/seed-1").set("x-api-key", KEY_B).expect(200);
  });

  test("tenant A deleting one memory by id leaves tenant B's copy", async () => {
    await request(h.app).delete("/memory/seed-1").set("x-api-key", KEY_A).expect(200);
    await request(h.app).get("/memory/seed-1").set("x-api-key", KEY_A).expect(404);
    await request(h.app).get("/memory/seed-1").set("x-api-key", KEY_B).expect(200);
  });
});
