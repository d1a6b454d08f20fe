/**
 * Finding 13 (issue 26) — the smaller ones, each driven as an attacker or a hostile upstream would:
 * - metric label cardinality steerable from requests: the case of the proxy's mount path (`/API/v2`, `/aPi/V2`,
 *   …) times whatever status an upstream invents became `http_route` × `http_response_status_code` series;
 * - the telemetry user hash was an unkeyed SHA-256 of `tenant:userId`: an e-mail-like id is found back by
 *   hashing a dictionary;
 * - the transparent proxy forwarded TRACE and any other method, passed the upstream's
 *   `Access-Control-Allow-Origin: *`, `Set-Cookie` and CSP over the gateway's own headers, forwarded the
 *   caller's `X-Forwarded-For` / `Forwarded` unchanged, and an upstream dripping one byte at a time held the
 *   connection with no overall deadline;
 * - policy files had no size limit;
 * - `PORT=0x50` passed validation (and so did every other number written in hex, exponent or with spaces).
 */
import { createHash, createHmac } from "node:crypto";
import { writeFileSync } from "node:fs";
import {
  createServer,
  request as httpRequest,
  type IncomingHttpHeaders,
  type Server,
  STATUS_CODES,
} from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import request from "supertest";
import { EnvError, parseEnv } from "../../src/config/env";
import { type Gateway, KEYS, startGateway } from "../compat/gateway";
import { KEYS as H_KEYS, type Harness, makeHarness } from "../helpers/harness";
import { makeCandidate } from "../helpers/items";
import { parsePrometheusText } from "../telemetry/prom-parse";
import { installTelemetry, type TestTelemetry } from "../telemetry/setup";

interface Seen {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
}

/** One hostile upstream for both doors: `/status/<n>` answers n, `/drip` drips, the rest answers 200 JSON. */
async function hostileUpstream(): Promise<{ server: Server; origin: string; seen: Seen[] }> {
  const seen: Seen[] = [];
  const server = createServer((req, res) => {
    seen.push({ method: req.method ?? "", url: req.url ?? "", headers: req.headers });
    req.resume();
    const status = /\/status\/(\d{3})$/.exec(req.url ?? "");
    if (req.url?.endsWith("/drip")) {
      res.writeHead(200, { "content-type": "text/plain" });
      const timer = setInterval(() => res.write("."), 100);
      res.on("close", () => clearInterval(timer));
      return;
    }
    res.writeHead(status === null ? 200 : Number(status[1]), {
      "content-type": "application/json",
      "access-control-allow-origin": "*",
      "access-control-allow-credentials": "true",
      "set-cookie": "upstream_session=abc; Path=/",
      "content-security-policy": "default-src *",
      "x-frame-options": "ALLOWALL",
      "strict-transport-security": "max-age=0",
      "x-upstream-kept": "yes",
    });
    res.end("{}");
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  return { server, origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen };
}

describe("finding 13 — the proxy", () => {
  let up: Awaited<ReturnType<typeof hostileUpstream>>;
  let gw: Gateway;
  let tel: TestTelemetry;
  beforeAll(async () => {
    tel = installTelemetry();
    up = await hostileUpstream();
    gw = await startGateway({
      env: { T_ZEP_KEY: "zep-key", T_OM_KEY: "om-key", MEMGATE_PROXY_DEADLINE_MS: "1000" },
      backends: `      zep: { apiKeyEnv: T_ZEP_KEY, baseUrl: "${up.origin}/api/v2" }
      openmemory: { url: "${up.origin}/om", apiKeyEnv: T_OM_KEY, userScoping: user_id }
    defaultBackend: zep`,
    });
  });
  afterAll(async () => {
    await tel.close();
    await gw?.close();
    up.server.closeAllConnections();
    await new Promise<void>((resolve) => up.server.close(() => resolve()));
  });
  beforeEach(() => {
    up.seen.length = 0;
  });

  /** A raw request through the gateway's port (any method, any header). */
  function raw(method: string, path: string, headers: Record<string, string> = {}) {
    return new Promise<{ status: number; headers: IncomingHttpHeaders; body: string }>((resolve, reject) => {
      const req = httpRequest(`${gw.origin}${path}`, {
        method,
        headers: { authorization: `Api-Key ${KEYS.app}`, ...headers },
      });
      req.on("response", (res) => {
        let body = "";
        res.on("data", (c) => {
          body += String(c);
        });
        res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
        res.on("error", reject);
      });
      req.on("error", reject);
      req.end();
    });
  }

  test("TRACE, CONNECT-like and unknown methods are refused with 405 and never reach the upstream", async () => {
    for (const method of ["TRACE", "PROPFIND", "MKCOL", "PURGE", "LINK"]) {
      const res = await raw(method, "/api/v2/users/u-1");
      expect({ method, status: res.status }).toEqual({ method, status: 405 });
      expect(res.headers.allow).toBe("GET, HEAD, POST, PUT, PATCH, DELETE");
      expect(res.headers["content-type"]).toMatch(/^application\/problem\+json/);
    }
    expect(up.seen.map((s) => s.method)).toEqual([]);
    const ok = await raw("DELETE", "/api/v2/users/u-1");
    expect(ok.status).toBe(200);
    expect(up.seen.map((s) => s.method)).toEqual(["DELETE"]);
  });

  test("the upstream's CORS, cookies and security headers do not replace the gateway's own", async () => {
    for (const path of ["/api/v2/users/u-1", "/memory/all"]) {
      const res = await raw("GET", path);
      expect(res.status).toBe(200);
      expect(res.headers["access-control-allow-origin"]).toBeUndefined();
      expect(res.headers["access-control-allow-credentials"]).toBeUndefined();
      expect(res.headers["set-cookie"]).toBeUndefined();
      expect(res.headers["content-security-policy"]).toBe("default-src 'none';frame-ancestors 'none'");
      expect(res.headers["x-frame-options"]).toBe("DENY");
      expect(res.headers["strict-transport-security"]).toBe("max-age=31536000; includeSubDomains");
      expect(res.headers["x-upstream-kept"]).toBe("yes");
    }
  });

  test("the caller's X-Forwarded-*, Forwarded and X-Real-IP are not forwarded", async () => {
    await raw("GET", "/api/v2/users/u-1", {
      "x-forwarded-for": "203.0.113.7",
      "x-forwarded-host": "admin.internal",
      "x-forwarded-proto": "https",
      forwarded: "for=203.0.113.7;host=admin.internal",
      "x-real-ip": "203.0.113.7",
      "true-client-ip": "203.0.113.7",
    });
    const sent = up.seen[0]?.headers ?? {};
    for (const h of [
      "x-forwarded-for",
      "x-forwarded-host",
      "x-forwarded-proto",
      "forwarded",
      "x-real-ip",
      "true-client-ip",
    ])
      expect({ h, value: sent[h] }).toEqual({ h, value: undefined });
  });

  test("an upstream dripping one byte at a time is cut at the overall deadline", async () => {
    const started = Date.now();
    const outcome = await raw("GET", "/api/v2/drip").then(
      () => "ended",
      (err: NodeJS.ErrnoException) => err.code ?? "error",
    );
    const took = Date.now() - started;
    expect(outcome).toBe("ECONNRESET");
    expect(took).toBeGreaterThanOrEqual(900);
    expect(took).toBeLessThan(5000);
  });

  test("the route label is the mount path whatever its case; invented statuses share one label per class", async () => {
    for (const path of ["/API/V2", "/api/V2", "/Api/v2", "/aPi/v2", "/MEMORY", "/Memory"])
      await raw("GET", `${path}/users/x`);
    for (const status of [299, 418, 499, 533, 577, 598, 599]) await raw("GET", `/api/v2/status/${status}`);
    const res = await request(gw.h.app).get("/metrics").expect(200);
    const samples = parsePrometheusText(res.text).get("http_server_request_duration_seconds")?.samples ?? [];
    const routes = new Set(
      samples.flatMap((s) => (s.labels.http_route === undefined ? [] : [s.labels.http_route])),
    );
    expect([...routes].filter((r) => r !== r.toLowerCase())).toEqual([]);
    expect(routes).toContain("/api/v2");
    const statuses = [...new Set(samples.map((s) => s.labels.http_response_status_code ?? ""))];
    // A status Node has no name for counts as its class: an upstream cannot mint series.
    expect(statuses.filter((s) => STATUS_CODES[s] === undefined && !/^[1-5]xx$/.test(s))).toEqual([]);
    expect(statuses).toEqual(expect.arrayContaining(["2xx", "4xx", "5xx", "418"]));
  });
});

describe("finding 13 — the telemetry user hash is keyed", () => {
  let tel: TestTelemetry;
  let h: Harness;
  beforeAll(() => {
    tel = installTelemetry();
  });
  afterAll(() => tel.close());
  afterEach(() => h.close());

  const USER = "ana.garcia@example.com";
  const hashOf = async (): Promise<unknown> => {
    h.zep.acme?.setUser(USER, [makeCandidate({ id: "f1", content: "Ana likes tea.", score: 0.9 })]);
    tel.reset();
    await request(h.app)
      .post("/v1/retrieve")
      .set("x-api-key", H_KEYS.acmeChat)
      .send({ userId: USER, sessionId: "s-1", query: "tea", useMemory: true })
      .expect(200);
    return tel.spans().find((s) => s.name === "memgate.retrieve")?.attributes["memgate.user.hash"];
  };

  test("not the unkeyed SHA-256 a dictionary finds back; with MEMGATE_USER_HASH_KEY, the HMAC under it", async () => {
    h = await makeHarness();
    const unkeyed = createHash("sha256").update(`acme:${USER}`).digest("hex").slice(0, 16);
    const perProcess = await hashOf();
    expect(perProcess).toMatch(/^[0-9a-f]{16}$/);
    expect(perProcess).not.toBe(unkeyed);
    await h.close();

    const key = "k".repeat(32);
    h = await makeHarness({ env: { MEMGATE_USER_HASH_KEY: key } });
    expect(await hashOf()).toBe(createHmac("sha256", key).update(`acme:${USER}`).digest("hex").slice(0, 16));
  });
});

describe("finding 13 — policy files have a size limit", () => {
  let h: Harness;
  afterEach(() => h.close());

  test("a file over 1 MiB is rejected by its size, before it is read; the rest keeps serving", async () => {
    h = await makeHarness();
    writeFileSync(
      join(h.dir, "policies", "huge.yaml"),
      `name: huge\nversion: 1\n# ${"x".repeat(2 * 1024 * 1024)}\n`,
    );
    await h.services.policies.reload();
    const res = await request(h.app).get("/v1/policies").set("x-api-key", H_KEYS.acmeOps).expect(200);
    expect(res.body.rejected).toEqual([
      expect.objectContaining({ file: "huge.yaml", error: expect.stringMatching(/larger than 1 MiB/) }),
    ]);
    expect(res.body.policies.map((p: { name: string }) => p.name)).toContain("default");
  });
});

describe("finding 13 — numbers in the environment are decimal digits", () => {
  test.each([
    ["PORT", "0x50"],
    ["PORT", "1e3"],
    ["PORT", " 80"],
    ["PORT", "80.0"],
    ["PORT", "0b1010000"],
    ["MEMGATE_MAX_CONNECTIONS", "0x10"],
    ["MEMGATE_BREAKER_HALF_OPEN_MS", "1e4"],
    ["MEMGATE_BREAKER_RATIO", "0x0.8"],
    ["MEMGATE_PROXY_DEADLINE_MS", "Infinity"],
  ])("%s=%s is refused, naming the variable", (name, value) => {
    expect(() => parseEnv({ [name]: value })).toThrow(EnvError);
    expect(() => parseEnv({ [name]: value })).toThrow(
      new RegExp(`^${name}: .*\\(got "${value.replace(".", "\\.")}"\\)$`),
    );
  });

  test("decimal values still pass", () => {
    const env = parseEnv({ PORT: "80", MEMGATE_BREAKER_RATIO: "0.5", MEMGATE_MAX_CONNECTIONS: "0" });
    expect(env.PORT).toBe(80);
    expect(env.MEMGATE_BREAKER_RATIO).toBe(0.5);
    expect(env.MEMGATE_MAX_CONNECTIONS).toBe(0);
  });
});
