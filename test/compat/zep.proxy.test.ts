/**
 * The Zep surface below the SDK: what the transparent proxy forwards and returns, what the shaped routes
 * answer when Zep fails or refuses, and which policy applies (`x-memgate-policy`).
 */
import { ServerResponse } from "node:http";
import { createServer, Socket } from "node:net";
import request from "supertest";
import { createZepFakeServer, ZEP_FAKE_API_KEY, type ZepFakeServer } from "../backends/fakes/zep-server";
import { type Gateway, KEYS, startGateway } from "./gateway";

const FACT = {
  id: "f1",
  content: "Ana's card is 4111 1111 1111 1111. She likes tea. She lives in Porto. She has a cat.",
  type: "fact" as const,
  timestamp: "2026-03-01T09:00:00.000Z",
  sessionId: "s-1",
};

/** A port nothing listens on. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (address === null || typeof address === "string") throw new Error("no port");
  return address.port;
}

describe("Zep surface: proxy and shaped-route edges", () => {
  let zep: ZepFakeServer;
  let gw: Gateway;
  let batch: { headers: Record<string, string | string[] | undefined>; length: number } | undefined;

  beforeEach(async () => {
    zep = await createZepFakeServer();
    await zep.seed("ana", [FACT]);
    batch = undefined;
    zep.route(
      "POST",
      "/graph/add-batch",
      (req) => {
        batch = { headers: req.headers, length: JSON.stringify(req.body).length };
        return [
          202,
          JSON.stringify({ task_id: "task-1" }),
          { "Content-Type": "application/json", "X-Zep-Trace": "z1" },
        ];
      },
      { once: true },
    );
    gw = await startGateway({
      env: { T_ZEP_KEY: ZEP_FAKE_API_KEY },
      backends: `      zep: { apiKeyEnv: T_ZEP_KEY, baseUrl: "${zep.baseUrl}" }`,
    });
  });

  afterEach(async () => {
    await gw.close();
    await zep.close();
  });

  const app = () => request(gw.h.app);

  test("a 1 MB body is streamed through (no 64 KiB limit), credentials and memgate headers stripped", async () => {
    const episodes = Array.from({ length: 2000 }, (_, i) => ({
      data: `${"x".repeat(500)}${i}`,
      type: "text",
    }));
    const res = await app()
      .post("/api/v2/graph/add-batch")
      .set("authorization", `Api-Key ${KEYS.app}`)
      .set("cookie", "session=secret")
      .set("x-memgate-policy", "fast")
      .set("x-client-trace", "c1")
      .send({ graph_id: "g", episodes })
      .expect(202);
    expect(res.body).toEqual({ task_id: "task-1" });
    expect(res.headers["x-zep-trace"]).toBe("z1");
    expect(batch?.length).toBeGreaterThan(1_000_000);
    expect(batch?.headers.authorization).toBe(`Api-Key ${ZEP_FAKE_API_KEY}`);
    expect(batch?.headers["x-client-trace"]).toBe("c1");
    for (const stripped of ["cookie", "x-api-key", "x-memgate-policy"])
      expect(batch?.headers[stripped]).toBeUndefined();
  });

  test("a proxied write stays under Node's listener limit on its response (no MaxListenersExceededWarning per request)", async () => {
    // Node warns once per emitter, i.e. once per response: over the limit, every such proxied request would print
    // a "possible memory leak" warning. Counted where listeners are added (jest's sandbox does not see the warning).
    const on = ServerResponse.prototype.on;
    let most = 0;
    let limit = Number.POSITIVE_INFINITY;
    const counting = function (
      this: ServerResponse,
      event: string | symbol,
      fn: (...args: unknown[]) => void,
    ) {
      const out = on.call(this, event, fn);
      if (event === "close") {
        most = Math.max(most, this.listenerCount("close"));
        limit = Math.min(limit, this.getMaxListeners());
      }
      return out;
    };
    ServerResponse.prototype.on = counting as typeof on;
    ServerResponse.prototype.addListener = counting as typeof on;
    try {
      await app().get("/api/v2/users/ana").set("x-api-key", KEYS.app).expect(200);
      // A write the gateway invalidates cached answers for (the fake Zep answers 404: passed through as it is).
      await app().delete("/api/v2/users/ana").set("x-api-key", KEYS.app).expect(404);
    } finally {
      ServerResponse.prototype.on = on;
      ServerResponse.prototype.addListener = on;
    }
    expect(most).toBeGreaterThan(3);
    expect(most).toBeLessThanOrEqual(limit);
  });

  test("proxied requests over a kept-alive upstream socket do not pile up listeners on it", async () => {
    // Each proxied request guards its upstream socket against a late 'error'; a socket the agent reuses must get
    // that guard once, not once per request (a leak that grows with every request on the connection).
    const on = Socket.prototype.on;
    const add = on as (this: Socket, event: string | symbol, fn: (...args: unknown[]) => void) => Socket;
    let most = 0;
    const counting = function (this: Socket, event: string | symbol, fn: (...args: unknown[]) => void) {
      const out = add.call(this, event, fn);
      if (event === "error") most = Math.max(most, this.listenerCount("error"));
      return out;
    };
    Socket.prototype.on = counting as typeof on;
    try {
      for (let i = 0; i < 15; i++)
        await app().get("/api/v2/users/ana").set("x-api-key", KEYS.app).expect(200);
    } finally {
      Socket.prototype.on = on;
    }
    expect(most).toBeGreaterThan(0);
    expect(most).toBeLessThan(10);
  });

  test("upstream 429 passes through with its own content type, body and retry headers", async () => {
    zep.fail("rate_limited");
    const res = await app().get("/api/v2/users/ana").set("x-api-key", KEYS.app).expect(429);
    expect(res.headers["content-type"]).toContain("text/plain");
    expect(res.headers["retry-after"]).toBe("60");
    expect(res.text).toBe("Rate limit exceeded for FREE plan");
  });

  test("an upstream that cannot be reached is a 502 problem on a proxied route", async () => {
    await gw.close();
    gw = await startGateway({
      env: { T_ZEP_KEY: ZEP_FAKE_API_KEY },
      backends: `      zep: { apiKeyEnv: T_ZEP_KEY, baseUrl: "http://127.0.0.1:${await closedPort()}/api/v2" }`,
    });
    const res = await app().get("/api/v2/users/ana").set("x-api-key", KEYS.app).expect(502);
    expect(res.headers["content-type"]).toContain("application/problem+json");
    expect(res.body).toMatchObject({ code: "UPSTREAM_UNREACHABLE", status: 502 });
  });

  test("dot segments cannot step out of /api/v2", async () => {
    await app().get("/api/v2/users/%2e%2e/%2e%2e/admin").set("x-api-key", KEYS.app).expect(400);
    expect(zep.requests).toHaveLength(0);
  });

  test("graph.search fallbacks: 5xx → skip, unknown user → empty; the caller's own 400 passes through", async () => {
    const search = (body: object) => app().post("/api/v2/graph/search").set("x-api-key", KEYS.app).send(body);
    const missing = await search({ user_id: "nobody", query: "tea", scope: "nodes" }).expect(200);
    expect(missing.body).toEqual({ nodes: [] });
    expect(missing.headers["x-memgate-fallback"]).toBe("COLLECTION_NOT_FOUND; action=empty");
    // limit 0 is no limit memgate can use (above 50 it clamps): it goes to Zep as it is, and Zep's 400 comes back.
    const bad = await search({ user_id: "ana", query: "tea", limit: 0 }).expect(400);
    expect(bad.body).toEqual({ message: "limit must be between 1 and 50" });
    zep.fail("server_error");
    const down = await search({ user_id: "ana", query: "tea" }).expect(200);
    expect(down.body).toEqual({ edges: [] });
    expect(down.headers["x-memgate-fallback"]).toBe("ZEP_UNAVAILABLE; action=skip");
  });

  test("x-memgate-policy selects another allowed policy; unknown names are refused", async () => {
    const search = (policy?: string) => {
      const r = app().post("/api/v2/graph/search").set("x-api-key", KEYS.app);
      if (policy !== undefined) r.set("x-memgate-policy", policy);
      return r.send({ user_id: "ana", query: "tea card", reranker: "cross_encoder" });
    };
    const shaped = await search().expect(200);
    expect(shaped.headers["x-memgate-policy"]).toBe("compat@1");
    expect(shaped.body.edges[0].fact).toBe("Ana's card is [REDACTED]. She likes tea...."); // clipped to 2
    const fast = await search("fast").expect(200);
    expect(fast.headers["x-memgate-policy"]).toBe("fast@1");
    expect(fast.body.edges[0].fact).toContain("4111"); // `fast` does not redact
    await search("no-such-policy").expect(400);
  });
});
