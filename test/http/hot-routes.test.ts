/**
 * The hot routes (src/http/hot.ts): `POST /v1/retrieve` and the doors' searches are served on Node's request and
 * response before Express. Each must be found for exactly the requests Express's router would have routed to it,
 * and answer its errors as the Express routes answer theirs (the same edge steps, the same `answerError`).
 */
import { createServer, request as httpRequest, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import express from "express";
import request from "supertest";
import { hotRouteOf, hotRouteTable } from "../../src/http/hot";
import { type Harness, KEYS, makeHarness } from "../helpers/harness";

function listen(listener: (req: IncomingMessage, res: import("node:http").ServerResponse) => void) {
  return new Promise<Server>((resolve) => {
    const server = createServer(listener).listen(0, "127.0.0.1", () => resolve(server));
  });
}

/** Sends `method path` as it is (no normalization by a client library) and returns the answer's body. */
function ask(server: Server, method: string, path: string): Promise<string> {
  const { port } = server.address() as AddressInfo;
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: "127.0.0.1", port, method, path }, (res) => {
      let text = "";
      res.on("data", (c: Buffer) => {
        text += c.toString();
      });
      res.on("end", () => resolve(text));
    });
    req.on("error", reject);
    req.end();
  });
}

/** memgate's hot routes (src/http/app.ts), as Express would have routed them. */
const PATHS = ["/v1/retrieve", "/api/v2/graph/search", "/memory/query"];

describe("which requests a hot route serves", () => {
  let express5: Server;
  let hot: Server;

  beforeAll(async () => {
    const app = express();
    for (const path of PATHS)
      app.post(path, (_req, res) => {
        res.send(path);
      });
    app.use((_req, res) => {
      res.send("none");
    });
    express5 = await listen(app);
    const table = hotRouteTable(
      PATHS.map((path) => ({ method: "POST", path, handle: async (_req, res) => void res.end(path) })),
    );
    hot = await listen((req, res) => {
      const handle = hotRouteOf(table, req);
      if (handle === undefined) res.end("none");
      else void handle(req, res);
    });
  });
  afterAll(async () => {
    await new Promise((r) => express5.close(r));
    await new Promise((r) => hot.close(r));
  });

  const cases: Array<[string, string]> = [
    ["POST", "/v1/retrieve"],
    ["POST", "/v1/retrieve/"],
    ["POST", "/V1/Retrieve"],
    ["POST", "/v1/RETRIEVE/?explain=1"],
    ["POST", "/v1/retrieve?userId=u-1&x"],
    ["POST", "/v1/retrieve//"],
    ["POST", "//v1/retrieve"],
    ["POST", "/v1/retrieve/x"],
    ["POST", "/v1/retrieves"],
    ["POST", "/v1/%72etrieve"],
    ["POST", "/v1/retrieve%2F"],
    ["POST", "/v1"],
    ["POST", "/"],
    ["GET", "/v1/retrieve"],
    ["PUT", "/v1/retrieve"],
    ["HEAD", "/v1/retrieve"],
    ["OPTIONS", "/v1/retrieve"],
    ["POST", "/api/v2/graph/search"],
    ["POST", "/API/v2/Graph/Search/?x=1"],
    ["POST", "/api/v2/graph"],
    ["POST", "/api/v2/graph/search/edges"],
    ["GET", "/api/v2/graph/search"],
    ["POST", "/memory/query"],
    ["POST", "/memory/query/"],
    ["POST", "/memory/QUERY?k=1"],
    ["POST", "/memory/queries"],
    ["DELETE", "/memory/query"],
  ];

  test.each(cases)("%s %s: as Express's router decides", async (method, path) => {
    const expected = await ask(express5, method, path);
    expect(await ask(hot, method, path)).toBe(expected);
  });

  test("the cases include both outcomes", async () => {
    const outcomes = await Promise.all(cases.map(([m, p]) => ask(hot, m, p)));
    expect(new Set(outcomes.filter((o) => o !== ""))).toEqual(new Set([...PATHS, "none"]));
  });
});

describe("a hot route's errors are answered as an Express route's", () => {
  let h: Harness;
  beforeEach(async () => {
    h = await makeHarness();
  });
  afterEach(() => h.close());

  /** The answer's header names and the values that do not vary per request. */
  function shape(res: request.Response): Record<string, unknown> {
    const { date: _d, "x-request-id": id, "content-length": length, ratelimit, ...rest } = res.headers;
    return {
      ...rest,
      "x-request-id": typeof id,
      "content-length": typeof length,
      ratelimit: typeof ratelimit,
    };
  }

  test("401 without a key: the same headers, the same problem", async () => {
    const hotAnswer = await request(h.app).post("/v1/retrieve").send({ userId: "u-1" }).expect(401);
    const expressAnswer = await request(h.app).get("/v1/policies").expect(401);
    expect(shape(hotAnswer)).toEqual(shape(expressAnswer));
    expect(hotAnswer.headers["content-type"]).toBe("application/problem+json; charset=utf-8");
    expect(hotAnswer.headers["www-authenticate"]).toBe('Bearer realm="memgate"');
    expect(hotAnswer.body).toMatchObject({
      code: "UNAUTHORIZED",
      requestId: hotAnswer.headers["x-request-id"],
    });
  });

  test("the doors' searches: 401 as the doors' Express routes answer it", async () => {
    const zepSearch = await request(h.app).post("/api/v2/graph/search").send({ query: "q" }).expect(401);
    const zepOther = await request(h.app).get("/api/v2/users/u-1").expect(401);
    expect(shape(zepSearch)).toEqual(shape(zepOther));
    const omQuery = await request(h.app).post("/memory/query").send({ query: "q" }).expect(401);
    const omOther = await request(h.app).get("/memory/all").expect(401);
    expect(shape(omQuery)).toEqual(shape(omOther));
    expect(shape(omQuery)).toEqual(shape(zepSearch));
  });

  test("403 (explain without admin), with the per-key limit's headers", async () => {
    const hotAnswer = await request(h.app)
      .post("/v1/retrieve")
      .set("x-api-key", KEYS.globex)
      .send({ userId: "u-1", explain: true, query: "q", useMemory: true, sessionId: "s-1" })
      .expect(403);
    const expressAnswer = await request(h.app).get("/v1/policies").set("x-api-key", KEYS.globex).expect(403);
    expect(shape(hotAnswer)).toEqual(shape(expressAnswer));
  });

  test("a bug in a hot route is a logged 500 problem, not a crash", async () => {
    const retrieve = h.services.retrieval.retrieve.bind(h.services.retrieval);
    h.services.retrieval.retrieve = () => Promise.reject(new Error("boom"));
    const res = await request(h.app)
      .post("/v1/retrieve")
      .set("x-api-key", KEYS.acmeChat)
      .send({ userId: "u-1", query: "q", useMemory: true, sessionId: "s-1" })
      .expect(500);
    h.services.retrieval.retrieve = retrieve;
    expect(res.body).toMatchObject({ code: "INTERNAL", requestId: res.headers["x-request-id"] });
    expect(h.logs.some((l) => l.includes("unhandled error") && l.includes("boom"))).toBe(true);
  });
});
