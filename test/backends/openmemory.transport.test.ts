/**
 * The OpenMemory adapter's HTTP transport (undici.request through a keep-alive Agent per instance), against a bare
 * local server that records connections: redirects refused (never followed), aborts and
 * timeouts, rate-limit headers read from undici's header object, connections reused after error answers, close().
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { createOpenMemoryBackend } from "../../src/backends/openmemory";
import { errorFromResponse, retryAfterMs } from "../../src/backends/openmemory/errors";
import { type Backend, BackendError } from "../../src/backends/types";
import { policySchema } from "../../src/policy/schema";

const KEY = "om-transport-key-0123";
const policy = policySchema.parse({ name: "om-transport", version: 1 });
const OK_BODY = JSON.stringify({ query: "q", matches: [] });
/** Larger than a response stream's buffer: a connection is only freed once such a body has been read. */
const LARGE_BODY = `<html>${"x".repeat(100_000)}</html>`;

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

interface Upstream {
  baseUrl: string;
  /** Requests seen, as "METHOD path". */
  requests: string[];
  connections: number;
  handle: Handler;
  close(): Promise<void>;
}

async function startUpstream(): Promise<Upstream> {
  const server: Server = createServer();
  const up: Upstream = {
    baseUrl: "",
    requests: [],
    connections: 0,
    handle: (_req, res) => res.writeHead(200, { "content-type": "application/json" }).end(OK_BODY),
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  server.on("connection", () => {
    up.connections += 1;
  });
  server.on("request", (req: IncomingMessage, res: ServerResponse) => {
    up.requests.push(`${req.method} ${req.url}`);
    req.resume();
    req.on("end", () => up.handle(req, res));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  up.baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return up;
}

describe("openmemory adapter transport", () => {
  let up: Upstream;
  let backend: Backend;

  beforeEach(async () => {
    up = await startUpstream();
    backend = createOpenMemoryBackend({ baseUrl: up.baseUrl, apiKey: KEY, userScoping: "user_id" });
  });
  afterEach(async () => {
    await backend.close?.();
    await up.close();
  });

  const search = (signal: AbortSignal = AbortSignal.timeout(2000)) =>
    backend.search({ userId: "ana", query: "coffee order", limit: 4, searchType: "hybrid", policy, signal });
  const failure = (signal?: AbortSignal) =>
    search(signal).then(
      () => new Error("search unexpectedly succeeded"),
      (e: unknown) => e,
    );

  test.each([301, 302, 303, 307, 308])(
    "a %i redirect is refused, not followed (src/backends/upstream.ts)",
    async (status) => {
      up.handle = (_req, res) =>
        res
          .writeHead(status, { location: `${up.baseUrl}/elsewhere`, "content-type": "text/plain" })
          .end(LARGE_BODY);
      const err = await failure();
      expect(err).toBeInstanceOf(BackendError);
      expect(err).toMatchObject({
        kind: "unavailable",
        status: undefined,
        retryable: true,
        message: `OpenMemory query failed: redirect refused (HTTP ${status})`,
      });
      expect(up.requests).toEqual(["POST /memory/query"]);
      // The refused answers' bodies are drained, so their connections go back to the pool and are reused
      // (undici may open a second one while the first is being released; never one per call).
      for (let n = 0; n < 5; n++) expect(await failure()).toMatchObject({ kind: "unavailable" });
      up.handle = (_req, res) => res.writeHead(200, { "content-type": "application/json" }).end(OK_BODY);
      await expect(search()).resolves.toEqual([]);
      expect(up.requests).toHaveLength(7);
      expect(up.connections).toBeLessThanOrEqual(2);
    },
  );

  test("another 3xx (300, 304) is a non-2xx answer: unavailable with its status", async () => {
    up.handle = (_req, res) => res.writeHead(300, { "content-type": "text/plain" }).end("choose");
    expect(await failure()).toMatchObject({ kind: "unavailable", status: 300 });
    up.handle = (_req, res) => res.writeHead(304).end();
    expect(await failure()).toMatchObject({ kind: "unavailable", status: 304 });
  });

  test("an already aborted call sends nothing", async () => {
    const ctl = new AbortController();
    ctl.abort();
    expect(await failure(ctl.signal)).toMatchObject({
      kind: "unavailable",
      message: "OpenMemory query aborted",
    });
    expect(up.requests).toEqual([]);
    expect(up.connections).toBe(0);
  });

  test("a timeout while waiting for the answer → unavailable 'timed out'; a caller abort → 'aborted'", async () => {
    up.handle = (_req, res) => {
      setTimeout(() => res.writeHead(200, { "content-type": "application/json" }).end(OK_BODY), 1500).unref();
    };
    const started = Date.now();
    expect(await failure(AbortSignal.timeout(100))).toMatchObject({
      kind: "unavailable",
      message: "OpenMemory query timed out",
    });
    expect(Date.now() - started).toBeLessThan(1000);
    const ctl = new AbortController();
    setTimeout(() => ctl.abort(), 50);
    expect(await failure(ctl.signal)).toMatchObject({
      kind: "unavailable",
      message: "OpenMemory query aborted",
    });
  });

  test("a timeout while the body is streaming → unavailable 'timed out'", async () => {
    up.handle = (_req, res) => {
      res.writeHead(200, { "content-type": "application/json" });
      res.write('{"query":"q","matches":[');
    };
    expect(await failure(AbortSignal.timeout(150))).toMatchObject({
      kind: "unavailable",
      message: "OpenMemory query timed out",
    });
  });

  test("429: Retry-After (seconds or HTTP date) and X-RateLimit-Reset are read from the response headers", async () => {
    up.handle = (_req, res) =>
      res.writeHead(429, { "content-type": "application/json", "retry-after": "7" }).end("{}");
    expect(await failure()).toMatchObject({ kind: "rate_limited", status: 429, retryAfterMs: 7000 });

    up.handle = (_req, res) =>
      res
        .writeHead(429, { "retry-after": new Date(Date.now() + 30_000).toUTCString() })
        .end('{"error":"rate_limit_exceeded"}');
    const byDate = await failure();
    expect(byDate).toMatchObject({ kind: "rate_limited", status: 429 });
    expect((byDate as BackendError).retryAfterMs).toBeGreaterThan(25_000);
    expect((byDate as BackendError).retryAfterMs).toBeLessThanOrEqual(30_000);

    up.handle = (_req, res) => res.writeHead(429, { "X-RateLimit-Reset": "12" }).end("slow down");
    expect(await failure()).toMatchObject({ kind: "rate_limited", retryAfterMs: 12_000 });
  });

  test("error answers are read to the end: their connections are reused for the following calls", async () => {
    const answers: [number, string][] = [
      [500, LARGE_BODY],
      [429, '{"error":"rate_limit_exceeded","retry_after":1}'],
      [404, "404: Not Found"],
      [200, OK_BODY],
    ];
    let i = 0;
    up.handle = (_req, res) => {
      const [status, body] = answers[i++ % answers.length] ?? [200, OK_BODY];
      res.writeHead(status, { "content-type": "application/json" }).end(body);
    };
    for (let round = 0; round < 3; round++) {
      for (let n = 0; n < 3; n++) expect(await failure()).toBeInstanceOf(BackendError);
      await expect(search()).resolves.toEqual([]);
    }
    expect(up.requests).toHaveLength(12);
    expect(up.connections).toBeLessThanOrEqual(2);
  });

  test("the request carries the adapter's method, path, headers and body", async () => {
    let seen: IncomingMessage | undefined;
    up.handle = (req, res) => {
      seen = req;
      res.writeHead(200, { "content-type": "application/json" }).end(OK_BODY);
    };
    await search();
    const body = JSON.stringify({ query: "coffee order", k: 4, user_id: "ana", filters: { user_id: "ana" } });
    expect(seen?.method).toBe("POST");
    expect(seen?.url).toBe("/memory/query");
    expect(seen?.headers).toMatchObject({
      accept: "application/json",
      "content-type": "application/json",
      "x-api-key": KEY,
      "content-length": String(Buffer.byteLength(body)),
    });
  });

  test("close() releases the pool; a later call is unavailable", async () => {
    await search();
    await backend.close?.();
    expect(await failure()).toMatchObject({ kind: "unavailable" });
    await expect(backend.close?.()).resolves.toBeUndefined();
  });

  test("a refused connection → unavailable with the system code", async () => {
    await up.close();
    expect(await failure()).toMatchObject({
      kind: "unavailable",
      message: "OpenMemory query failed: network error (ECONNREFUSED)",
    });
    up = await startUpstream();
  });
});

describe("openmemory rate-limit headers: undici's header object reads as fetch's Headers", () => {
  const now = Date.parse("2026-03-01T09:00:00.000Z");
  const cases: Record<string, string | string[]>[] = [
    { "retry-after": "7" },
    { "retry-after": "Sun, 01 Mar 2026 09:00:30 GMT" },
    { "retry-after": ["7", "9"] },
    { "x-ratelimit-reset": String(now / 1000 + 60) },
    { "x-ratelimit-reset": "5" },
    { "retry-after": "soon", "x-ratelimit-reset": "3" },
    {},
  ];

  test.each(cases)("%j", (plain) => {
    const headers = new Headers();
    for (const [name, value] of Object.entries(plain)) {
      for (const v of Array.isArray(value) ? value : [value]) headers.append(name, v);
    }
    expect(retryAfterMs(undefined, plain, now)).toBe(retryAfterMs(undefined, headers, now));
    const fromPlain = errorFromResponse("query", 429, "{}", plain);
    const fromHeaders = errorFromResponse("query", 429, "{}", headers);
    expect(fromPlain.kind).toBe("rate_limited");
    expect(fromPlain.message).toBe(fromHeaders.message);
  });
});
