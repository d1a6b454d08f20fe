/**
 * Progressive disclosure on OpenMemory (the real adapter against the fake OpenMemory server): details and a
 * timeline by time from the user's own list, another user's id kept out, redaction, and a failing server as the
 * declared OPENMEMORY_UNAVAILABLE fallback in a 200.
 */
import request from "supertest";
import type { SeedMemory } from "../backends/contract";
import { FakeOpenMemoryServer } from "../backends/fakes/openmemory-server";
import { type Gateway, KEYS, startGateway } from "../compat/gateway";

const OM_KEY = "om-disclosure-key";
const fact = (id: string, day: number, content: string): SeedMemory => ({
  id,
  content,
  type: "fact",
  timestamp: `2026-05-0${day}T12:00:00Z`,
  sessionId: "s",
});

describe("progressive disclosure — OpenMemory", () => {
  let om: FakeOpenMemoryServer;
  let gw: Gateway;
  const post = (path: string, body: object) =>
    request(gw.origin).post(path).set("authorization", `Bearer ${KEYS.app}`).send(body);

  beforeEach(async () => {
    om = await FakeOpenMemoryServer.start({ apiKeys: [OM_KEY] });
    await om.seed("ana", [
      fact("o1", 1, "Ana moved to Porto."),
      fact("o2", 2, "Ana's new number is +1 415 555 0132."),
      fact("o3", 3, "Ana adopted a cat named Miso."),
      fact("o4", 4, "Ana started pottery classes."),
    ]);
    await om.seed("bob", [fact("ob", 2, "Bob likes chess.")]);
    gw = await startGateway({
      env: { T_OM_KEY: OM_KEY },
      backends: `      openmemory: { url: "${om.baseUrl}", apiKeyEnv: T_OM_KEY, userScoping: user_id }`,
    });
  });
  afterEach(async () => {
    await gw.close();
    await om.close();
  });

  test("details from the user's own list, redacted; another user's id absent", async () => {
    const res = await post("/v1/memories/details", { userId: "ana", ids: ["o2", "ob", "o1"] }).expect(200);
    expect(res.body.memories.map((m: { id: string }) => m.id)).toEqual(["o2", "o1"]);
    expect(res.body.memories[0].content).toBe("Ana's new number is [REDACTED].");
    expect(res.body.metadata.backend).toBe("openmemory");
  });

  test("a timeline by time around a memory; another user's id is 404", async () => {
    const res = await post("/v1/memories/timeline", { userId: "ana", id: "o3", window: 1 }).expect(200);
    expect(res.body.index.map((l: { id: string; relation: string }) => [l.id, l.relation])).toEqual([
      ["o2", "before"],
      ["o3", "self"],
      ["o4", "after"],
    ]);
    await post("/v1/memories/timeline", { userId: "ana", id: "ob" }).expect(404);
  });

  test("a failing server is the declared fallback in a 200", async () => {
    om.fail("server_error");
    const res = await post("/v1/memories/details", { userId: "ana", ids: ["o1"] }).expect(200);
    expect(res.body.memories).toEqual([]);
    expect(res.body.metadata.fallback).toMatchObject({ code: "OPENMEMORY_UNAVAILABLE", action: "skip" });
  });
});
