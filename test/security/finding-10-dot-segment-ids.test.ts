/**
 * Finding 10 (issue 26) — dot-segment ids escape their route (docs/security-findings/10.md).
 *
 * An id that is `.` or `..` (raw, or percent-encoded once or twice) becomes a dot segment in an upstream URL, which
 * the URL parser resolves: thread id `..` turned `GET /api/v2/threads/{id}/context` into `GET /api/v2/context`
 * and user id `..` turned Zep's `GET /api/v2/users/{id}` into `GET /api/v2/`, each with the tenant's key — paths a
 * retrieve-only key has no proxy scope for. Driven as an attacker does: real HTTP requests to the gateway with a
 * retrieve-only key (and a hostile upstream answering a match id `..`), the real adapters, and a fake upstream
 * that records every path it is asked for. Every such id is refused with 400 naming its field, and the upstream
 * only ever sees the paths of the routes the key may use.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import request from "supertest";
import { BACKEND_FACTORIES } from "../../src/server/services";
import { hashKey } from "../../src/tenants/keys";
import { type Harness, makeHarness } from "../helpers/harness";

const READER = "mg_test_f10_reader_0123456789";

/** The only upstream paths a retrieve-only key's requests may cause (per-segment ids never `.`/`..`). */
const ALLOWED = [
  /^\/api\/v2\/users\/[^/]+$/,
  /^\/api\/v2\/graph\/search$/,
  /^\/api\/v2\/threads\/[^/]+\/context$/,
  /^\/memory\/query$/,
  /^\/memory\/[^/]+$/,
];

function tenants(origin: string, backend: "zep" | "openmemory"): string {
  return `tenants:
  - id: t
    keys:
      - { name: reader, sha256: ${hashKey(READER)}, scopes: [retrieve] }
    policies: { allowed: ["*"], default: default }
    defaultBackend: ${backend}
    backends:
      zep: { apiKeyEnv: T_ZEP, baseUrl: "${origin}/api/v2" }
      openmemory: { url: "${origin}", apiKeyEnv: T_OM, userScoping: user_id }
`;
}

describe("finding 10 — dot-segment ids never become upstream paths", () => {
  let upstream: Server;
  let seen: string[];
  /** What the fake OpenMemory answers as match ids (a hostile upstream). */
  let matchIds: string[];
  let h: Harness;

  beforeAll(async () => {
    upstream = createServer((req, res) => {
      req.resume();
      req.on("end", () => {
        const path = (req.url ?? "/").split("?")[0] ?? "/";
        seen.push(path);
        const json = (value: unknown) =>
          res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(value));
        if (path === "/memory/query")
          return json({
            query: "q",
            matches: matchIds.map((id) => ({
              id,
              content: `memory ${id}`,
              score: 0.9,
              primary_sector: "semantic",
              sectors: ["semantic"],
              path: [id],
              salience: 0.5,
              last_seen_at: Date.parse("2026-01-02T00:00:00Z"),
            })),
          });
        if (path.startsWith("/memory/")) return json({ id: "x", content: "x", tags: ["a"] });
        if (path === "/api/v2/graph/search") return json({ edges: [] });
        if (/\/context$/.test(path)) return json({ context: "ctx" });
        // Anything else (GET /api/v2/, /api/v2/context, /): a resource the key was never meant to reach.
        return json({ secret: "outside the route" });
      });
    });
    await new Promise<void>((resolve) => upstream.listen(0, "127.0.0.1", () => resolve()));
  });
  afterAll(async () => {
    upstream.closeAllConnections();
    await new Promise<void>((resolve) => upstream.close(() => resolve()));
  });

  async function gateway(backend: "zep" | "openmemory"): Promise<Harness> {
    const origin = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;
    return makeHarness({
      tenants: tenants(origin, backend),
      factories: BACKEND_FACTORIES,
      env: { T_ZEP: "t-zep-secret", T_OM: "t-om-secret" },
    });
  }
  beforeEach(() => {
    seen = [];
    matchIds = ["m-1"];
  });
  afterEach(() => h.close());

  const auth = { authorization: `Api-Key ${READER}` };
  const escaped = () => seen.filter((p) => !ALLOWED.some((re) => re.test(p)) || /\/\.\.?(\/|$)/.test(p));

  test("/v1/retrieve: a userId or sessionId of . or .. is refused (userId: 400 naming it)", async () => {
    h = await gateway("zep");
    for (const userId of [".", ".."]) {
      const res = await request(h.app)
        .post("/v1/retrieve")
        .set(auth)
        .send({ userId, sessionId: "s-1", query: "hello", useMemory: true });
      expect([userId, res.status, escaped()]).toEqual([userId, 400, []]);
      expect(res.body.detail).toMatch(/^userId: /);
    }
    const res = await request(h.app)
      .post("/v1/retrieve")
      .set(auth)
      .send({ userId: "u-1", sessionId: "..", query: "hello", useMemory: true });
    expect(res.status).toBe(200);
    expect(res.body.metadata.fallback?.code).toBe("SESSION_INVALID");
    expect(escaped()).toEqual([]);
  });

  test("Zep door: user_id and graph_id of . or .. (also percent-encoded) are refused, naming the field", async () => {
    h = await gateway("zep");
    for (const [field, id] of [
      ["user_id", ".."],
      ["user_id", "."],
      ["user_id", "%2e%2e"],
      ["graph_id", ".."],
      ["graph_id", "%252E%252E"],
    ] as const) {
      const res = await request(h.app)
        .post("/api/v2/graph/search")
        .set(auth)
        .send({ query: "hello", [field]: id });
      expect([field, id, res.status, escaped()]).toEqual([field, id, 400, []]);
      expect(res.body.detail).toMatch(new RegExp(`^${field}: `));
    }
    expect(escaped()).toEqual([]);
  });

  test("Zep door: a thread id of . or .. in any spelling is refused and never reaches the upstream", async () => {
    h = await gateway("zep");
    for (const id of ["%2e%2e", "%2E", "%252e%252e", "%25252e%25252e", "..%00"]) {
      const res = await request(h.app).get(`/api/v2/threads/${id}/context`).set(auth);
      expect([id, res.status, escaped()]).toEqual([id, 400, []]);
      expect(res.body.detail).toMatch(/^(path|threadId): /);
    }
    expect(escaped()).toEqual([]);
  });

  test("OpenMemory door: user_id or filters.user_id of . or .. is refused in OpenMemory's shape", async () => {
    h = await gateway("openmemory");
    for (const body of [
      { query: "hello", user_id: ".." },
      { query: "hello", filters: { user_id: "." } },
      { query: "hello", user_id: "%2e%2e" },
    ]) {
      const res = await request(h.app).post("/memory/query").set(auth).send(body);
      expect([body, res.status, escaped()]).toEqual([body, 400, []]);
      expect(res.body.error).toBe("invalid_input");
      expect(res.body.details.join(" ")).toMatch(/user_id: /);
    }
    expect(escaped()).toEqual([]);
  });

  test("a hostile upstream's match id .. never becomes a lookup path: the search falls back instead", async () => {
    h = await gateway("openmemory");
    for (const id of ["..", ".", "%2e%2e"]) {
      seen = [];
      matchIds = ["m-1", id];
      const res = await request(h.app)
        .post("/memory/query")
        .set(auth)
        .send({ query: "hello", user_id: "u-1", filters: { tags: ["a"] } });
      expect([id, res.status]).toEqual([id, 200]);
      expect(JSON.stringify(res.body)).not.toContain("outside the route");
      expect([id, escaped()]).toEqual([id, []]);
    }
  });

  test("/v1/retrieve against Zep: the existence check for a user id never leaves /users/{id}", async () => {
    h = await gateway("zep");
    const res = await request(h.app)
      .post("/v1/retrieve")
      .set(auth)
      .send({ userId: "u.1", sessionId: "s-1", query: "hello", useMemory: true });
    expect(res.status).toBe(200);
    expect(seen).toContain("/api/v2/users/u.1");
    expect(escaped()).toEqual([]);
  });
});
