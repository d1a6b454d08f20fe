/**
 * The response head of the hot answers written at once (src/http/head.ts): the same header lines, in the same order,
 * as when every header was set one `setHeader` at a time — on /v1/retrieve's answers (written at once) and on its
 * errors and other routes' answers (the edge's headers set on the response first).
 */
import { createServer, type IncomingMessage, type Server, ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import request from "supertest";
import { flushHead, setAnswerHeader, writeHeadOnce } from "../../src/http/head";
import { localsOf } from "../../src/http/plain";
import { apiSecurityHeaderList } from "../../src/http/security-headers";
import { type Harness, KEYS, makeHarness } from "../helpers/harness";
import { makeCandidate } from "../helpers/items";

/** Header names in the order they came on the wire, Date and the connection's own left out. */
function names(res: request.Response): string[] {
  const raw = (res as unknown as { res: IncomingMessage }).res.rawHeaders;
  return raw.filter((_, i) => i % 2 === 0).filter((n) => !["Date", "Connection", "Keep-Alive"].includes(n));
}

const SECURE = apiSecurityHeaderList().set.map(([name]) => name);

describe("the head of the hot answers", () => {
  let h: Harness;
  beforeEach(async () => {
    h = await makeHarness({ env: { MEMGATE_KEY_RATE_LIMIT: "1000/60" } });
    h.zep.acme?.setUser("u-1", [makeCandidate({ id: "f1", content: "Ana likes flat whites.", score: 0.9 })]);
  });
  afterEach(() => h.close());

  const retrieve = (body: object = { userId: "u-1", sessionId: "s", query: "coffee?", useMemory: true }) =>
    request(h.app)
      .post("/v1/retrieve")
      .set("x-api-key", KEYS.acmeChat)
      .set("x-request-id", "req-1")
      .send(body);

  test("a miss and a hit: the edge's headers, the route's, then its type and length, in the order they were set", async () => {
    for (const cache of ["miss", "hit"]) {
      const res = await retrieve();
      expect(res.status).toBe(200);
      expect(res.body.metadata.cache).toBe(cache);
      expect(names(res)).toEqual([
        ...SECURE,
        "x-request-id",
        "RateLimit-Policy",
        "RateLimit",
        "x-memgate-policy",
        "Content-Type",
        "Content-Length",
      ]);
      expect(res.headers["x-request-id"]).toBe("req-1");
      expect(res.headers["content-type"]).toBe("application/json; charset=utf-8");
    }
  });

  test("an error: the edge's headers first, then the limit's, then the problem's", async () => {
    const res = await retrieve({ userId: 5 });
    expect(res.status).toBe(400);
    expect(names(res)).toEqual([
      ...SECURE,
      "x-request-id",
      "RateLimit-Policy",
      "RateLimit",
      "Content-Type",
      "Content-Length",
    ]);
  });

  test("a drop-in door's search (POST /memory/query): the edge's, the limit's, the door's, then type and length", async () => {
    h.openmemory.acme?.setUser("u-1", [
      makeCandidate({ id: "f1", content: "Ana likes flat whites.", score: 0.9 }),
    ]);
    for (let i = 0; i < 2; i++) {
      const res = await request(h.app)
        .post("/memory/query")
        .set("x-api-key", KEYS.acmeChat)
        .send({ query: "what coffee does Ana like?", user_id: "u-1", k: 3 });
      expect(res.status).toBe(200);
      expect(names(res)).toEqual([
        ...SECURE,
        "x-request-id",
        "RateLimit-Policy",
        "RateLimit",
        "x-memgate-policy",
        "x-memgate-cache",
        "x-memgate-fallback",
        "Content-Type",
        "Content-Length",
      ]);
    }
  });

  test("an Express route keeps the edge's headers set on the response, first", async () => {
    const res = await request(h.app).get("/healthz").set("x-request-id", "req-2");
    expect(res.status).toBe(200);
    expect(names(res).slice(0, SECURE.length + 1)).toEqual([...SECURE, "x-request-id"]);
  });
});

describe("src/http/head.ts", () => {
  let server: Server;
  let handler: (res: ServerResponse) => void = () => undefined;
  beforeAll(async () => {
    server = createServer((_req, res) => handler(res));
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));
  const origin = () => `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const pending = (res: ServerResponse) => {
    localsOf(res).head = {
      removed: ["X-Powered-By"],
      pairs: ["X-A", "a", "x-request-id", "r"],
      routeStart: 4,
    };
  };

  test("setAnswerHeader replaces a route header of the same name, as setHeader does", async () => {
    handler = (res) => {
      pending(res);
      setAnswerHeader(res, "RateLimit", "1");
      setAnswerHeader(res, "ratelimit", "2");
      expect(writeHeadOnce(res, 200, "text/plain", 2)).toBe(true);
      res.end("ok");
    };
    const res = await request(origin()).get("/");
    expect(names(res)).toEqual(["X-A", "x-request-id", "ratelimit", "Content-Type", "Content-Length"]);
    expect(res.headers.ratelimit).toBe("2");
  });

  test("a header set directly meanwhile: the pending ones are set before it, its name's case kept", async () => {
    handler = (res) => {
      pending(res);
      res.setHeader("X-Powered-By", "nope");
      setAnswerHeader(res, "RateLimit", "1");
      res.setHeader("Connection", "close");
      expect(writeHeadOnce(res, 200, "text/plain", 2)).toBe(false);
      expect(localsOf(res).head).toBeUndefined();
      res.setHeader("Content-Type", "text/plain");
      res.end("ok");
    };
    const res = await request(origin()).get("/");
    const raw = (res as unknown as { res: IncomingMessage }).res.rawHeaders.filter((_, i) => i % 2 === 0);
    expect(raw.filter((n) => n !== "Date" && n !== "Content-Length")).toEqual([
      "X-A",
      "x-request-id",
      "RateLimit",
      "X-Powered-By",
      "Connection",
      "Content-Type",
    ]);
  });

  test("not a 200: the pending headers are set on the response, readable with getHeader", async () => {
    let seen: unknown;
    handler = (res) => {
      pending(res);
      expect(writeHeadOnce(res, 429, "application/problem+json", 2)).toBe(false);
      seen = res.getHeader("x-request-id");
      res.statusCode = 429;
      res.end("{}");
    };
    await request(origin()).get("/");
    expect(seen).toBe("r");
  });

  test("flushHead without a pending head does nothing", () => {
    const res = new ServerResponse({
      method: "GET",
      httpVersionMajor: 1,
      httpVersionMinor: 1,
    } as IncomingMessage);
    flushHead(res);
    expect(res.getHeaderNames()).toEqual([]);
  });
});
