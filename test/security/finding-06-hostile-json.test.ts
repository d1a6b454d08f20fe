/**
 * Finding 06 (issue 26): hostile JSON gave a 500. An upstream answer nested ~6,000 levels deep (12 KB) overflowed
 * the stack when the Zep door rendered it (`JSON.stringify` of the kept item or echo, `graph.search` and thread
 * context), and the error handler answered 500. With redaction on, the same answer overflowed `redactDeep`.
 *
 * Driven as an attacker with a hostile upstream would: real HTTP requests to the gateway (the real adapters), the
 * upstream a local server answering deeply nested JSON in every answer a request reads (Zep's user check, graph
 * search and thread context, OpenMemory's query, the door's message write). Upstream JSON nested deeper than the
 * bound is malformed: the declared `*_UNAVAILABLE` fallback (200), never a 5xx. Any failure while a door renders
 * its answer is the door's fallback too.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import request from "supertest";

import { MAX_UPSTREAM_JSON_DEPTH } from "../../src/backends/json";

import * as zepRender from "../../src/compat/zep/render";
import { BACKEND_FACTORIES } from "../../src/server/services";
import { hashKey } from "../../src/tenants/keys";
import { type Harness, makeHarness } from "../helpers/harness";

const KEY = "mg_test_finding06_0123456789";
const AUTH = { authorization: `Api-Key ${KEY}` };

/** `[[[…]]]` n levels deep (2n bytes): 6,000 levels is 12 KB. */
const deepArray = (n: number): string => `${"[".repeat(n)}${"]".repeat(n)}`;
/** `{"a":{"a":…}}` n levels deep. */
const deepObject = (n: number): string => `${'{"a":'.repeat(n)}1${"}".repeat(n)}`;

type Where = "user" | "search-item" | "search-top" | "context" | "messages" | "openmemory";

interface Hostile {
  origin: string;
  /** Which answer carries the nested value, and the value's JSON text. */
  deep: { where: Where; json: string } | undefined;
  close(): Promise<void>;
}

async function startHostile(): Promise<Hostile> {
  const server: Server = createServer();
  const up: Hostile = {
    origin: "",
    deep: undefined,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  const at = (where: Where): string => (up.deep?.where === where ? up.deep.json : "null");
  server.on("request", (req: IncomingMessage, res: ServerResponse) => {
    req.resume();
    req.on("end", () => {
      const path = (req.url ?? "/").split("?")[0] ?? "/";
      const send = (text: string) => res.writeHead(200, { "content-type": "application/json" }).end(text);
      if (path.startsWith("/api/v2/users/"))
        return send(`{"user_id":"ana","uuid":"u-ana","metadata":{"x":${at("user")}}}`);
      if (path === "/api/v2/graph/search")
        return send(
          `{"edges":[{"uuid":"e1","fact":"Ana drinks tea.","created_at":"2026-03-01T09:00:00Z",` +
            `"attributes":{"x":${at("search-item")}}}],"response":${at("search-top")}}`,
        );
      if (/^\/api\/v2\/threads\/[^/]+\/context$/.test(path))
        return send(`{"context":"Ana drinks tea.","extra":${at("context")}}`);
      if (/^\/api\/v2\/threads\/[^/]+\/messages$/.test(path))
        return send(`{"context":"Ana drinks tea.","message_uuids":["m1"],"extra":${at("messages")}}`);
      if (path === "/memory/query")
        return send(
          `{"query":"q","matches":[{"id":"m1","content":"Ana drinks tea.","score":0.9,` +
            `"last_seen_at":1767225600000,"meta":${at("openmemory")}}]}`,
        );
      res.writeHead(404, { "content-type": "application/json" }).end('{"message":"not found"}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  up.origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return up;
}

describe.each([
  ["redaction off", "name: open\nversion: 1\ntokenizer: approx\nretrieval: { minScore: 0 }\n"],
  [
    "redaction on",
    "name: open\nversion: 1\ntokenizer: approx\nretrieval: { minScore: 0 }\nredaction: { enabled: true }\n",
  ],
])("Finding 06 — hostile deeply nested upstream JSON (%s)", (_label, policy) => {
  let up: Hostile;
  let h: Harness;

  beforeEach(async () => {
    up = await startHostile();
    h = await makeHarness({
      factories: BACKEND_FACTORIES,
      env: { F6_ZEP_KEY: "zep-secret-f6", F6_OM_KEY: "om-secret-f6" },
      policies: { open: policy },
      tenants: `tenants:
  - id: t
    keys:
      - { name: app, sha256: ${hashKey(KEY)}, scopes: [retrieve, proxy] }
    policies: { allowed: ["*"], default: open }
    defaultBackend: zep
    backends:
      zep: { apiKeyEnv: F6_ZEP_KEY, baseUrl: "${up.origin}/api/v2" }
      openmemory: { url: "${up.origin}", apiKeyEnv: F6_OM_KEY, userScoping: user_id }
`,
    });
  });
  afterEach(async () => {
    jest.restoreAllMocks();
    await h.close();
    await up.close();
  });

  const retrieve = (backend: "zep" | "openmemory") =>
    request(h.app)
      .post("/v1/retrieve")
      .set("authorization", `Bearer ${KEY}`)
      .send({ userId: "ana", sessionId: "s-1", query: "what do I drink?", useMemory: true, backend });
  const doorSearch = (query = "what do I drink?") =>
    request(h.app).post("/api/v2/graph/search").set(AUTH).send({ user_id: "ana", query });
  const doorContext = () => request(h.app).get("/api/v2/threads/th-1/context").set(AUTH);
  const omQuery = () =>
    request(h.app)
      .post("/memory/query")
      .set("authorization", `Bearer ${KEY}`)
      .send({ query: "what do I drink?", k: 5, user_id: "ana" });

  const shapes = [
    ["6,000-deep array", deepArray(6000)],
    ["6,000-deep object", deepObject(6000)],
  ] as const;

  test.each(shapes)(
    "a %s in a graph search item: the door answers its fallback, not a 500",
    async (_s, json) => {
      up.deep = { where: "search-item", json };
      const res = await doorSearch();
      expect(res.status).toBe(200);
      expect(res.headers["x-memgate-fallback"]).toBe("ZEP_UNAVAILABLE; action=skip");
      expect(res.body).toEqual({ edges: [] });
    },
  );

  test.each(shapes)("a %s beside the graph search results: fallback, not a 500", async (_s, json) => {
    up.deep = { where: "search-top", json };
    const res = await doorSearch();
    expect(res.status).toBe(200);
    expect(res.headers["x-memgate-fallback"]).toBe("ZEP_UNAVAILABLE; action=skip");
  });

  test.each(shapes)("a %s in a thread context answer: fallback, not a 500", async (_s, json) => {
    up.deep = { where: "context", json };
    const res = await doorContext();
    expect(res.status).toBe(200);
    expect(res.headers["x-memgate-fallback"]).toBe("ZEP_UNAVAILABLE; action=skip");
    expect(res.body).toEqual({ context: "" });
  });

  test.each(shapes)("a %s in a search answer on /v1/retrieve: ZEP_UNAVAILABLE", async (_s, json) => {
    up.deep = { where: "search-item", json };
    const res = await retrieve("zep");
    expect(res.status).toBe(200);
    expect(res.body.metadata.fallback).toMatchObject({ code: "ZEP_UNAVAILABLE" });
  });

  test.each(shapes)("a %s in Zep's user answer (the existence check): ZEP_UNAVAILABLE", async (_s, json) => {
    up.deep = { where: "user", json };
    const res = await retrieve("zep");
    expect(res.status).toBe(200);
    expect(res.body.metadata.fallback).toMatchObject({ code: "ZEP_UNAVAILABLE" });
  });

  test.each(shapes)(
    "a %s in an OpenMemory match: OPENMEMORY_UNAVAILABLE on both routes",
    async (_s, json) => {
      up.deep = { where: "openmemory", json };
      const res = await retrieve("openmemory");
      expect(res.status).toBe(200);
      expect(res.body.metadata.fallback).toMatchObject({ code: "OPENMEMORY_UNAVAILABLE" });
      const door = await omQuery();
      expect(door.status).toBe(200);
      expect(door.headers["x-memgate-fallback"]).toBe("OPENMEMORY_UNAVAILABLE; action=skip");
      expect(door.body.matches).toEqual([]);
    },
  );

  test.each(shapes)(
    "a %s in the door's message write answer: passed back as it came, not a 500",
    async (_s, json) => {
      up.deep = { where: "messages", json };
      const res = await request(h.app)
        .post("/api/v2/threads/th-1/messages")
        .set(AUTH)
        .send({ messages: [{ role: "user", content: "hello" }], return_context: true });
      expect(res.status).toBe(200);
      expect(res.text).toContain(json);
    },
  );

  test("nesting up to the bound is an ordinary answer; one level more is malformed", async () => {
    // Four levels hold the value (the answer, `edges`, the item, `attributes`): 4 + (bound − 4) = the bound.
    up.deep = { where: "search-item", json: deepArray(MAX_UPSTREAM_JSON_DEPTH - 4) };
    const ok = await doorSearch();
    expect(ok.status).toBe(200);
    expect(ok.headers["x-memgate-fallback"]).toBeUndefined();
    expect(ok.body.edges).toHaveLength(1);
    up.deep = { where: "search-item", json: deepArray(MAX_UPSTREAM_JSON_DEPTH - 3) };
    // Another query: the first answer is cached.
    const over = await doorSearch("what else do I drink?");
    expect(over.status).toBe(200);
    expect(over.headers["x-memgate-fallback"]).toBe("ZEP_UNAVAILABLE; action=skip");
  });

  test("brackets inside strings are text, not nesting", async () => {
    up.deep = { where: "search-item", json: JSON.stringify(`${"[{".repeat(500)}\\"${"]}".repeat(500)}`) };
    const res = await doorSearch();
    expect(res.status).toBe(200);
    expect(res.headers["x-memgate-fallback"]).toBeUndefined();
    expect(res.body.edges).toHaveLength(1);
  });

  test("any failure while a door renders its answer is the door's fallback, never a 5xx", async () => {
    jest.spyOn(zepRender, "searchAnswer").mockImplementation(() => {
      throw new RangeError("Maximum call stack size exceeded");
    });
    jest.spyOn(zepRender, "contextAnswer").mockImplementation(() => {
      throw new RangeError("Maximum call stack size exceeded");
    });
    const search = await doorSearch();
    expect(search.status).toBe(200);
    expect(search.headers["x-memgate-fallback"]).toBe("POLICY_FAILED; action=skip");
    expect(search.body).toEqual({ edges: [] });
    const context = await doorContext();
    expect(context.status).toBe(200);
    expect(context.headers["x-memgate-fallback"]).toBe("POLICY_FAILED; action=skip");
    expect(context.body).toEqual({ context: "" });
  });
});
