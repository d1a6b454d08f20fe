/**
 * Drop-in Zep compatibility driven by the real `@getzep/zep-cloud` SDK: `ZepClient` with `baseUrl` pointed at
 * the gateway (in-process, ephemeral port); upstream Zep: a fake server on 127.0.0.1 (test/backends/fakes/zep-server.ts).
 */
import { Zep, ZepClient, ZepError } from "@getzep/zep-cloud";
import type { SeedMemory } from "../backends/contract";
import {
  createZepFakeServer,
  type RecordedZepRequest,
  ZEP_FAKE_API_KEY,
  type ZepFakeServer,
} from "../backends/fakes/zep-server";
import { approxTokens, type Gateway, KEYS, startGateway } from "./gateway";

const CARD = "4111 1111 1111 1111";
const once = { maxRetries: 0 };

const ANA: SeedMemory[] = [
  {
    id: "e1",
    content: `Ana pays for her coffee with card ${CARD}. She orders an oat milk flat white.`,
    type: "fact",
    timestamp: "2026-03-01T09:00:00.000Z",
    sessionId: "s-1",
  },
  {
    id: "e2",
    content: `ana pays for her coffee with card ${CARD}.  she orders an oat milk flat white`,
    type: "fact",
    timestamp: "2026-03-02T09:00:00.000Z",
    sessionId: "s-1",
  },
  {
    id: "e3",
    content: "Ana's favourite coffee shop is Blue Bottle on Main Street.",
    type: "fact",
    timestamp: "2026-03-03T09:00:00.000Z",
    sessionId: "s-2",
  },
];

/** Long one-sentence facts: clipping keeps them whole, so only the budget can cut them. */
const BOB: SeedMemory[] = ["alpha", "bravo", "charlie", "delta", "echo"].map((w, i) => ({
  id: `b${i}`,
  content: `Bob ${w} remembers that the coffee ${"very ".repeat(30)}good at the ${w} cafe`,
  type: "fact",
  timestamp: `2026-03-0${i + 1}T09:00:00.000Z`,
  sessionId: "s-b",
}));

interface Recorded {
  method: string;
  path: string;
  headers: Record<string, string | string[] | undefined>;
  body: unknown;
}

describe("Zep SDK through the gateway", () => {
  let zep: ZepFakeServer;
  let gw: Gateway;
  let extra: Recorded[];
  const client = (apiKey: string = KEYS.app) => new ZepClient({ apiKey, baseUrl: `${gw.origin}/api/v2` });

  beforeEach(async () => {
    zep = await createZepFakeServer();
    await zep.seed("ana", ANA);
    await zep.seed("bob", BOB);
    extra = [];
    const record = (req: RecordedZepRequest) => {
      extra.push({ method: req.method, path: `/api/v2${req.path}`, headers: req.headers, body: req.body });
    };
    zep.route("POST", "/threads/t-1/messages", (req) => {
      record(req);
      const answer: Record<string, unknown> = { message_uuids: ["m-1"] };
      if ((req.body as { return_context?: boolean }).return_context === true)
        answer.context = `FACTS: Ana's card is ${CARD}. ${"She moved to Lisbon last spring. ".repeat(30)}`;
      return [200, JSON.stringify(answer), { "Content-Type": "application/json" }];
    });
    zep.route("GET", "/threads/t-1/context", (req) => {
      record(req);
      const context = `FACTS: Ana's card is ${CARD}. ${"She likes long walks on the beach. ".repeat(30)}`;
      return [200, JSON.stringify({ context }), { "Content-Type": "application/json" }];
    });
    gw = await startGateway({
      env: { T_ZEP_KEY: ZEP_FAKE_API_KEY },
      backends: `      zep: { apiKeyEnv: T_ZEP_KEY, baseUrl: "${zep.baseUrl}" }`,
    });
  });

  afterEach(async () => {
    await gw.close();
    await zep.close();
  });

  test("graph.search: Zep's shape, duplicate fact removed, card redacted, scores normalized", async () => {
    const res = await client().graph.search(
      { userId: "ana", query: "coffee card", scope: "edges", limit: 5, reranker: "cross_encoder" },
      once,
    );
    const edges = res.edges ?? [];
    const ids = edges.map((e) => e.uuid);
    expect(ids).toContain("e3");
    expect(ids.filter((id) => id === "e1" || id === "e2")).toHaveLength(1);
    expect(JSON.stringify(res)).not.toContain(CARD);
    expect(edges.some((e) => e.fact.includes("[REDACTED]"))).toBe(true);
    for (const e of edges) {
      // Zep's own fields survive; only fact and score are the policy's.
      expect(e.name).toBe("RELATES_TO");
      expect(e.sourceNodeUuid).toBe(`${e.uuid}-source`);
      expect(e.createdAt).toBeDefined();
      expect(e.score).toBeGreaterThanOrEqual(0);
      expect(e.score).toBeLessThanOrEqual(1);
    }
    const [sent] = zep.requestsTo("/graph/search");
    // limit 5 became the policy's topK; Zep was asked for 5 × overfetch 2.
    expect(sent?.body).toMatchObject({ user_id: "ana", query: "coffee card", scope: "edges", limit: 10 });
  });

  test("graph.search: the request's limit is the topK, beyond the policy files' 1–20 range", async () => {
    const res = await client().graph.search({ userId: "ana", query: "coffee", limit: 1 }, once);
    expect(res.edges).toHaveLength(1);
    await client().graph.search({ userId: "ana", query: "coffee", limit: 40 }, once);
    expect(zep.requestsTo("/graph/search")[1]?.body).toMatchObject({ limit: 50 });
  });

  test("graph.search: a limit above Zep's maximum (50) is clamped to 50, and the answer says so", async () => {
    // Zep documents limit ≤ 50 (the fake refuses more with 400, as Zep does): 80 must not reach it as 80.
    const { data, rawResponse } = await client()
      .graph.search({ userId: "ana", query: "coffee", limit: 80 }, once)
      .withRawResponse();
    expect((data.edges ?? []).length).toBeGreaterThan(0);
    expect(zep.requestsTo("/graph/search")[0]?.body).toMatchObject({ limit: 50 });
    expect(rawResponse.headers.get("x-memgate-limit")).toBe("50; asked=80");
    // Within the maximum, nothing is clamped and no header is sent.
    const within = await client()
      .graph.search({ userId: "ana", query: "coffee", limit: 50 }, once)
      .withRawResponse();
    expect(within.rawResponse.headers.get("x-memgate-limit")).toBeNull();
    expect(zep.requestsTo("/graph/search")[1]?.body).toMatchObject({ limit: 50 });
  });

  test("graph.search: the token budget holds over every returned fact", async () => {
    const res = await client().graph.search({ userId: "bob", query: "coffee cafe", limit: 20 }, once);
    const facts = (res.edges ?? []).map((e) => e.fact);
    expect(facts.length).toBeGreaterThan(0);
    expect(facts.length).toBeLessThan(BOB.length);
    expect(approxTokens(facts)).toBeLessThanOrEqual(100);
    expect(facts.at(-1)?.endsWith("...")).toBe(true);
  });

  test("thread.getUserContext: the context string is redacted and held to the budget", async () => {
    const res = await client().thread.getUserContext("t-1", undefined, once);
    const context = res.context ?? "";
    expect(context).toContain("[REDACTED]");
    expect(context).not.toContain(CARD);
    expect(approxTokens([context])).toBeLessThanOrEqual(100);
    expect(context.endsWith("...")).toBe(true);
    expect(extra.find((r) => r.method === "GET")?.headers.authorization).toBe(`Api-Key ${ZEP_FAKE_API_KEY}`);
  });

  test("thread.getUserContext with templateId: forwarded, shaped, and cached by the core", async () => {
    const first = await client().thread.getUserContext("t-1", { templateId: "tpl-1" }, once);
    expect(first.context).toContain("[REDACTED]");
    expect(approxTokens([first.context ?? ""])).toBeLessThanOrEqual(100);
    const gets = () => extra.filter((r) => r.method === "GET");
    expect(gets()).toHaveLength(1);
    expect(gets()[0]?.path).toBe("/api/v2/threads/t-1/context?template_id=tpl-1");
    const again = await client()
      .thread.getUserContext("t-1", { templateId: "tpl-1" }, once)
      .withRawResponse();
    expect(again.data.context).toBe(first.context);
    expect(again.rawResponse.headers.get("x-memgate-cache")).toBe("hit");
    expect(gets()).toHaveLength(1);
    // Another template is another entry.
    await client().thread.getUserContext("t-1", { templateId: "tpl-2" }, once);
    expect(gets()).toHaveLength(2);
  });

  test("thread.addMessages with returnContext: written unchanged, the returned context shaped", async () => {
    const messages = [{ role: "user" as const, name: "Ana", content: "I moved to Lisbon." }];
    const res = await client().thread.addMessages("t-1", { messages, returnContext: true }, once);
    expect(res.messageUuids).toEqual(["m-1"]);
    expect(res.context).toContain("[REDACTED]");
    expect(res.context).not.toContain(CARD);
    expect(approxTokens([res.context ?? ""])).toBeLessThanOrEqual(100);
    const [sent] = extra.filter((r) => r.method === "POST");
    expect(sent?.body).toEqual({ messages, return_context: true });
    expect(sent?.headers.authorization).toBe(`Api-Key ${ZEP_FAKE_API_KEY}`);
  });

  test("thread.addMessages is proxied unchanged with the tenant's Zep key", async () => {
    const res = await client().thread.addMessages(
      "t-1",
      { messages: [{ role: "user", name: "Ana", content: "I moved to Lisbon." }] },
      once,
    );
    expect(res.messageUuids).toEqual(["m-1"]);
    const [sent] = extra.filter((r) => r.method === "POST");
    expect(sent?.body).toEqual({ messages: [{ role: "user", name: "Ana", content: "I moved to Lisbon." }] });
    expect(sent?.headers.authorization).toBe(`Api-Key ${ZEP_FAKE_API_KEY}`);
    expect(sent?.headers["content-type"]).toBe("application/json");
  });

  test("user.get of an unknown user: Zep's 404 reaches the SDK as NotFoundError", async () => {
    const err = await client()
      .user.get("nobody", once)
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Zep.NotFoundError);
    expect((err as ZepError).statusCode).toBe(404);
    expect((err as ZepError).body).toEqual({ message: "user not found" });
    const found = await client().user.get("ana", once);
    expect(found.userId).toBe("ana");
  });

  test("upstream 500: passed through on a proxied call, an empty result (not a 5xx) on graph.search", async () => {
    zep.fail("server_error");
    const err = await client()
      .user.get("ana", once)
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ZepError);
    expect((err as ZepError).statusCode).toBe(500);
    const res = await client().graph.search({ userId: "ana", query: "coffee" }, once);
    expect(res.edges).toEqual([]);
  });

  test("scopes: without `proxy` a proxied call is 403; without `retrieve` graph.search is 403", async () => {
    const noProxy = await client(KEYS.reader)
      .user.get("ana", once)
      .catch((e: unknown) => e);
    expect((noProxy as ZepError).statusCode).toBe(403);
    const noRetrieve = await client(KEYS.writer)
      .graph.search({ userId: "ana", query: "coffee" }, once)
      .catch((e: unknown) => e);
    expect((noRetrieve as ZepError).statusCode).toBe(403);
    expect(await client(KEYS.writer).user.get("ana", once)).toMatchObject({ userId: "ana" });
  });

  test("the caller's memgate key never reaches Zep: every upstream request carries the tenant's key", async () => {
    const c = client();
    await c.graph.search({ userId: "ana", query: "coffee" }, once);
    await c.user.get("ana", once);
    await c.thread.addMessages("t-1", { messages: [{ role: "user", content: "hi" }] }, once);
    await c.thread.getUserContext("t-1", undefined, once);
    // The fake records every request it answered, the thread routes' included.
    const all = zep.requests.map((r) => r.headers);
    // graph.search is preceded by the core's user-existence check (GET /users/ana, then cached): 5 calls.
    expect(all.length).toBe(5);
    expect(extra.length).toBe(2);
    for (const headers of all) {
      expect(headers.authorization).toBe(`Api-Key ${ZEP_FAKE_API_KEY}`);
      expect(headers["x-api-key"]).toBeUndefined();
      expect(JSON.stringify(headers)).not.toContain(KEYS.app);
    }
  });
});
