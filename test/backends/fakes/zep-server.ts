/**
 * A fake Zep Cloud v3 upstream: a real HTTP server on 127.0.0.1 (an ephemeral port) speaking the wire format of
 * docs/wire/zep-cloud.md: `POST /graph/search`, `GET /users/{id}`, `GET /projects/info`, `GET /threads/{id}`, and the
 * user's lists the disclosure layers read: `GET /graph/episodes/user/{id}?lastn=`, `POST /graph/edge/user/{id}`. Implements the backend
 * contract's `ContractUpstream` and records every request it answers (method, path, headers, parsed body).
 * A server rather than nock: the Zep calls go through `undici.request`, which nock cannot intercept.
 *
 * - Auth: a request without `Authorization: Api-Key <apiKey>` gets 401.
 * - Search: seeded memories of the scope's type (edges → facts, episodes → messages, nodes and
 *   thread_summaries → summaries) that share a word with the query, best match first (then id), at most
 *   `limit`; `limit` outside 1–50 or an unknown scope → 400; an unknown user → 404 `{"message":"user not found"}`.
 *   Scores follow the reranker (what each means: src/backends/zep/score.ts), with share = the query's words the
 *   memory contains / the query's words:
 *   - `cross_encoder`: a sigmoid of the share, 1 / (1 + e^(3 − 6·share)), also as `relevance`;
 *   - `rrf` (the default, as Zep's): RRF at rank constant 1 of two retrievers, a keyword one ranking every match
 *     (the order above) and a "vector" one ranking only the memories with half the query's words or more (a
 *     prefix of that order): 2 / (1 + rank) in the prefix, 1 / (1 + rank) after it;
 *   - `mmr`: λ·share − (1 − λ)·redundancy with λ = 0.5 and a fixed redundancy of 0.5, so 0.5·share − 0.25
 *     (negative for weak matches);
 *   - `episode_mentions`: a mention count (the number of the query's words matched);
 *   - `node_distance`: hops, rank + 1.
 * - Thread messages (`GET /threads/{threadId}?lastn=&limit=`): the seeded messages whose sessionId is the thread,
 *   oldest first (timestamp, then id), as `{messages: [{uuid, content, created_at, role, processed}], row_count,
 *   total_count}`; `lastn` keeps the newest n, else `limit` the oldest n; a thread without messages → 404.
 * - Faults (`fail`) apply to every route until `reset`: 500 JSON, 429 `text/plain` with `retry-after: 60` and
 *   `x-ratelimit-*`, an answer `slowMs` late, a connection dropped without an answer, 400 JSON.
 * - `route(…)`: a test's own answer for a method and path (checked before the routes above, faults aside), e.g. a
 *   thread's context, a late answer, a dropped connection; removed by `reset`/`clearRoutes`.
 * Every answer has `Content-Type: application/json`, except the 429 (text/plain, as Zep Cloud sends it).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { ContractUpstream, Fault, SeedMemory } from "../contract";

export const ZEP_FAKE_API_KEY = "zep-fake-key-do-not-leak";

export interface ZepFakeOptions {
  apiKey?: string;
  /** How late the `slow` fault answers (default 5000 ms). */
  slowMs?: number;
}

export interface RecordedZepRequest {
  method: string;
  /** Path after the base URL, e.g. "/graph/search" or "/users/ana" (with its query string, if any). */
  path: string;
  headers: Record<string, string>;
  body: unknown;
}

/** What a test's own route answers: a reply, or `"hang-up"` (the connection is dropped without an answer). */
export type RouteAnswer = Reply | "hang-up";

export interface RouteOptions {
  /** Only requests this accepts (e.g. by the body's scope). */
  match?: (req: RecordedZepRequest) => boolean;
  /** Answer this many ms late. */
  delayMs?: number;
  /** Answer one request only, then step aside. */
  once?: boolean;
}

interface TestRoute extends RouteOptions {
  method: string;
  path: string | RegExp;
  answer: (req: RecordedZepRequest) => RouteAnswer;
  calls: number;
}

export type Reply = readonly [number, string | Buffer, Record<string, string>];

const JSON_HEADERS = { "Content-Type": "application/json" };
export const json = (status: number, body: unknown): Reply => [status, JSON.stringify(body), JSON_HEADERS];

const SCOPE_TYPES: Record<string, { key: string; type: SeedMemory["type"] }> = {
  edges: { key: "edges", type: "fact" },
  episodes: { key: "episodes", type: "message" },
  nodes: { key: "nodes", type: "summary" },
  thread_summaries: { key: "thread_summaries", type: "summary" },
};

function words(text: string): string[] {
  return text.toLowerCase().match(/[\p{L}\p{N}]{2,}/gu) ?? [];
}

type Wire = Record<string, unknown>;
const EPOCH = "2026-01-01T00:00:00Z";

/** Zep wire items (snake_case, as Zep sends them) with the required fields filled; `extra` adds or overrides. */
export const zepWire = {
  edge: (uuid: string, fact: string, extra: Wire = {}): Wire => ({
    uuid,
    fact,
    name: "RELATES_TO",
    created_at: EPOCH,
    source_node_uuid: `${uuid}-source`,
    target_node_uuid: `${uuid}-target`,
    ...extra,
  }),
  episode: (uuid: string, content: string, extra: Wire = {}): Wire => ({
    uuid,
    content,
    created_at: EPOCH,
    ...extra,
  }),
  node: (uuid: string, summary: string, extra: Wire = {}): Wire => ({
    uuid,
    name: `node ${uuid}`,
    summary,
    created_at: EPOCH,
    ...extra,
  }),
  threadSummary: (uuid: string, summary: string, extra: Wire = {}): Wire => ({
    uuid,
    name: `thread ${uuid}`,
    summary,
    created_at: EPOCH,
    ...extra,
  }),
};

function toWire(scope: string, m: SeedMemory): Wire {
  const at = { created_at: m.timestamp };
  switch (scope) {
    case "edges":
      return zepWire.edge(m.id, m.content, {
        ...at,
        valid_at: m.validAt ?? m.timestamp,
        ...(m.invalidAt === undefined ? {} : { invalid_at: m.invalidAt }),
        episodes: [],
      });
    case "episodes":
      return zepWire.episode(m.id, m.content, {
        ...at,
        role_type: m.role ?? "norole",
        thread_id: m.sessionId,
      });
    case "nodes":
      return zepWire.node(m.id, m.content, { ...at, labels: ["Entity"] });
    default:
      return zepWire.threadSummary(m.id, m.content, { ...at, name: m.sessionId });
  }
}

/** The score the fake sends for a match under `reranker` (see the top of this file). */
function fakeScore(reranker: unknown, share: number, hits: number, rank: number): number {
  switch (reranker) {
    case "cross_encoder":
      return 1 / (1 + Math.exp(3 - 6 * share));
    case "mmr":
      return 0.5 * share - 0.25;
    case "episode_mentions":
      return hits;
    case "node_distance":
      return rank + 1;
    default:
      // The "vector" retriever finds the memories with half the query's words or more: a prefix of the order.
      return (share >= 0.5 ? 2 : 1) / (1 + rank);
  }
}

export class ZepFakeServer implements ContractUpstream {
  readonly baseUrl: string;
  readonly apiKey: string;
  readonly slowMs: number;
  /** Every request the fake answered (or failed), in arrival order. */
  readonly requests: RecordedZepRequest[] = [];
  private readonly users = new Map<string, SeedMemory[]>();
  private readonly routes: TestRoute[] = [];
  private readonly timers = new Set<NodeJS.Timeout>();
  private fault: Fault | null = null;

  private constructor(
    private readonly server: Server,
    origin: string,
    opts: ZepFakeOptions,
  ) {
    this.baseUrl = `${origin}/api/v2`;
    this.apiKey = opts.apiKey ?? ZEP_FAKE_API_KEY;
    this.slowMs = opts.slowMs ?? 5000;
  }

  static async start(opts: ZepFakeOptions = {}): Promise<ZepFakeServer> {
    let self: ZepFakeServer | undefined;
    const server = createServer((req, res) => {
      void self?.handle(req, res);
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
    self = new ZepFakeServer(server, `http://127.0.0.1:${(server.address() as AddressInfo).port}`, opts);
    return self;
  }

  /**
   * Answers `method` `path` (after the base URL, without the query string; a RegExp is tested against it) with
   * `answer` until removed; counts the requests it answered.
   */
  route(
    method: "GET" | "POST" | "PUT" | "PATCH" | "DELETE",
    path: string | RegExp,
    answer: (req: RecordedZepRequest) => RouteAnswer,
    opts: RouteOptions = {},
  ): { calls: () => number } {
    const route: TestRoute = { method, path, answer, calls: 0, ...opts };
    this.routes.push(route);
    return { calls: () => route.calls };
  }

  clearRoutes(): void {
    this.routes.length = 0;
  }

  async seed(userId: string, memories: SeedMemory[]): Promise<void> {
    this.users.set(userId, [...(this.users.get(userId) ?? []), ...memories]);
  }

  fail(fault: Fault): void {
    this.fault = fault;
  }

  /** Requests that went to one path (e.g. "/graph/search"). */
  requestsTo(path: string): RecordedZepRequest[] {
    return this.requests.filter((r) => r.path === path);
  }

  async reset(): Promise<void> {
    this.fault = null;
    this.users.clear();
    this.requests.length = 0;
    this.clearRoutes();
    this.clearTimers();
  }

  async close(): Promise<void> {
    this.clearTimers();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString("utf8");
    let body: unknown = text;
    if (text !== "") {
      try {
        body = JSON.parse(text);
      } catch {
        // kept as text
      }
    }
    const url = req.url ?? "/";
    const base = "/api/v2";
    const path = url.startsWith(base) ? url.slice(base.length) : url;
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(req.headers)) {
      if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(", ") : value;
    }
    const recorded: RecordedZepRequest = { method: req.method ?? "", path, headers, body };
    this.requests.push(recorded);
    let answer: RouteAnswer;
    try {
      answer = await this.answer(headers, () => this.dispatch(recorded));
    } catch {
      answer = "hang-up";
    }
    if (answer === "hang-up") {
      req.socket.destroy();
      return;
    }
    const [status, payload, answerHeaders] = answer;
    if (res.destroyed) return;
    res.writeHead(status, answerHeaders);
    res.end(payload);
  }

  /** A test's own route for this request, else the built-in ones (404 for anything else). */
  private async dispatch(req: RecordedZepRequest): Promise<RouteAnswer> {
    const bare = req.path.split("?")[0] ?? req.path;
    const route = this.routes.find(
      (r) =>
        r.method === req.method &&
        (typeof r.path === "string" ? r.path === bare : r.path.test(bare)) &&
        (r.match === undefined || r.match(req)),
    );
    if (route !== undefined) {
      route.calls++;
      if (route.once === true) this.routes.splice(this.routes.indexOf(route), 1);
      if (route.delayMs !== undefined) await this.sleep(route.delayMs);
      return route.answer(req);
    }
    if (req.method === "POST" && bare === "/graph/search") return this.search(req.body);
    if (req.method === "GET" && /^\/threads\/[^/]+$/.test(bare))
      return this.thread(decodeURIComponent(bare.slice("/threads/".length)), req.path);
    const episodesOf = /^\/graph\/episodes\/user\/([^/]+)$/.exec(bare);
    if (req.method === "GET" && episodesOf !== null)
      return this.userList("episodes", episodesOf[1] ?? "", req);
    const edgesOf = /^\/graph\/edge\/user\/([^/]+)$/.exec(bare);
    if (req.method === "POST" && edgesOf !== null) return this.userList("edges", edgesOf[1] ?? "", req);
    if (req.method === "GET" && /^\/users\/[^/]+$/.test(bare))
      return this.user(decodeURIComponent(bare.slice("/users/".length)));
    if (req.method === "GET" && bare === "/projects/info")
      return json(200, {
        project: { uuid: "proj-1", name: "memgate-fake", created_at: "2026-01-01T00:00:00Z" },
      });
    return json(404, { message: "not found" });
  }

  private clearTimers(): void {
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const t = setTimeout(() => {
        this.timers.delete(t);
        resolve();
      }, ms);
      this.timers.add(t);
    });
  }

  private async answer(
    headers: Record<string, string>,
    handle: () => Promise<RouteAnswer>,
  ): Promise<RouteAnswer> {
    if (headers.authorization !== `Api-Key ${this.apiKey}`) return json(401, { message: "unauthorized" });
    switch (this.fault) {
      case "server_error":
        return json(500, { message: "internal server error" });
      case "bad_request":
        return json(400, { message: "bad request" });
      case "rate_limited":
        return [
          429,
          "Rate limit exceeded for FREE plan",
          {
            "Content-Type": "text/plain",
            "retry-after": "60",
            "x-ratelimit-limit": "60",
            "x-ratelimit-remaining": "0",
            "x-ratelimit-reset": String(Math.floor(Date.now() / 1000) + 60),
          },
        ];
      case "network":
        return "hang-up";
      case "slow":
        await this.sleep(this.slowMs);
        return handle();
      default:
        return handle();
    }
  }

  private user(userId: string): Reply {
    if (!this.users.has(userId)) return json(404, { message: "user not found" });
    return json(200, {
      uuid: `uuid-${userId}`,
      user_id: userId,
      created_at: "2026-01-01T00:00:00Z",
      updated_at: "2026-01-01T00:00:00Z",
      metadata: {},
    });
  }

  private thread(threadId: string, path: string): Reply {
    const all = [...this.users.values()]
      .flat()
      .filter((m) => m.type === "message" && m.sessionId === threadId)
      .sort((a, b) =>
        a.timestamp < b.timestamp ? -1 : a.timestamp > b.timestamp ? 1 : a.id < b.id ? -1 : 1,
      );
    if (all.length === 0) return json(404, { message: "thread not found" });
    const params = new URLSearchParams(path.split("?")[1] ?? "");
    const lastn = Number(params.get("lastn") ?? Number.NaN);
    const limit = Number(params.get("limit") ?? Number.NaN);
    const page = lastn > 0 ? all.slice(-lastn) : limit > 0 ? all.slice(0, limit) : all;
    const messages = page.map((m) => ({
      uuid: m.id,
      content: m.content,
      created_at: m.timestamp,
      role: m.role ?? "user",
      processed: true,
    }));
    return json(200, { messages, row_count: messages.length, total_count: all.length });
  }

  /**
   * `GET /graph/episodes/user/{id}?lastn=` → `{episodes}` (the latest `lastn`, oldest first) and
   * `POST /graph/edge/user/{id}` `{limit}` → a list of edges: the user's seeded messages / facts; unknown user 404.
   */
  private userList(scope: "episodes" | "edges", encoded: string, req: RecordedZepRequest): Reply {
    const memories = this.users.get(decodeURIComponent(encoded));
    if (memories === undefined) return json(404, { message: "user not found" });
    const type = scope === "episodes" ? "message" : "fact";
    const own = memories
      .filter((m) => m.type === type)
      .sort((a, b) => Date.parse(a.timestamp) - Date.parse(b.timestamp) || (a.id < b.id ? -1 : 1));
    if (scope === "episodes") {
      const lastn = Number(new URLSearchParams(req.path.split("?")[1] ?? "").get("lastn") ?? "10");
      return json(200, { episodes: own.slice(-lastn).map((m) => toWire("episodes", m)) });
    }
    const body = (typeof req.body === "object" && req.body !== null ? req.body : {}) as Record<
      string,
      unknown
    >;
    const limit = typeof body.limit === "number" ? body.limit : 100;
    return json(
      200,
      own.slice(0, limit).map((m) => toWire("edges", m)),
    );
  }

  private search(body: unknown): Reply {
    if (typeof body !== "object" || body === null) return json(400, { message: "invalid body" });
    const req = body as Record<string, unknown>;
    const scope = typeof req.scope === "string" ? req.scope : "edges";
    const limit = req.limit ?? 10;
    const target = SCOPE_TYPES[scope];
    if (typeof req.query !== "string" || req.query.trim() === "")
      return json(400, { message: "query is required" });
    if (typeof limit !== "number" || !Number.isInteger(limit) || limit < 1 || limit > 50) {
      return json(400, { message: "limit must be between 1 and 50" });
    }
    if (target === undefined) return json(400, { message: "unsupported scope" });
    const memories = typeof req.user_id === "string" ? this.users.get(req.user_id) : undefined;
    if (memories === undefined) return json(404, { message: "user not found" });
    const terms = [...new Set(words(req.query))];
    const ranked = memories
      .filter((m) => m.type === target.type)
      .map((m) => ({ m, hits: terms.filter((t) => words(m.content).includes(t)).length }))
      .filter((r) => r.hits > 0)
      .sort((a, b) => b.hits - a.hits || (a.m.id < b.m.id ? -1 : a.m.id > b.m.id ? 1 : 0))
      .slice(0, limit);
    const crossEncoder = req.reranker === "cross_encoder";
    const items = ranked.map(({ m, hits }, rank) => {
      const score = fakeScore(req.reranker, hits / terms.length, hits, rank);
      return { ...toWire(scope, m), score, ...(crossEncoder ? { relevance: score } : {}) };
    });
    return json(200, { [target.key]: items, response: { server_latency_ms: 3 } });
  }
}

/** A started fake on an ephemeral port; stop it with `close()`. */
export function createZepFakeServer(opts: ZepFakeOptions = {}): Promise<ZepFakeServer> {
  return ZepFakeServer.start(opts);
}
