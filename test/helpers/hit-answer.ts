/**
 * What a cache hit on /v1/retrieve answers (issue 16: a hit writes its entry's JSON text instead of serializing
 * the payload, and with Redis without parsing it), run against the in-process cache (test/http) and Redis
 * (test/redis): the same bytes and headers as `res.json` of the same answer, no serialization or parse of the
 * payload on a hit, and the other readers of an entry (a drop-in door's hit, the `cache` fallback's stale entry)
 * as before. The gateway is the real one (real wiring, real Zep adapter) on a fake Zep wire.
 */
import { createServer, type Server, ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import express from "express";
import request from "supertest";
import { BACKEND_FACTORIES } from "../../src/server/services";
import { hashKey } from "../../src/tenants/keys";
import { ZEP } from "../doors/doors";
import { FakeUpstreams } from "./fake-upstreams";
import { type Harness, makeHarness } from "./harness";

const KEY = "mg_test_hits_app_0123456789";

/** Entries fresh for a minute; `brief`: never fresh, kept stale for a minute. Zep down: the cache answers. */
const POLICIES = {
  hits: `name: hits
version: 1
tokenizer: approx
retrieval: { minScore: 0, topK: 5 }
cache: { ttlSeconds: 60, staleSeconds: 60 }
fallbacks: { ZEP_UNAVAILABLE: cache }
`,
  brief: `name: brief
version: 1
tokenizer: approx
retrieval: { minScore: 0, topK: 5 }
cache: { ttlSeconds: 0, staleSeconds: 60 }
fallbacks: { ZEP_UNAVAILABLE: cache }
`,
};

/** Texts with what JSON escapes (quotes, a backslash, a control character) and what UTF-8 makes longer. */
export const HIT_MEMORIES = [
  {
    id: "m1",
    content: "Ana orders a café crème ☕ every morning — never with sugar 𝄞.",
    at: "2026-03-01T09:00:00Z",
  },
  {
    id: "m2",
    content: 'Ana says "oat milk, always" and signs C:\\Users\\ana\ttabs.',
    at: "2026-03-02T09:00:00Z",
  },
  { id: "m3", content: "Ana works from the Lisbon office on Tuesdays.", at: "2026-03-03T09:00:00Z" },
];

function tenants(upstream: FakeUpstreams): string {
  return `tenants:
  - id: t
    keys:
      - { name: app, sha256: ${hashKey(KEY)}, scopes: [retrieve] }
    policies: { allowed: ["*"], default: hits }
    defaultBackend: zep
    backends:
      zep: { apiKeyEnv: T_ZEP_KEY, baseUrl: "${upstream.zepBaseUrl}" }
`;
}

interface Running {
  upstream: FakeUpstreams;
  h: Harness;
  server: Server;
  origin: string;
}

export interface HitSuiteOptions {
  /** Extra environment of the gateway (Redis: REDIS_URL and a key prefix of the suite's own). */
  env: () => Record<string, string>;
  /** Waits until the gateway can use what `env` names (Redis: the connection is ready). */
  ready?: (h: Harness) => Promise<void>;
  /** After each test (Redis: delete the suite's keys). */
  cleanup?: () => Promise<void>;
  /** Redis: a hit answers from the reply's bytes (a Buffer), never decoded into a string nor encoded again. */
  bytes?: boolean;
}

interface Raw {
  status: number;
  text: string;
  headers: Record<string, string>;
}

/** The answer's bytes as they came (supertest would parse a JSON answer itself, with JSON.parse). */
function rawText(res: request.Response, cb: (err: Error | null, body: string) => void): void {
  // superagent hands a parser the answer's stream (its Response type does not say so).
  const stream = res as unknown as NodeJS.ReadableStream & { setEncoding(e: string): void };
  let text = "";
  stream.setEncoding("utf8");
  stream.on("data", (chunk: string) => {
    text += chunk;
  });
  stream.on("end", () => cb(null, text));
}

async function raw(test: request.Test): Promise<Raw> {
  const res = await test.buffer(true).parse(rawText);
  return { status: res.status, text: res.body as string, headers: res.headers as Record<string, string> };
}

interface Answer {
  memories: Array<{ content: string }>;
  metadata: { cache: string; queryTime: number; fallback: { code: string; action: string } | null };
}

export function hitAnswerSuite(opts: HitSuiteOptions): void {
  let r: Running | undefined;

  async function start(): Promise<Running> {
    const upstream = await FakeUpstreams.start();
    upstream.seed("ana", HIT_MEMORIES);
    const h = await makeHarness({
      policies: POLICIES,
      factories: BACKEND_FACTORIES,
      tenants: tenants(upstream),
      env: { T_ZEP_KEY: "zep-tenant-key", MEMGATE_RETRY_MAX: "0", ...opts.env() },
    });
    await opts.ready?.(h);
    const server = await new Promise<Server>((resolve, reject) => {
      const s = createServer(h.app).listen(0, "127.0.0.1", (err?: Error) => (err ? reject(err) : resolve(s)));
    });
    return { upstream, h, server, origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
  }

  afterEach(async () => {
    if (r !== undefined) {
      const { server, h, upstream } = r;
      r = undefined;
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await h.close();
      await upstream.close();
    }
    await opts.cleanup?.();
  });

  const retrieve = (running: Running, patch: Record<string, unknown> = {}) =>
    raw(
      request(running.h.app)
        .post("/v1/retrieve")
        .set("x-api-key", KEY)
        .send({ userId: "ana", sessionId: "s-1", query: "what does Ana order?", useMemory: true, ...patch }),
    );

  test("a hit answers JSON.stringify of the miss's answer with cache: hit and its own queryTime, with the headers res.json sends", async () => {
    r = await start();
    const miss = await retrieve(r);
    const hit = await retrieve(r);
    const again = await retrieve(r);
    expect([miss.status, hit.status, again.status]).toEqual([200, 200, 200]);
    const missBody = JSON.parse(miss.text) as Answer;
    expect(missBody.metadata.cache).toBe("miss");
    expect(missBody.memories.map((m) => m.content)).toContain(HIT_MEMORIES[1]?.content);
    for (const answer of [hit, again]) {
      const body = JSON.parse(answer.text) as Answer;
      // Same fields in the same order, the hit's own cache status and query time: byte for byte.
      const expected = JSON.stringify({
        ...missBody,
        metadata: { ...missBody.metadata, queryTime: body.metadata.queryTime, cache: "hit" },
      });
      expect(answer.text).toBe(expected);
      expect(answer.headers["content-type"]).toBe("application/json; charset=utf-8");
      expect(answer.headers["content-length"]).toBe(String(Buffer.byteLength(answer.text)));
      expect(Buffer.byteLength(answer.text)).toBeGreaterThan(answer.text.length);
      // The same headers as the miss's (which `res.json` sends), values aside from the length.
      expect(Object.keys(answer.headers).sort()).toEqual(Object.keys(miss.headers).sort());
      for (const name of ["content-type", "cache-control", "x-content-type-options", "vary"])
        expect(answer.headers[name]).toBe(miss.headers[name]);

      // And what Express's res.json makes of the same answer: same bytes, type and length.
      const bare = express();
      bare.set("etag", false);
      bare.get("/", (_req, res) => {
        res.json(body);
      });
      const reference = await raw(request(bare).get("/"));
      expect(answer.text).toBe(reference.text);
      expect(answer.headers["content-type"]).toBe(reference.headers["content-type"]);
      expect(answer.headers["content-length"]).toBe(reference.headers["content-length"]);
    }
  });

  test("a hit neither serializes nor parses its payload (a miss does both: the spies see them)", async () => {
    r = await start();
    const contents = HIT_MEMORIES.map((m) => m.content);
    const stringify = jest.spyOn(JSON, "stringify");
    const parse = jest.spyOn(JSON, "parse");
    /** Calls that serialized a payload or its memories, or parsed a text holding a memory. */
    const payloadWork = () => ({
      stringified: stringify.mock.calls.filter(([value]) => {
        if (typeof value !== "object" || value === null) return false;
        if ("memories" in value) return true;
        return (
          Array.isArray(value) && value.some((v) => typeof v === "object" && v !== null && "content" in v)
        );
      }).length,
      parsed: parse.mock.calls.filter(
        ([text]) =>
          typeof text === "string" && contents.some((c) => text.includes(JSON.stringify(c).slice(1, 20))),
      ).length,
    });
    try {
      const miss = await retrieve(r);
      expect(JSON.parse(miss.text).metadata.cache).toBe("miss");
      // The control: the miss's answer is serialized by res.json, and the Zep answer parsed.
      const onMiss = payloadWork();
      expect(onMiss.stringified).toBeGreaterThan(0);
      expect(onMiss.parsed).toBeGreaterThan(0);
      // In process the first hit makes the entry's text once; with Redis it was stored with the entry.
      await retrieve(r);
      stringify.mockClear();
      parse.mockClear();
      const hit = await retrieve(r);
      expect(payloadWork()).toEqual({ stringified: 0, parsed: 0 });
      const body = JSON.parse(hit.text) as Answer;
      expect(body.metadata.cache).toBe("hit");
      expect(body.memories.length).toBeGreaterThan(0);
    } finally {
      stringify.mockRestore();
      parse.mockRestore();
    }
  });

  if (opts.bytes) {
    test("a hit answers the bytes Redis replied: nothing decoded into a string but the metadata, nothing encoded again", async () => {
      r = await start();
      const miss = await retrieve(r);
      await retrieve(r);
      const end = jest.spyOn(ServerResponse.prototype, "end");
      const decode = jest.spyOn(Buffer.prototype, "toString");
      const encode = jest.spyOn(Buffer, "from");
      try {
        const hit = await retrieve(r);
        expect(JSON.parse(hit.text).metadata.cache).toBe("hit");
        const size = Buffer.byteLength(miss.text);
        // The answer handed to Node is a Buffer of the answer's size…
        const bodies = end.mock.calls.map(([chunk]) => chunk).filter((c) => c !== undefined);
        expect(bodies.some((c) => Buffer.isBuffer(c) && c.length === Buffer.byteLength(hit.text))).toBe(true);
        // …and no decode or encode touched anything near the entry's size (the metadata is a few hundred bytes).
        const decoded = decode.mock.contexts.filter((b, i) => {
          const [, start = 0, stop = b.length] = decode.mock.calls[i] as [string?, number?, number?];
          return stop - start > size / 2;
        });
        expect(decoded).toHaveLength(0);
        const encoded = encode.mock.calls.filter(([v]) => typeof v === "string" && v.length > size / 2);
        expect(encoded).toHaveLength(0);
      } finally {
        end.mockRestore();
        decode.mockRestore();
        encode.mockRestore();
      }
    });
  }

  test("a miss serializes its payload once: its answer and its cache entry are the same text but the metadata", async () => {
    r = await start();
    const stringify = jest.spyOn(JSON, "stringify");
    /** Serializations of a payload or of its memories (what holds the memories' contents). */
    const serialized = () =>
      stringify.mock.calls.filter(([value]) => {
        if (typeof value !== "object" || value === null) return false;
        if ("memories" in value) return true;
        return (
          Array.isArray(value) && value.some((v) => typeof v === "object" && v !== null && "content" in v)
        );
      }).length;
    try {
      const miss = await retrieve(r);
      // The first hit, too: the in-process cache kept the miss's text rather than making its own.
      const hit = await retrieve(r);
      expect(serialized()).toBe(1);
      const missBody = JSON.parse(miss.text) as Answer;
      const hitBody = JSON.parse(hit.text) as Answer;
      expect([missBody.metadata.cache, hitBody.metadata.cache]).toEqual(["miss", "hit"]);
      // The same bytes around the metadata object.
      const meta = (text: string, body: Answer) => text.indexOf(JSON.stringify(body.metadata));
      const m = meta(miss.text, missBody);
      const h = meta(hit.text, hitBody);
      expect(m).toBeGreaterThan(0);
      expect(hit.text.slice(0, h)).toBe(miss.text.slice(0, m));
      expect(hit.text.slice(h + JSON.stringify(hitBody.metadata).length)).toBe(
        miss.text.slice(m + JSON.stringify(missBody.metadata).length),
      );
    } finally {
      stringify.mockRestore();
    }
  });

  test("the cache fallback still serves a stale entry, and a drop-in door's hit still answers from its own entry", async () => {
    r = await start();
    const good = await retrieve(r, { policy: "brief" });
    const goodBody = JSON.parse(good.text) as Answer;
    expect(goodBody.metadata.cache).toBe("miss");

    const first = await ZEP.ask(r.origin, KEY, "ana", "what does Ana order?");
    expect(first).toMatchObject({ cache: "miss", fallback: null });
    expect(first.texts).toContain(HIT_MEMORIES[0]?.content);
    const searches = r.upstream.searches.zep;
    const second = await ZEP.ask(r.origin, KEY, "ana", "what does Ana order?");
    expect(second).toMatchObject({ cache: "hit", fallback: null, texts: first.texts });
    expect(r.upstream.searches.zep).toBe(searches);

    r.upstream.fail(500);
    // ttlSeconds 0: never fresh, so Zep is asked; it fails and the fallback serves the entry as stale.
    const stale = await retrieve(r, { policy: "brief" });
    expect(stale.status).toBe(200);
    const staleBody = JSON.parse(stale.text) as Answer;
    expect(staleBody.metadata).toMatchObject({
      cache: "stale",
      fallback: { code: "ZEP_UNAVAILABLE", action: "cache" },
    });
    expect(staleBody.memories).toEqual(goodBody.memories);
    expect(stale.text).toBe(JSON.stringify(staleBody));
  });
}
