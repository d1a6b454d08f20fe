/**
 * The MCP door against the embedded local store, driven by the MCP SDK's own client over Streamable HTTP: the
 * three tools, one question through index → timeline → details, redaction inside tool results, a fallback as an
 * `isError` result with its code, the cache, scopes and the tenant's users.
 */
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import request from "supertest";
import { COMPAT_POLICY, type Gateway, KEYS, startGateway } from "../compat/gateway";
import { installTelemetry, type TestTelemetry } from "../telemetry/setup";
import { call, httpClient, type IndexLineView } from "./client";
import { EMAIL, RECORDS } from "./fixtures";

describe("MCP over Streamable HTTP — local store", () => {
  let gw: Gateway;
  let client: Client;
  let telemetry: TestTelemetry;
  beforeAll(() => {
    telemetry = installTelemetry();
  });
  afterAll(() => telemetry.close());

  beforeEach(async () => {
    gw = await startGateway({
      backends: "      local: { dataFile: globex.jsonl }",
      localRecords: RECORDS,
    });
    client = await httpClient(gw.origin, KEYS.app);
  });
  afterEach(async () => {
    await client.close();
    await gw.close();
  });

  test("lists the three tools with JSON Schemas from the HTTP API's zod schemas", async () => {
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual(["get_details", "get_timeline", "search_memory"]);
    const search = tools.find((t) => t.name === "search_memory");
    expect(search?.inputSchema.required).toEqual(expect.arrayContaining(["userId", "query"]));
    const props = search?.inputSchema.properties as Record<string, { pattern?: string; enum?: string[] }>;
    expect(props.userId?.pattern).toBeDefined(); // /v1's userId rule
    expect(props.intent?.enum).toContain("factual");
    const details = tools.find((t) => t.name === "get_details");
    const detailProps = (details?.inputSchema.properties ?? {}) as Record<string, { maxItems?: number }>;
    expect(detailProps.ids?.maxItems).toBe(20);
  });

  test("index → timeline → details for one question, redacted, with citations and the certificate", async () => {
    const search = await call(client, "search_memory", { userId: "ana", query: "When is the Lisbon trip?" });
    expect(search.isError).toBe(false);
    const index = search.body.index as IndexLineView[];
    expect(index.map((l) => l.id)).toContain("t3");
    const t3 = index.find((l) => l.id === "t3") as IndexLineView;
    expect(t3.gist).toBe("I want to visit Lisbon in May."); // the best matching sentence, not the whole turn
    expect(t3.citation).toEqual({
      id: "t3",
      backend: "local",
      sessionId: "s-1",
      timestamp: "2026-03-01T09:02:00.000Z",
    });
    expect(search.body.sufficiency).toMatchObject({
      completeness: expect.any(Number),
      verdict: expect.any(String),
    });
    expect(JSON.stringify(search.body)).not.toContain("Bob");

    const timeline = await call(client, "get_timeline", { userId: "ana", id: "t3", window: 1 });
    expect(timeline.isError).toBe(false);
    const lines = timeline.body.index as IndexLineView[];
    expect(lines.map((l) => [l.id, l.relation])).toEqual([
      ["t2", "before"],
      ["t3", "self"],
      ["t4", "after"],
    ]);

    const details = await call(client, "get_details", { userId: "ana", ids: ["t3", "t4"] });
    expect(details.isError).toBe(false);
    const memories = details.body.memories as Array<{
      id: string;
      content: string;
      provenance: { wasRedacted: boolean };
    }>;
    expect(memories.map((m) => m.id)).toEqual(["t3", "t4"]);
    expect(memories[0]?.content).toBe(
      "I want to visit Lisbon in May. Send the itinerary to [REDACTED] please.",
    );
    expect(memories[0]?.provenance.wasRedacted).toBe(true);
    expect(JSON.stringify([search, timeline, details])).not.toContain(EMAIL);
    // Each layer is one call of the core, in its own span, labelled with the MCP door.
    for (const name of ["memgate.retrieve", "memgate.timeline", "memgate.details"]) {
      const span = telemetry.spans().find((sp) => sp.name === name);
      expect(span?.attributes).toMatchObject({ "memgate.door": "mcp", "memgate.backend": "local" });
    }
  });

  test("another user's id is simply absent (details) or not found (timeline), like an unknown id", async () => {
    const details = await call(client, "get_details", { userId: "ana", ids: ["other", "t1", "nope"] });
    expect((details.body.memories as Array<{ id: string }>).map((m) => m.id)).toEqual(["t1"]);
    const theirs = await call(client, "get_timeline", { userId: "ana", id: "other" });
    const unknown = await call(client, "get_timeline", { userId: "ana", id: "nope" });
    expect(theirs.isError).toBe(true);
    expect(theirs.texts).toEqual(unknown.texts);
    expect(theirs.texts[0]).toMatch(/^NOT_FOUND/);
  });

  test("a second identical search_memory is a cache hit", async () => {
    const args = { userId: "ana", query: "fado restaurant" };
    const first = await call(client, "search_memory", args);
    const second = await call(client, "search_memory", args);
    expect((first.body.metadata as { cache: string }).cache).toBe("miss");
    expect((second.body.metadata as { cache: string }).cache).toBe("hit");
    expect(second.body.index).toEqual(first.body.index);
    // An intent of the caller's own shapes differently: its own cache entry.
    const withIntent = await call(client, "search_memory", { ...args, intent: "exploratory" });
    expect((withIntent.body.metadata as { cache: string }).cache).toBe("miss");
    const spans = telemetry.spans().filter((sp) => sp.name === "memgate.retrieve");
    expect(spans.at(-2)?.attributes).toMatchObject({ "memgate.door": "mcp", "memgate.cache": "hit" });
    const metrics = await request(gw.h.app).get("/metrics").expect(200);
    expect(metrics.text).toMatch(
      /memgate_retrieval_cache_lookups_total\{[^}]*cache="hit"[^}]*door="mcp"[^}]*\} 1/,
    );
  });

  test("a fallback is a tool result with isError and its code, never a protocol error", async () => {
    // The local store cannot fail on demand; the user's rate limit takes the core's same declared-fallback path.
    const tight = await startGateway({
      backends: "      local: { dataFile: globex.jsonl }",
      localRecords: RECORDS,
      policies: { compat: `${COMPAT_POLICY}rateLimit: { perUser: { points: 2, durationSeconds: 60 } }\n` },
    });
    const agent = await httpClient(tight.origin, KEYS.app);
    try {
      expect((await call(agent, "search_memory", { userId: "ana", query: "Lisbon" })).isError).toBe(false);
      expect((await call(agent, "get_details", { userId: "ana", ids: ["t1"] })).isError).toBe(false);
      const limited = await call(agent, "search_memory", { userId: "ana", query: "fado" });
      expect(limited.isError).toBe(true);
      expect(limited.texts[0]).toMatch(/^FALLBACK RATE_LIMITED \((skip|cache)\): /);
      expect(limited.body.metadata).toMatchObject({ fallback: { code: "RATE_LIMITED" } });
      const details = await call(agent, "get_details", { userId: "ana", ids: ["t1"] });
      expect(details.isError).toBe(true);
      expect(details.texts[0]).toMatch(/^FALLBACK RATE_LIMITED/);
    } finally {
      await agent.close();
      await tight.close();
    }
  });

  test("bad input names the field; a key without the retrieve scope is refused", async () => {
    const bad = await call(client, "get_details", { userId: "../x", ids: [] });
    expect(bad.isError).toBe(true);
    expect(bad.texts.join(" ")).toMatch(/userId/);
    await expect(httpClient(gw.origin, KEYS.writer)).rejects.toThrow(/403|Forbidden|scope/i);
    await expect(httpClient(gw.origin, "mg_wrong_key_0123456789")).rejects.toThrow(/401|Unauthorized/i);
    // Stateless: no session stream to open, no session to end.
    const get = await request(gw.origin).get("/mcp").set("authorization", `Bearer ${KEYS.app}`).expect(405);
    expect(get.headers.allow).toBe("POST");
    await request(gw.origin).delete("/mcp").expect(405);
  });
});
