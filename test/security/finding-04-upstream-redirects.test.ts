/**
 * Finding 04 (issue 26): no upstream call may follow a redirect. The Zep existence check (`GET /users/{id}`,
 * made through the SDK) used the global `fetch`, which follows redirects: a 307 made memgate request any address
 * (blind SSRF with a yes/no oracle), a same-origin 302 sent the tenant's Zep key to an arbitrary path.
 *
 * Driven as an attacker would: real HTTP requests to the gateway (the real adapters, BACKEND_FACTORIES), a
 * hostile upstream on 127.0.0.1 that answers chosen calls with a redirect, and a second server standing for the
 * address the redirect points at. Every upstream call a request can cause is covered: `/v1/retrieve` through
 * Zep (existence check, graph.search) and OpenMemory (query), and the Zep door's graph search, thread context
 * and message write. A 3xx is the backend being unavailable: the declared fallback (200), never a 5xx, and
 * nothing reaches the redirect's target.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import request from "supertest";
import { BACKEND_FACTORIES } from "../../src/server/services";
import { hashKey } from "../../src/tenants/keys";
import { type Harness, makeHarness } from "../helpers/harness";

const KEY = "mg_test_finding04_0123456789";
const ZEP_KEY = "zep-secret-finding04";
const OM_KEY = "om-secret-finding04";
const REDIRECTS = [301, 302, 303, 307, 308] as const;

interface Seen {
  method: string;
  path: string;
  authorization: string | undefined;
  apiKey: string | undefined;
}

interface Recorder {
  origin: string;
  seen: Seen[];
  /** Answers a request; undefined: the default answer. */
  script: (req: IncomingMessage) => { status: number; location?: string; body?: unknown } | undefined;
  close(): Promise<void>;
}

async function startRecorder(
  defaults: (path: string) => { status: number; body: unknown },
): Promise<Recorder> {
  const server: Server = createServer();
  const rec: Recorder = {
    origin: "",
    seen: [],
    script: () => undefined,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  server.on("request", (req: IncomingMessage, res: ServerResponse) => {
    const path = req.url ?? "/";
    rec.seen.push({
      method: req.method ?? "",
      path,
      authorization: req.headers.authorization,
      apiKey: typeof req.headers["x-api-key"] === "string" ? req.headers["x-api-key"] : undefined,
    });
    req.resume();
    req.on("end", () => {
      const scripted = rec.script(req);
      const answer = scripted ?? defaults(path.split("?")[0] ?? path);
      const headers: Record<string, string> = { "content-type": "application/json" };
      if (scripted?.location !== undefined) headers.location = scripted.location;
      res.writeHead(answer.status, headers).end(JSON.stringify(answer.body ?? { redirected: true }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  rec.origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return rec;
}

/** A well-behaved Zep / OpenMemory upstream: every user exists, every search finds one memory. */
function upstreamDefaults(path: string): { status: number; body: unknown } {
  if (path.startsWith("/api/v2/users/"))
    return { status: 200, body: { user_id: "ana", uuid: "u-ana", created_at: "2026-01-01T00:00:00Z" } };
  if (path === "/api/v2/graph/search")
    return {
      status: 200,
      body: {
        edges: [{ uuid: "e1", fact: "Ana drinks oat milk flat whites.", created_at: "2026-03-01T09:00:00Z" }],
      },
    };
  if (/^\/api\/v2\/threads\/[^/]+\/context$/.test(path))
    return { status: 200, body: { context: "Ana likes tea." } };
  if (/^\/api\/v2\/threads\/[^/]+\/messages$/.test(path))
    return { status: 200, body: { message_uuids: ["m1"] } };
  if (path === "/memory/query")
    return {
      status: 200,
      body: {
        query: "q",
        matches: [{ id: "m1", content: "Ana likes tea.", score: 0.9, last_seen_at: 1767225600000 }],
      },
    };
  return { status: 404, body: { message: "not found" } };
}

describe("Finding 04 — no upstream call follows a redirect", () => {
  let upstream: Recorder;
  let target: Recorder;
  let h: Harness;

  beforeEach(async () => {
    upstream = await startRecorder(upstreamDefaults);
    target = await startRecorder(() => ({ status: 200, body: { user_id: "ana", uuid: "x" } }));
    h = await makeHarness({
      factories: BACKEND_FACTORIES,
      env: { F4_ZEP_KEY: ZEP_KEY, F4_OM_KEY: OM_KEY },
      policies: { open: "name: open\nversion: 1\ntokenizer: approx\nretrieval: { minScore: 0 }\n" },
      tenants: `tenants:
  - id: t
    keys:
      - { name: app, sha256: ${hashKey(KEY)}, scopes: [retrieve, proxy] }
    policies: { allowed: ["*"], default: open }
    defaultBackend: zep
    backends:
      zep: { apiKeyEnv: F4_ZEP_KEY, baseUrl: "${upstream.origin}/api/v2" }
      openmemory: { url: "${upstream.origin}", apiKeyEnv: F4_OM_KEY, userScoping: user_id }
`,
    });
  });
  afterEach(async () => {
    await h.close();
    await upstream.close();
    await target.close();
  });

  const retrieve = (backend: "zep" | "openmemory") =>
    request(h.app)
      .post("/v1/retrieve")
      .set("authorization", `Bearer ${KEY}`)
      .send({ userId: "ana", sessionId: "s-1", query: "what do I drink?", useMemory: true, backend });

  /** The redirect's target saw nothing, and no request carrying a credential went anywhere but where it was sent. */
  function expectNotFollowed(calledPath: RegExp): void {
    expect(target.seen).toEqual([]);
    const elsewhere = upstream.seen.filter((s) => !calledPath.test(s.path.split("?")[0] ?? s.path));
    expect(elsewhere).toEqual([]);
  }

  test.each(REDIRECTS)(
    "a %i on the Zep existence check to another address: never requested, fallback",
    async (status) => {
      upstream.script = (req) =>
        req.url?.startsWith("/api/v2/users/")
          ? { status, location: `${target.origin}/internal/admin` }
          : undefined;
      const res = await retrieve("zep");
      expect(res.status).toBe(200);
      expect(res.body.metadata.fallback).toMatchObject({ code: "ZEP_UNAVAILABLE" });
      expect(res.body.memories).toEqual([]);
      expectNotFollowed(/^\/api\/v2\/users\/ana$/);
    },
  );

  test.each(REDIRECTS)(
    "a same-origin %i on the existence check: the tenant's key goes to no other path",
    async (status) => {
      upstream.script = (req) =>
        req.url?.startsWith("/api/v2/users/") ? { status, location: "/api/v2/leak?k=1" } : undefined;
      const res = await retrieve("zep");
      expect(res.status).toBe(200);
      expect(res.body.metadata.fallback).toMatchObject({ code: "ZEP_UNAVAILABLE" });
      const leaked = upstream.seen.filter((s) => s.path.startsWith("/api/v2/leak"));
      expect(leaked).toEqual([]);
      expectNotFollowed(/^\/api\/v2\/users\/ana$/);
    },
  );

  test.each(REDIRECTS)("a %i on Zep graph.search: fallback, not followed", async (status) => {
    upstream.script = (req) =>
      req.url === "/api/v2/graph/search" ? { status, location: `${target.origin}/search` } : undefined;
    const res = await retrieve("zep");
    expect(res.status).toBe(200);
    expect(res.body.metadata.fallback).toMatchObject({ code: "ZEP_UNAVAILABLE" });
    expectNotFollowed(/^\/api\/v2\/(users\/ana|graph\/search)$/);
  });

  test.each(REDIRECTS)("a %i on the OpenMemory query: fallback, not followed", async (status) => {
    upstream.script = (req) =>
      req.url === "/memory/query" ? { status, location: `${target.origin}/memory/query` } : undefined;
    const res = await retrieve("openmemory");
    expect(res.status).toBe(200);
    expect(res.body.metadata.fallback).toMatchObject({ code: "OPENMEMORY_UNAVAILABLE" });
    expectNotFollowed(/^\/memory\/query$/);
  });

  test.each(REDIRECTS)(
    "the Zep door: a %i on graph search, thread context or a message write is not followed",
    async (status) => {
      upstream.script = () => ({ status, location: `${target.origin}/door` });
      const auth = { authorization: `Api-Key ${KEY}` };
      const search = await request(h.app)
        .post("/api/v2/graph/search")
        .set(auth)
        .send({ user_id: "ana", query: "what do I drink?" });
      expect(search.status).toBe(200);
      expect(search.body.edges).toEqual([]);
      const context = await request(h.app).get("/api/v2/threads/th-1/context").set(auth);
      expect(context.status).toBe(200);
      expect(context.body).toEqual({ context: "" });
      const write = await request(h.app)
        .post("/api/v2/threads/th-1/messages")
        .set(auth)
        .send({ messages: [{ role: "user", content: "hello" }] });
      // A pass-through write has no fallback: the gateway says the upstream could not be used.
      expect(write.status).toBe(502);
      expect(write.body.code).toBe("UPSTREAM_UNREACHABLE");
      expectNotFollowed(/^\/api\/v2\/(users\/ana|graph\/search|threads\/th-1\/(context|messages))$/);
    },
  );

  test("every upstream call says who is calling: user-agent memgate", async () => {
    const seenAgents: string[] = [];
    upstream.script = (req) => {
      seenAgents.push(String(req.headers["user-agent"]));
      return undefined;
    };
    expect((await retrieve("zep")).body.metadata.fallback).toBeNull();
    expect((await retrieve("openmemory")).body.metadata.fallback).toBeNull();
    // The existence check (SDK), graph.search and the OpenMemory query.
    expect(seenAgents.length).toBeGreaterThanOrEqual(3);
    expect(new Set(seenAgents)).toEqual(new Set(["memgate"]));
  });
});
