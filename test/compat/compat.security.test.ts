import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import { type AddressInfo, connect } from "node:net";
import request from "supertest";
import { BACKEND_FACTORIES } from "../../src/server/services";
import { hashKey } from "../../src/tenants/keys";
import { type Harness, makeHarness } from "../helpers/harness";

/**
 * Drop-in compatibility routes — security (docs/adopting.md, docs/api.md#authentication-and-scopes): missing, wrong and other-tenant keys; scopes
 * (`retrieve` for the shaped routes, `proxy` for the transparent ones); each tenant reaches only its own
 * upstream with its own credential, and the caller's memgate key never leaves the gateway; no secret or PII
 * in logs or error bodies; secure headers. One recording upstream plays both tenants' Zep and OpenMemory.
 */
const K = {
  aApp: "mg_test_sec_a_app_0123456789",
  aReader: "mg_test_sec_a_reader_0123456789",
  aWriter: "mg_test_sec_a_writer_0123456789",
  bApp: "mg_test_sec_b_app_0123456789",
} as const;
const UPSTREAM_SECRETS = {
  A_ZEP: "a-zep-secret",
  A_OM: "a-om-secret",
  B_ZEP: "b-zep-secret",
  B_OM: "b-om-secret",
};
const QUERY = "secret-compat-query";

interface Seen {
  path: string;
  headers: IncomingHttpHeaders;
}

function tenants(origin: string): string {
  const tenant = (id: "a" | "b", keys: string) => `  - id: ${id}
    keys:
${keys}
    policies: { allowed: [default], default: default }
    defaultBackend: zep
    backends:
      zep: { apiKeyEnv: ${id.toUpperCase()}_ZEP, baseUrl: "${origin}/${id}/zep/api/v2" }
      openmemory: { url: "${origin}/${id}/om", apiKeyEnv: ${id.toUpperCase()}_OM, userScoping: user_id }
`;
  return `tenants:
${tenant(
  "a",
  `      - { name: app, sha256: ${hashKey(K.aApp)}, scopes: [retrieve, proxy] }
      - { name: reader, sha256: ${hashKey(K.aReader)}, scopes: [retrieve] }
      - { name: writer, sha256: ${hashKey(K.aWriter)}, scopes: [proxy] }`,
)}${tenant("b", `      - { name: app, sha256: ${hashKey(K.bApp)}, scopes: [retrieve, proxy, admin] }`)}`;
}

type Route = { method: "get" | "post"; path: string; scope: "retrieve" | "proxy"; body?: object };
const ROUTES: Route[] = [
  { method: "post", path: "/api/v2/graph/search", scope: "retrieve", body: { query: QUERY, user_id: "u-1" } },
  { method: "get", path: "/api/v2/threads/t-1/context", scope: "retrieve" },
  { method: "get", path: "/api/v2/users/u-1", scope: "proxy" },
  { method: "post", path: "/memory/query", scope: "retrieve", body: { query: QUERY, user_id: "u-1", k: 3 } },
  { method: "get", path: "/memory/all", scope: "proxy" },
];

describe("compat routes — security", () => {
  let upstream: Server;
  let seen: Seen[];
  let h: Harness;

  beforeAll(async () => {
    upstream = createServer((req, res) => {
      seen.push({ path: req.url ?? "", headers: req.headers });
      req.resume();
      req.on("end", () => res.writeHead(200, { "content-type": "application/json" }).end("{}"));
    });
    await new Promise<void>((resolve) => upstream.listen(0, "127.0.0.1", () => resolve()));
  });
  afterAll(() => new Promise<void>((resolve) => upstream.close(() => resolve())));
  beforeEach(async () => {
    seen = [];
    const origin = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;
    h = await makeHarness({ tenants: tenants(origin), factories: BACKEND_FACTORIES, env: UPSTREAM_SECRETS });
  });
  afterEach(() => h.close());

  const call = (r: Route, headers: Record<string, string>) => {
    const req = request(h.app)[r.method](r.path).set(headers);
    return r.body === undefined ? req : req.send(r.body);
  };

  test("no key, a malformed or unknown key: 401 on every route, and nothing reaches an upstream", async () => {
    for (const r of ROUTES) {
      for (const headers of [
        {},
        { authorization: "Api-Key" },
        { authorization: "Api-Key mg_unknown_000000" },
      ] as Array<Record<string, string>>) {
        const res = await call(r, headers);
        expect(res.status).toBe(401);
        expect(res.headers["content-type"]).toMatch(/^application\/problem\+json/);
      }
    }
    expect(seen).toEqual([]);
  });

  test("scopes: a retrieve-only key cannot proxy, a proxy-only key cannot retrieve", async () => {
    for (const r of ROUTES) {
      const key = r.scope === "proxy" ? K.aReader : K.aWriter;
      const res = await call(r, { authorization: `Api-Key ${key}` });
      expect(res.status).toBe(403);
      expect(res.body.detail).toContain(r.scope === "proxy" ? "'proxy'" : "'retrieve'");
    }
    expect(seen).toEqual([]);
  });

  test("each tenant reaches only its own upstream, with its own credential; the memgate key never leaves", async () => {
    for (const [key, id] of [
      [K.aApp, "a"],
      [K.bApp, "b"],
    ] as const) {
      for (const r of ROUTES) {
        seen = [];
        const res = await call(r, {
          authorization: `Api-Key ${key}`,
          cookie: `session=${key}`,
          "x-memgate-tenant": id === "a" ? "b" : "a",
          "x-forwarded-host": "evil.example",
        });
        expect(res.status).toBeLessThan(500);
        expect(seen.length).toBeGreaterThan(0);
        for (const s of seen) {
          expect(s.path.startsWith(`/${id}/`)).toBe(true);
          const sent = JSON.stringify(s.headers);
          const expected = s.path.includes("/zep/")
            ? UPSTREAM_SECRETS[`${id === "a" ? "A" : "B"}_ZEP`]
            : UPSTREAM_SECRETS[`${id === "a" ? "A" : "B"}_OM`];
          expect(sent).toContain(expected);
          for (const other of Object.values(UPSTREAM_SECRETS).filter((v) => v !== expected))
            expect(sent).not.toContain(other);
          for (const k of Object.values(K)) expect(sent).not.toContain(k);
          expect(s.headers.cookie).toBeUndefined();
          expect(s.headers["x-memgate-tenant"]).toBeUndefined();
        }
      }
    }
  });

  test("proxy targets that could leave the upstream's base path get 400 and reach no upstream", async () => {
    const gateway = createServer(h.app).listen(0, "127.0.0.1");
    await new Promise<void>((resolve) => gateway.once("listening", () => resolve()));
    const port = (gateway.address() as AddressInfo).port;
    /**
     * Sends `target` as the request line's target, exactly as written (absolute-form included), over a plain
     * socket: http.request would parse it (and an interceptor such as nock would refuse it).
     */
    const raw = (target: string) =>
      new Promise<number>((resolve, reject) => {
        const socket = connect(port, "127.0.0.1", () => {
          socket.write(
            `GET ${target} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Api-Key ${K.aApp}\r\nConnection: close\r\n\r\n`,
          );
        });
        let text = "";
        socket.on("data", (chunk: Buffer) => {
          text += chunk.toString();
        });
        socket.on("error", reject);
        socket.on("close", () => resolve(Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? 0)));
      });
    try {
      const targets = [
        "http://evil.example/api/v2/users/u-1",
        "http://evil.example/memory/all",
        "/api/v2/users/..%2f..%2fadmin",
        "/api/v2/users/%2e%2e/%2e%2e/admin",
        "/api/v2/users/%252e%252e/admin",
        "/api/v2/users/a%2fb",
        "/api/v2/users/a%5c..",
        "/memory/..%2fadmin",
      ];
      for (const target of targets) expect([target, await raw(target)]).toEqual([target, 400]);
      expect(seen).toEqual([]);
      // An ordinary target still goes through.
      expect(await raw("/api/v2/users/u-1")).toBe(200);
      expect(seen.map((s) => s.path)).toEqual(["/a/zep/api/v2/users/u-1"]);
    } finally {
      gateway.closeAllConnections();
      await new Promise<void>((resolve) => gateway.close(() => resolve()));
    }
  });

  test("mixing two tenants' keys in one request is refused", async () => {
    for (const r of ROUTES) {
      const res = await call(r, { authorization: `Api-Key ${K.aApp}`, "x-api-key": K.bApp });
      expect(res.status).toBe(401);
    }
    expect(seen).toEqual([]);
  });

  test("a policy outside the tenant's list cannot be picked with x-memgate-policy", async () => {
    for (const r of ROUTES.filter((x) => x.scope === "retrieve")) {
      const res = await call(r, { authorization: `Api-Key ${K.aApp}`, "x-memgate-policy": "fast" });
      expect(res.status).toBe(403);
    }
    expect(seen).toEqual([]);
  });

  test("no key, upstream secret or query in any log line or error body; secure headers on every answer", async () => {
    const bodies: string[] = [];
    for (const r of ROUTES) {
      for (const headers of [
        {},
        { authorization: `Api-Key ${K.aApp}` },
        { authorization: `Api-Key ${K.aReader}` },
      ] as Array<Record<string, string>>) {
        const res = await call(r, headers);
        bodies.push(res.text);
        expect(res.headers["x-content-type-options"]).toBe("nosniff");
        expect(res.headers["content-security-policy"]).toBe("default-src 'none';frame-ancestors 'none'");
      }
    }
    const logs = h.logs.join("\n");
    for (const s of [...Object.values(K), ...Object.values(UPSTREAM_SECRETS), QUERY])
      expect(logs).not.toContain(s);
    // Bodies may echo the caller's own query (OpenMemory's answer shape does); never a key or a secret.
    const answered = bodies.join("\n");
    for (const s of [...Object.values(K), ...Object.values(UPSTREAM_SECRETS)])
      expect(answered).not.toContain(s);
  });
});
