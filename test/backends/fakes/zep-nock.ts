/**
 * A fake Zep Cloud v3 upstream on nock, speaking the wire format of docs/wire/zep-cloud.md:
 * `POST /graph/search`, `GET /users/{id}`, `GET /projects/info`. Implements the backend contract's
 * `ContractUpstream` and records every request it answers (method, path, headers, parsed body).
 *
 * - Auth: a request without `Authorization: Api-Key <apiKey>` gets 401.
 * - Search: seeded memories of the scope's type (edges → facts, episodes → messages, nodes and
 *   thread_summaries → summaries) that share a word with the query, best match first (then id), at most
 *   `limit`; `limit` outside 1–50 or an unknown scope → 400; an unknown user → 404 `{"message":"user not found"}`.
 *   Scores follow the reranker: `cross_encoder` a sigmoid in (0,1) (also as `relevance`), any other an RRF value
 *   1/(61 + rank), far below 1, as Zep's rank-based scores are.
 * - Faults (`fail`) apply to every route until `reset`: 500 JSON, 429 `text/plain` with `retry-after: 60` and
 *   `x-ratelimit-*`, an answer `slowMs` late, a connection error, 400 JSON.
 * Every answer has `Content-Type: application/json`, except the 429 (text/plain, as Zep Cloud sends it).
 */
import nock from "nock";
import type { ContractUpstream, Fault, SeedMemory } from "../contract";

export const ZEP_FAKE_BASE_URL = "https://zep.fake.test/api/v2";
export const ZEP_FAKE_API_KEY = "zep-fake-key-do-not-leak";

export interface ZepNockOptions {
  baseUrl?: string;
  apiKey?: string;
  /** How late the `slow` fault answers (default 5000 ms). */
  slowMs?: number;
}

export interface RecordedZepRequest {
  method: string;
  /** Path after the base URL, e.g. "/graph/search" or "/users/ana". */
  path: string;
  headers: Record<string, string>;
  body: unknown;
}

type Reply = readonly [number, string, Record<string, string>];

const JSON_HEADERS = { "Content-Type": "application/json" };
const json = (status: number, body: unknown): Reply => [status, JSON.stringify(body), JSON_HEADERS];

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
      return zepWire.edge(m.id, m.content, { ...at, valid_at: m.timestamp, episodes: [] });
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

export class ZepNockUpstream implements ContractUpstream {
  readonly baseUrl: string;
  readonly apiKey: string;
  readonly slowMs: number;
  /** Every request the fake answered (or failed), in arrival order. */
  readonly requests: RecordedZepRequest[] = [];
  private readonly users = new Map<string, SeedMemory[]>();
  private readonly interceptors: nock.Interceptor[] = [];
  private readonly timers = new Set<NodeJS.Timeout>();
  private fault: Fault | null = null;

  constructor(opts: ZepNockOptions = {}) {
    this.baseUrl = (opts.baseUrl ?? ZEP_FAKE_BASE_URL).replace(/\/+$/, "");
    this.apiKey = opts.apiKey ?? ZEP_FAKE_API_KEY;
    this.slowMs = opts.slowMs ?? 5000;
    const url = new URL(this.baseUrl);
    const base = url.pathname;
    const scope = nock(url.origin).persist();
    const route = (interceptor: nock.Interceptor, handle: (path: string, body: unknown) => Reply) => {
      this.interceptors.push(interceptor);
      const fake = this;
      interceptor.reply(async function (this: nock.ReplyFnContext, uri: string, body: unknown) {
        const path = uri.slice(base.length);
        fake.requests.push({ method: this.req.method ?? "", path, headers: { ...this.req.headers }, body });
        return fake.answer(this.req.headers, () => handle(path, body));
      });
    };
    route(scope.post(`${base}/graph/search`), (_path, body) => this.search(body));
    route(scope.get(new RegExp(`^${base}/users/[^/?]+$`)), (path) =>
      this.user(decodeURIComponent(path.slice("/users/".length))),
    );
    route(scope.get(`${base}/projects/info`), () =>
      json(200, { project: { uuid: "proj-1", name: "memgate-fake", created_at: "2026-01-01T00:00:00Z" } }),
    );
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
    this.clearTimers();
  }

  async close(): Promise<void> {
    this.clearTimers();
    for (const interceptor of this.interceptors) nock.removeInterceptor(interceptor);
    this.interceptors.length = 0;
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

  private async answer(headers: Record<string, string>, handle: () => Reply): Promise<Reply> {
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
        throw Object.assign(new Error("socket hang up"), { code: "ECONNRESET" });
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
      const score = crossEncoder ? 1 / (1 + Math.exp(-(6 * (hits / terms.length) - 3))) : 1 / (61 + rank);
      return { ...toWire(scope, m), score, ...(crossEncoder ? { relevance: score } : {}) };
    });
    return json(200, { [target.key]: items, response: { server_latency_ms: 3 } });
  }
}

/** A started fake; remove it with `close()` (it only removes its own interceptors). */
export async function createZepNockUpstream(opts: ZepNockOptions = {}): Promise<ZepNockUpstream> {
  return new ZepNockUpstream(opts);
}
