/**
 * One real HTTP server on 127.0.0.1 speaking both upstream wire formats a door reaches: Zep Cloud v3 under
 * `/api/v2` (`GET`/`DELETE /users/{id}`, `GET /users/{id}/node`, `POST /graph/search`) and OpenMemory (`POST /memory/query`, `DELETE /users/{id}/memories`, `GET /health`).
 * Child processes can reach it too (the two-process suite). Each search is counted per wire, and `fail` makes
 * every search answer an error (500, or 429 with `Retry-After`) until `heal`.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

export interface FakeMemory {
  id: string;
  content: string;
  /** ISO 8601. */
  at: string;
  /** Returned only to a search with exactly this query (a memory the backend ranks low for other questions). */
  onlyFor?: string;
}

export type Wire = "zep" | "openmemory";

export class FakeUpstreams {
  readonly searches: Record<Wire, number> = { zep: 0, openmemory: 0 };
  /** The query of each search, in order, per wire. */
  readonly queries: Record<Wire, string[]> = { zep: [], openmemory: [] };
  private failure: { status: number; retryAfter?: string } | undefined;
  /** Every search answers after this many ms (a slow upstream: concurrent requests overlap). */
  searchDelayMs = 0;
  private readonly users = new Map<string, FakeMemory[]>();
  /** A seeded user's summary (Zep's user node); `GET /users/{id}/node` calls so far. */
  private readonly summaries = new Map<string, string>();
  userNodeCalls = 0;

  private constructor(
    private readonly server: Server,
    readonly origin: string,
  ) {}

  static async start(): Promise<FakeUpstreams> {
    let self: FakeUpstreams | undefined;
    const server = createServer((req, res) => {
      void self?.handle(req, res);
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
    self = new FakeUpstreams(server, `http://127.0.0.1:${(server.address() as AddressInfo).port}`);
    return self;
  }

  get zepBaseUrl(): string {
    return `${this.origin}/api/v2`;
  }

  seed(userId: string, memories: FakeMemory[]): void {
    this.users.set(userId, memories);
  }

  /** The summary Zep keeps on the user's node (`GET /users/{id}/node`). */
  summarize(userId: string, summary: string): void {
    this.summaries.set(userId, summary);
  }

  fail(status: number, retryAfterSeconds?: number): void {
    this.failure =
      retryAfterSeconds === undefined ? { status } : { status, retryAfter: String(retryAfterSeconds) };
  }

  heal(): void {
    this.failure = undefined;
  }

  close(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    let text = "";
    for await (const chunk of req) text += String(chunk);
    const body = text === "" ? {} : (JSON.parse(text) as Record<string, unknown>);
    const url = new URL(req.url ?? "/", this.origin);
    const json = (status: number, value: unknown, headers: Record<string, string> = {}) => {
      res.writeHead(status, { "content-type": "application/json", ...headers });
      res.end(JSON.stringify(value));
    };
    const user = /^\/api\/v2\/users\/([^/]+)$/.exec(url.pathname);
    if (req.method === "GET" && user?.[1] !== undefined) {
      const id = decodeURIComponent(user[1]);
      if (!this.users.has(id)) return json(404, { message: "not found" });
      return json(200, { user_id: id, uuid: `uuid-${id}`, created_at: "2026-01-01T00:00:00Z" });
    }
    const node = /^\/api\/v2\/users\/([^/]+)\/node$/.exec(url.pathname);
    if (req.method === "GET" && node?.[1] !== undefined) {
      this.userNodeCalls++;
      const id = decodeURIComponent(node[1]);
      if (!this.users.has(id)) return json(404, { message: "not found" });
      const summary = this.summaries.get(id) ?? "";
      return json(200, {
        node: { uuid: `node-${id}`, name: id, summary, created_at: "2026-02-01T08:00:00Z", labels: ["User"] },
      });
    }
    if (req.method === "DELETE" && user?.[1] !== undefined) {
      const id = decodeURIComponent(user[1]);
      if (!this.users.delete(id)) return json(404, { message: "not found" });
      return json(200, { message: "deleted" });
    }
    const userMemories = /^\/users\/([^/]+)\/memories$/.exec(url.pathname);
    if (req.method === "DELETE" && userMemories?.[1] !== undefined) {
      const id = decodeURIComponent(userMemories[1]);
      const deleted = this.users.get(id)?.length ?? 0;
      this.users.delete(id);
      return json(200, { ok: true, deleted });
    }
    if (req.method === "GET" && url.pathname === "/health") return json(200, { ok: true });
    const wire: Wire | undefined =
      req.method === "POST" && url.pathname === "/api/v2/graph/search"
        ? "zep"
        : req.method === "POST" && url.pathname === "/memory/query"
          ? "openmemory"
          : undefined;
    if (wire === undefined) return json(404, { message: "no such route" });
    this.searches[wire]++;
    const query = String(body.query ?? "");
    this.queries[wire].push(query);
    const visible = (list: FakeMemory[]) =>
      list.filter((m) => m.onlyFor === undefined || m.onlyFor === query);
    if (this.searchDelayMs > 0) await new Promise((r) => setTimeout(r, this.searchDelayMs));
    if (this.failure !== undefined) {
      const headers: Record<string, string> =
        this.failure.retryAfter === undefined ? {} : { "retry-after": this.failure.retryAfter };
      return json(this.failure.status, { message: "upstream failure" }, headers);
    }
    if (wire === "zep") {
      const memories = visible(this.users.get(String(body.user_id)) ?? []);
      const limit = typeof body.limit === "number" ? body.limit : 10;
      const edges = memories.slice(0, limit).map((m) => ({
        uuid: m.id,
        fact: m.content,
        name: "RELATES_TO",
        created_at: m.at,
        source_node_uuid: "n-1",
        target_node_uuid: "n-2",
      }));
      return json(200, { edges });
    }
    const filters = (body.filters ?? {}) as Record<string, unknown>;
    const owner = String(body.user_id ?? filters.user_id);
    const k = typeof body.k === "number" ? body.k : 8;
    const memories = visible(this.users.get(owner) ?? []).slice(0, k);
    const matches = memories.map((m, i) => ({
      id: m.id,
      content: m.content,
      score: 2 - i * 0.25,
      primary_sector: "semantic",
      sectors: ["semantic"],
      path: [m.id],
      salience: 0.5,
      last_seen_at: Date.parse(m.at),
    }));
    return json(200, { query: body.query, matches });
  }
}
