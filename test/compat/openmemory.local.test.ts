/**
 * The OpenMemory surface served by the embedded local backend (a tenant with `local` and no `openmemory`),
 * driven by `openmemory-js`: the demo works with that client and no other server.
 */
import OpenMemory from "openmemory-js";
import request from "supertest";
import { approxTokens, type Gateway, KEYS, startGateway } from "./gateway";

const CARD = "4111 1111 1111 1111";
const record = (id: string, content: string, day: number, extra: Record<string, unknown> = {}) => ({
  id,
  userId: "ana",
  content,
  type: "fact",
  timestamp: `2026-03-0${day}T09:00:00Z`,
  sessionId: "s-1",
  ...extra,
});
const RECORDS = [
  record("e1", `Ana pays for her coffee with card ${CARD}. She orders an oat milk flat white.`, 1),
  record("e2", `ana pays for her coffee with card ${CARD}.  she orders an oat milk flat white`, 2),
  record("e3", "Ana's favourite coffee shop is Blue Bottle on Main Street.", 3, { tags: ["places"] }),
  ...[4, 5, 6, 7].map((d) => record(`long${d}`, `The coffee ${"really ".repeat(40)}matters on day ${d}`, d)),
];

describe("openmemory-js against the embedded local backend", () => {
  let gw: Gateway;
  const client = (apiKey: string = KEYS.app) => new OpenMemory({ baseUrl: gw.origin, apiKey });

  beforeEach(async () => {
    gw = await startGateway({ backends: "      local: { dataFile: globex.jsonl }", localRecords: RECORDS });
  });

  afterEach(async () => {
    await gw.close();
  });

  test("health and query: policy applied (duplicate removed, card redacted, budget held)", async () => {
    expect(await client().health()).toMatchObject({ ok: true });
    const res = await client().query("coffee card", { k: 10, filters: { user_id: "ana" } });
    const ids = res.matches.map((m) => m.id);
    expect(ids.filter((id) => id === "e1" || id === "e2")).toHaveLength(1);
    expect(JSON.stringify(res)).not.toContain(CARD);
    expect(res.matches.some((m) => m.content.includes("[REDACTED]"))).toBe(true);
    expect(approxTokens(res.matches.map((m) => m.content))).toBeLessThanOrEqual(100);
    for (const m of res.matches) {
      expect(m.score).toBeGreaterThanOrEqual(0);
      expect(m.score).toBeLessThanOrEqual(1);
      expect(m.path).toEqual([m.id]);
    }
  });

  test("add, getAll, getUserMemories, delete; what is added is searchable, on /v1/retrieve too", async () => {
    const added = await client().add("Ana switched to decaf espresso.", {
      user_id: "ana",
      tags: ["drinks"],
      metadata: { doc_id: "prefs", sector: "procedural" },
    });
    expect(added).toMatchObject({ primary_sector: "procedural", sectors: ["procedural"] });
    const all = await client().getAll({ limit: 100 });
    const item = all.items.find((i) => i.id === added.id);
    expect(item).toMatchObject({
      content: "Ana switched to decaf espresso.",
      tags: ["drinks"],
      metadata: { doc_id: "prefs" },
    });
    expect((await client().getUserMemories("ana")).items.map((i) => i.id)).toContain(added.id);
    const found = await client().query("decaf espresso", { filters: { user_id: "ana", tags: ["drinks"] } });
    expect(found.matches.map((m) => m.id)).toEqual([added.id]);
    const retrieved = await request(gw.h.app)
      .post("/v1/retrieve")
      .set("x-api-key", KEYS.app)
      .send({ userId: "ana", sessionId: "s-9", query: "decaf espresso", useMemory: true })
      .expect(200);
    expect(retrieved.body.memories.map((m: { id: string }) => m.id)).toContain(added.id);

    await expect(client().delete(added.id)).resolves.toEqual({ ok: true });
    await expect(client().delete(added.id)).rejects.toThrow("OpenMemory API error: 404");
    const gone = await request(gw.h.app).get(`/memory/${added.id}`).set("x-api-key", KEYS.app).expect(404);
    expect(gone.body).toEqual({ err: "nf" });
  });

  test("versions of a document added through the SDK: latest / earliest / as_of", async () => {
    for (const [v, day] of [
      ["one", "01"],
      ["two", "02"],
      ["three", "03"],
    ] as const) {
      await client().add(`Release notes version ${v} for memgate.`, {
        user_id: "ana",
        tags: ["file_ingest"],
        metadata: { filename: "notes.md", ingested_at: `2026-04-${day}T00:00:00Z` },
      });
    }
    const pick = async (extras: Record<string, unknown>) => {
      const res = await client().query("release notes memgate", {
        k: 10,
        filters: { user_id: "ana", tags: ["file_ingest"] },
        ...extras,
      });
      return res.matches.map((m) => m.content);
    };
    expect(await pick({ version_strategy: "latest" })).toEqual(["Release notes version three for memgate."]);
    expect(await pick({ version_strategy: "earliest" })).toEqual(["Release notes version one for memgate."]);
    expect(await pick({ version_strategy: "latest", as_of: "2026-04-02T12:00:00Z" })).toEqual([
      "Release notes version two for memgate.",
    ]);
  });

  test("invalid add is a 400 in OpenMemory's shape; scopes are enforced", async () => {
    const bad = await request(gw.h.app)
      .post("/memory/add")
      .set("x-api-key", KEYS.app)
      .send({ content: "x", user_id: "not a valid user id!" })
      .expect(400);
    expect(bad.body.error).toBe("invalid_input");
    await expect(client(KEYS.reader).add("x", { user_id: "ana" })).rejects.toThrow("403");
    await expect(client(KEYS.writer).query("coffee", { filters: { user_id: "ana" } })).rejects.toThrow("403");
  });

  test("no Zep backend: /api/v2 is 403; the gateway's own routes are untouched", async () => {
    const zep = await request(gw.h.app).get("/api/v2/users/ana").set("x-api-key", KEYS.app).expect(403);
    expect(zep.headers["content-type"]).toContain("application/problem+json");
    await request(gw.h.app).get("/healthz").expect(200);
    await request(gw.h.app).get("/nope").set("x-api-key", KEYS.app).expect(404);
    await request(gw.h.app).patch("/memory/e3").set("x-api-key", KEYS.app).send({ content: "y" }).expect(404);
  });
});
