/**
 * Finding 2 (issue 26) — path aliases bypass the policy (docs/security-findings/02.md).
 *
 * A shaped route reached by another spelling of its path (`/api/v2/graph//search`, `/memory/quer%79`,
 * `/api/v2/graph/search;x`, …) must never reach the tenant's upstream through the transparent proxy, where an
 * upstream that normalizes paths (as this fake one does, as most routers do) answers it raw: unredacted,
 * unscreened, outside the per-user limit and the cache. Each alias is either served by its shaped route (its
 * canonical form, with `x-memgate-policy` and the e-mail redacted) or refused with 400 naming the path; a plain
 * proxied path still goes through.
 */
import { createServer, request as httpRequest, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { type Gateway, KEYS, startGateway } from "../compat/gateway";

const EMAIL = "ana.secret@example.com";
const FACT = `Ana's e-mail address is ${EMAIL}.`;

/** How a lenient upstream router reads a path: decoded (twice), `;params` dropped, slashes merged, no trailing slash. */
function lenient(rawPath: string): string {
  const segments: string[] = [];
  for (const raw of rawPath.split("/")) {
    let s = raw.split(";")[0] ?? "";
    for (let i = 0; i < 2; i++) {
      try {
        s = decodeURIComponent(s);
      } catch {
        break;
      }
    }
    s = s.split(";")[0] ?? "";
    if (s !== "") segments.push(...s.split("/").filter((x) => x !== ""));
  }
  return `/${segments.join("/")}`;
}

interface Seen {
  method: string;
  url: string;
  /** The upstream call came from memgate's own client (the shaped path), not the caller's (the proxy). */
  fromCore: boolean;
}

async function startUpstream(seen: Seen[]): Promise<Server> {
  const server = createServer((req: IncomingMessage, res) => {
    let body = "";
    req.on("data", (c: Buffer) => {
      body += c.toString();
    });
    req.on("end", () => {
      const url = req.url ?? "/";
      seen.push({ method: req.method ?? "", url, fromCore: req.headers["user-agent"] === "memgate" });
      const path = lenient(url.split("?")[0] ?? "/");
      const json = (status: number, value: unknown) =>
        res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(value));
      if (req.method === "GET" && /^\/api\/v2\/users\/[^/]+$/.test(path))
        return json(200, { user_id: "u-1", uuid: "uuid-u-1" });
      if (req.method === "POST" && path === "/api/v2/graph/search")
        return json(200, {
          edges: [
            { uuid: "e-1", fact: FACT, name: "HAS_EMAIL", created_at: "2026-01-02T00:00:00Z", score: 0.9 },
          ],
        });
      if (req.method === "GET" && /^\/api\/v2\/threads\/[^/]+\/context$/.test(path))
        return json(200, { context: FACT });
      if (req.method === "POST" && path === "/memory/query") {
        const parsed = body === "" ? {} : (JSON.parse(body) as Record<string, unknown>);
        return json(200, {
          query: parsed.query,
          matches: [
            {
              id: "m-1",
              content: FACT,
              score: 0.9,
              primary_sector: "semantic",
              sectors: ["semantic"],
              path: ["m-1"],
              salience: 0.5,
              last_seen_at: Date.parse("2026-01-02T00:00:00Z"),
            },
          ],
        });
      }
      return json(404, { message: "no such route" });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  return server;
}

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** Sends `path` exactly as written (http.request does not normalize it). */
function send(origin: string, method: string, path: string, body?: object): Promise<Answer> {
  const url = new URL(origin);
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        host: url.hostname,
        port: url.port,
        method,
        path,
        headers: {
          authorization: `Api-Key ${KEYS.app}`,
          ...(body === undefined ? {} : { "content-type": "application/json" }),
        },
      },
      (res) => {
        let text = "";
        res.on("data", (c: Buffer) => {
          text += c.toString();
        });
        res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text }));
      },
    );
    req.on("error", reject);
    req.end(body === undefined ? undefined : JSON.stringify(body));
  });
}

const SEARCH = { query: "what is Ana's e-mail address", user_id: "u-1" };
const QUERY = { query: "what is Ana's e-mail address", user_id: "u-1", k: 3 };

/** Spellings of the shaped routes that Node/Express do not match as those routes on today's code. */
const ALIASES: Array<{ method: "GET" | "POST"; path: string; body?: object }> = [
  { method: "POST", path: "/api/v2/graph//search", body: SEARCH },
  { method: "POST", path: "/api/v2/graph/%73earch", body: SEARCH },
  { method: "POST", path: "/api/v2/graph/search;x", body: SEARCH },
  { method: "POST", path: "/api/v2//graph/search", body: SEARCH },
  { method: "POST", path: "//api/v2/graph/search", body: SEARCH },
  { method: "POST", path: "/api/v2/graph/search/;", body: SEARCH },
  { method: "POST", path: "/api/v2/%67raph/%53EARCH", body: SEARCH },
  { method: "POST", path: "/api/v2/graph/search%3bx", body: SEARCH },
  { method: "POST", path: "/api/v2/graph/search%3Bx", body: SEARCH },
  { method: "POST", path: "/%61pi/v2/graph/search", body: SEARCH },
  { method: "POST", path: "/memory//query", body: QUERY },
  { method: "POST", path: "/memory/quer%79", body: QUERY },
  { method: "POST", path: "/memory/query;a=b", body: QUERY },
  { method: "POST", path: "/memory/query%3B", body: QUERY },
  { method: "POST", path: "/memory/%71uery/", body: QUERY },
  { method: "GET", path: "/api/v2/threads/t-1//context" },
  { method: "GET", path: "/api/v2/threads/t-1/%63ontext" },
  { method: "GET", path: "/api/v2/threads/t-1/context;v=1" },
  { method: "GET", path: "/api/v2/threads//t-1/context" },
  { method: "GET", path: "/api/v2/threads/t-1/context%3B" },
];

describe("finding 02 — path aliases of the shaped routes never reach the upstream unshaped", () => {
  let upstream: Server;
  let seen: Seen[];
  let gw: Gateway;

  beforeAll(async () => {
    seen = [];
    upstream = await startUpstream(seen);
    const origin = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;
    gw = await startGateway({
      backends: `      zep: { apiKeyEnv: T_ZEP, baseUrl: "${origin}/api/v2" }
      openmemory: { url: "${origin}", apiKeyEnv: T_OM, userScoping: user_id }
    defaultBackend: zep
`,
      env: { T_ZEP: "t-zep-secret", T_OM: "t-om-secret" },
    });
  });
  afterAll(async () => {
    await gw.close();
    upstream.closeAllConnections();
    await new Promise<void>((resolve) => upstream.close(() => resolve()));
  });
  beforeEach(() => {
    seen.length = 0;
  });

  test("the canonical routes are shaped: the e-mail is redacted", async () => {
    for (const [method, path, body] of [
      ["POST", "/api/v2/graph/search", SEARCH],
      ["POST", "/memory/query", QUERY],
      ["GET", "/api/v2/threads/t-1/context", undefined],
    ] as const) {
      const res = await send(gw.origin, method, path, body);
      expect([path, res.status]).toEqual([path, 200]);
      expect(res.headers["x-memgate-policy"]).toBe("compat@1");
      expect(res.body).not.toContain(EMAIL);
    }
  });

  test.each(ALIASES)(
    "$method $path is shaped or refused, never proxied raw",
    async ({ method, path, body }) => {
      const res = await send(gw.origin, method, path, body);
      const outcome = {
        path,
        status: res.status,
        leaked: res.body.includes(EMAIL),
        proxied: seen.some((s) => !s.fromCore),
      };
      if (res.status === 400) {
        expect(outcome).toEqual({ path, status: 400, leaked: false, proxied: false });
        expect(res.headers["content-type"]).toMatch(/^application\/problem\+json/);
        expect(JSON.parse(res.body).detail).toMatch(/^path: /);
      } else {
        expect(outcome).toEqual({ path, status: 200, leaked: false, proxied: false });
        expect(res.headers["x-memgate-policy"]).toBe("compat@1");
      }
    },
  );

  test("dot segments, `;` parameters and malformed escapes are refused at the edge, naming the path", async () => {
    for (const path of [
      "/api/v2/users/./u-1",
      "/api/v2/users/%2e/u-1",
      "/api/v2/users/u-1/%2E%2E/x",
      "/v1/retrieve;x",
      "/api/v2/users/u-1;jsessionid=1",
      "/api/v2/users/u%zz1",
    ]) {
      const res = await send(gw.origin, "GET", path);
      expect([path, res.status]).toEqual([path, 400]);
      expect(JSON.parse(res.body).detail).toMatch(/^path: /);
    }
    expect(seen).toEqual([]);
  });

  test("an ordinary proxied path still goes through, in its canonical form", async () => {
    const res = await send(gw.origin, "GET", "/api/v2//users/%75-1?x=%2F");
    expect(res.status).toBe(200);
    expect(seen.map((s) => [s.method, s.url])).toEqual([["GET", "/api/v2/users/u-1?x=%2F"]]);
  });

  test("a method the shaped route does not serve is still proxied (OpenMemory's GET /memory/{id} of id 'query')", async () => {
    const res = await send(gw.origin, "GET", "/memory/query");
    expect(res.status).toBe(404);
    expect(seen.map((s) => [s.method, s.url, s.fromCore])).toEqual([["GET", "/memory/query", false]]);
  });
});
