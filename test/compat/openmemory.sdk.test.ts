/**
 * Drop-in OpenMemory compatibility driven by the real `openmemory-js` SDK pointed at the gateway (in-process,
 * ephemeral port); upstream OpenMemory is the local fake server speaking its wire format.
 */
import { createServer } from "node:net";
import OpenMemory from "openmemory-js";
import type { SeedMemory } from "../backends/contract";
import { FakeOpenMemoryServer } from "../backends/fakes/openmemory-server";
import { approxTokens, type Gateway, KEYS, startGateway } from "./gateway";

const OM_KEY = "om-tenant-key";
const CARD = "4111 1111 1111 1111";
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

const backendsFor = (url: string) =>
  `      openmemory: { url: "${url}", apiKeyEnv: T_OM_KEY, userScoping: user_id }`;

/** A port nothing listens on. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (address === null || typeof address === "string") throw new Error("no port");
  return address.port;
}

describe("openmemory-js through the gateway (upstream OpenMemory)", () => {
  let om: FakeOpenMemoryServer;
  let gw: Gateway;
  const client = (apiKey: string = KEYS.app) => new OpenMemory({ baseUrl: gw.origin, apiKey });

  beforeEach(async () => {
    om = await FakeOpenMemoryServer.start({ apiKeys: [OM_KEY] });
    await om.seed("ana", ANA);
    gw = await startGateway({ env: { T_OM_KEY: OM_KEY }, backends: backendsFor(om.baseUrl) });
  });

  afterEach(async () => {
    await gw.close();
    await om.close();
  });

  test("query: OpenMemory's shape, duplicate removed, card redacted, scores normalized", async () => {
    const res = await client().query("coffee card", { k: 5, filters: { user_id: "ana" } });
    expect(res.query).toBe("coffee card");
    const ids = res.matches.map((m) => m.id);
    expect(ids).toContain("e3");
    expect(ids.filter((id) => id === "e1" || id === "e2")).toHaveLength(1);
    expect(JSON.stringify(res)).not.toContain(CARD);
    expect(res.matches.some((m) => m.content.includes("[REDACTED]"))).toBe(true);
    for (const m of res.matches) {
      expect(m.score).toBeGreaterThanOrEqual(0);
      expect(m.score).toBeLessThanOrEqual(1);
      expect(m.path).toEqual([m.id]);
      expect(m.primary_sector).toBe("semantic");
      expect(typeof m.last_seen_at).toBe("number");
    }
    const sent = om.requests.find((r) => r.path === "/memory/query");
    expect(sent?.body).toMatchObject({ query: "coffee card", k: 10, filters: { user_id: "ana" } });
  });

  test("query: the token budget holds", async () => {
    const long = ["alpha", "bravo", "charlie", "delta"].map((w, i) => ({
      id: `b${i}`,
      content: `Bob ${w} remembers the coffee ${"very ".repeat(30)}good at the ${w} cafe`,
      type: "fact" as const,
      timestamp: `2026-03-0${i + 1}T09:00:00.000Z`,
      sessionId: "s-b",
    }));
    await om.seed("bob", long);
    const res = await client().query("coffee cafe", { k: 20, filters: { user_id: "bob" } });
    const contents = res.matches.map((m) => m.content);
    expect(contents.length).toBeGreaterThan(0);
    expect(contents.length).toBeLessThan(long.length);
    expect(approxTokens(contents)).toBeLessThanOrEqual(100);
    expect(contents.at(-1)?.endsWith("...")).toBe(true);
  });

  test("add is proxied unchanged with the tenant's key", async () => {
    const res = await client().add("Ana moved to Lisbon in May.", {
      tags: ["move"],
      metadata: { doc_id: "moves" },
      user_id: "ana",
    });
    expect(typeof res.id).toBe("string");
    const stored = om.memories().find((m) => m.id === res.id);
    expect(stored).toMatchObject({ content: "Ana moved to Lisbon in May.", tags: ["move"], user_id: "ana" });
    const sent = om.requests.find((r) => r.path === "/memory/add");
    expect(sent?.body).toEqual({
      content: "Ana moved to Lisbon in May.",
      tags: ["move"],
      metadata: { doc_id: "moves" },
      user_id: "ana",
    });
    const mine = await client().getUserMemories("ana");
    expect(mine.items.map((i) => i.id)).toContain(res.id);
  });

  test("upstream errors pass through: 404 {err:nf}, unknown route, both as the upstream sent them", async () => {
    await expect(client().delete("no-such-id")).rejects.toThrow("OpenMemory API error: 404");
    await expect(client().getSectors()).rejects.toThrow("OpenMemory API error: 404");
    const raw = await fetch(`${gw.origin}/memory/no-such-id`, { headers: { "x-api-key": KEYS.app } });
    expect(raw.status).toBe(404);
    expect(raw.headers.get("content-type")).toContain("application/json");
    expect(await raw.json()).toEqual({ err: "nf" });
    const route = await fetch(`${gw.origin}/sectors`, { headers: { "x-api-key": KEYS.app } });
    expect(await route.text()).toBe("404: Not Found");
  });

  test("scopes: without `proxy` add is 403; without `retrieve` query is 403", async () => {
    await expect(client(KEYS.reader).add("x", { user_id: "ana" })).rejects.toThrow("403");
    await expect(client(KEYS.writer).query("coffee", { filters: { user_id: "ana" } })).rejects.toThrow("403");
    await expect(
      client(KEYS.reader).query("coffee", { filters: { user_id: "ana" } }),
    ).resolves.toHaveProperty("matches");
    expect(om.requests.some((r) => r.path === "/memory/add")).toBe(false);
  });

  test("the caller's memgate key never reaches OpenMemory", async () => {
    const c = client();
    await c.query("coffee", { filters: { user_id: "ana" } });
    await c.add("Ana likes tea too.", { user_id: "ana" });
    await c.getAll({ limit: 5 });
    await c.health();
    expect(om.requests).toHaveLength(4);
    for (const r of om.requests) {
      expect(r.headers["x-api-key"]).toBe(OM_KEY);
      expect(r.headers.authorization).toBeUndefined();
      expect(JSON.stringify(r.headers)).not.toContain(KEYS.app);
    }
  });

  test("unreachable upstream: 502 problem on a proxied route, an empty result with a fallback on query", async () => {
    await gw.close();
    gw = await startGateway({
      env: { T_OM_KEY: OM_KEY },
      backends: backendsFor(`http://127.0.0.1:${await closedPort()}`),
    });
    const add = await fetch(`${gw.origin}/memory/add`, {
      method: "POST",
      headers: { authorization: `Bearer ${KEYS.app}`, "content-type": "application/json" },
      body: JSON.stringify({ content: "x" }),
    });
    expect(add.status).toBe(502);
    expect(add.headers.get("content-type")).toContain("application/problem+json");
    expect(await add.json()).toMatchObject({ code: "UPSTREAM_UNREACHABLE", status: 502 });
    const query = await fetch(`${gw.origin}/memory/query`, {
      method: "POST",
      headers: { authorization: `Bearer ${KEYS.app}`, "content-type": "application/json" },
      body: JSON.stringify({ query: "coffee" }),
    });
    expect(query.status).toBe(200);
    expect(query.headers.get("x-memgate-fallback")).toBe("OPENMEMORY_UNAVAILABLE; action=skip");
    expect(await query.json()).toEqual({ query: "coffee", matches: [] });
  });
});
