/**
 * The MCP door against Zep (the real adapter against the fake Zep server), driven by the MCP SDK's own client:
 * index → timeline (the thread's episodes around a message) → details, redaction, a failing Zep as an `isError`
 * result with ZEP_UNAVAILABLE, the cache, and another user's uuid kept out.
 */
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { createZepFakeServer, ZEP_FAKE_API_KEY, type ZepFakeServer } from "../backends/fakes/zep-server";
import { type Gateway, KEYS, startGateway } from "../compat/gateway";
import { call, httpClient, type IndexLineView } from "./client";

const PHONE = "+1 415 555 0132";
const message = (id: string, minute: number, content: string, role: "user" | "assistant" = "user") => ({
  id,
  content,
  type: "message" as const,
  role,
  timestamp: `2026-04-02T10:${String(minute).padStart(2, "0")}:00Z`,
  sessionId: "th-1",
});

describe("MCP over Streamable HTTP — Zep", () => {
  let zep: ZepFakeServer;
  let gw: Gateway;
  let client: Client;

  beforeEach(async () => {
    zep = await createZepFakeServer();
    await zep.seed("ana", [
      message("ep-1", 0, "I need a dentist appointment."),
      message("ep-2", 1, "Which day suits you for the dentist?", "assistant"),
      message("ep-3", 2, `Thursday works. Call me on ${PHONE} to confirm the dentist.`),
      message("ep-4", 3, "Booked the dentist for Thursday.", "assistant"),
      { ...message("ep-x", 0, "Unrelated chat about the dentist in another thread."), sessionId: "th-2" },
      {
        id: "fact-1",
        content: "Ana's dentist appointment is on Thursday.",
        type: "fact",
        timestamp: "2026-04-02T10:05:00Z",
        sessionId: "th-1",
      },
    ]);
    await zep.seed("bob", [message("bob-1", 0, "Bob's dentist is Dr. Who.")]);
    gw = await startGateway({
      env: { T_ZEP_KEY: ZEP_FAKE_API_KEY },
      backends: `      zep: { apiKeyEnv: T_ZEP_KEY, baseUrl: "${zep.baseUrl}" }`,
    });
    client = await httpClient(gw.origin, KEYS.app);
  });
  afterEach(async () => {
    await client.close();
    await gw.close();
    await zep.close();
  });

  test("index → timeline → details for one question, redacted", async () => {
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual(["get_details", "get_timeline", "search_memory"]);

    const search = await call(client, "search_memory", { userId: "ana", query: "Which day is the dentist?" });
    expect(search.isError).toBe(false);
    const index = search.body.index as IndexLineView[];
    const ep3 = index.find((l) => l.id === "ep-3");
    expect(ep3?.citation).toMatchObject({ id: "ep-3", backend: "zep", sessionId: "th-1", messageId: "ep-3" });
    expect(JSON.stringify(search.body)).not.toContain(PHONE);

    const timeline = await call(client, "get_timeline", { userId: "ana", id: "ep-3", window: 2 });
    expect(timeline.isError).toBe(false);
    expect((timeline.body.index as IndexLineView[]).map((l) => [l.id, l.relation])).toEqual([
      ["ep-1", "before"],
      ["ep-2", "before"],
      ["ep-3", "self"],
      ["ep-4", "after"],
    ]);
    expect(zep.requests.some((r) => r.path.startsWith("/graph/episodes/user/ana?lastn="))).toBe(true);

    const details = await call(client, "get_details", { userId: "ana", ids: ["ep-3", "fact-1", "bob-1"] });
    expect(details.isError).toBe(false);
    const memories = details.body.memories as Array<{ id: string; content: string }>;
    expect(memories.map((m) => m.id)).toEqual(["ep-3", "fact-1"]); // bob's uuid is simply absent
    expect(memories[0]?.content).toBe("Thursday works. Call me on [REDACTED] to confirm the dentist.");
  });

  test("a second identical search_memory is a cache hit (one Zep search)", async () => {
    const args = { userId: "ana", query: "dentist Thursday" };
    await call(client, "search_memory", args);
    const searches = zep.requestsTo("/graph/search").length;
    const second = await call(client, "search_memory", args);
    expect((second.body.metadata as { cache: string }).cache).toBe("hit");
    expect(zep.requestsTo("/graph/search").length).toBe(searches);
  });

  test("Zep failing: each tool answers isError with ZEP_UNAVAILABLE, never a protocol error", async () => {
    zep.fail("server_error");
    for (const [name, args] of [
      ["search_memory", { userId: "ana", query: "dentist" }],
      ["get_timeline", { userId: "ana", id: "ep-3" }],
      ["get_details", { userId: "ana", ids: ["ep-3"] }],
    ] as const) {
      const answer = await call(client, name, args);
      expect(answer.isError).toBe(true);
      expect(answer.texts[0]).toMatch(/^FALLBACK ZEP_UNAVAILABLE \(skip\): /);
      expect(answer.body.metadata).toMatchObject({ fallback: { code: "ZEP_UNAVAILABLE" } });
    }
  });
});
