/**
 * A local fake of the CaviraOSS OpenMemory server (v1.3.x wire format, docs/wire/openmemory.md)
 * on 127.0.0.1 and an ephemeral port. Shared by the backend contract, the adapter tests, the drop-in
 * compatibility tests and the openmemory-js SDK tests.
 *
 * Faithful where the gateway can tell: routes and bodies, z-scored matches without tags/metadata, epoch-ms
 * timestamps, auth (x-api-key or Bearer; 401/403 bodies), the 2026-04 tenant check (tenant = first 16 hex of
 * sha256(key); a differing `user_id` → 403 `tenant_mismatch`), error bodies, unknown route → 404 `404: Not Found`.
 * Relevance is lexical (cosine of word sets) unless a test pins it with `setRelevance`; matches with no word in
 * common are left out. Not modelled: embeddings, decay, waypoints, summaries of long content.
 */
import { createHash, randomUUID } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { ContractUpstream, Fault, SeedMemory } from "../contract";

export type FakeFault = Fault | "overload";
export const SECTORS = ["episodic", "semantic", "procedural", "emotional", "reflective"] as const;
export type Sector = (typeof SECTORS)[number];

export interface FakeMemory {
  id: string;
  user_id: string | null;
  content: string;
  tags: string[];
  metadata: Record<string, unknown>;
  primary_sector: Sector;
  sectors: Sector[];
  created_at: number;
  updated_at: number;
  last_seen_at: number;
  salience: number;
  decay_lambda: number;
  version: number;
}

export interface RecordedRequest {
  method: string;
  /** Path without the query string. */
  path: string;
  query: Record<string, string>;
  /** Lower-cased names. */
  headers: Record<string, string>;
  /** Parsed JSON, or the raw text when it is not JSON, or undefined when empty. */
  body: unknown;
}

export interface CannedResponse {
  status: number;
  /** A string is sent as text/plain, anything else as JSON. */
  body: unknown;
  headers?: Record<string, string>;
}

export interface FakeOpenMemoryOptions {
  /** Accepted keys. None: auth is off (any key or none is accepted, as on a server without OM_API_KEY). */
  apiKeys?: readonly string[];
  /** The 2026-04 behaviour: the tenant comes from the key. Can be switched later with `tenantCheck`. */
  tenantCheck?: boolean;
  /** How long the `slow` fault waits before answering (default 2000 ms). */
  slowMs?: number;
  /** Queries boost salience and refresh `last_seen_at` of what they return, as the real server does (default off). */
  reinforceOnQuery?: boolean;
  now?: () => number;
  version?: string;
}

/** The tenant the 2026-04 server derives from an API key. */
export function tenantOf(key: string): string {
  return createHash("sha256").update(key).digest("hex").slice(0, 16);
}

const TYPE_SECTOR: Record<SeedMemory["type"], Sector> = {
  message: "episodic",
  fact: "semantic",
  summary: "reflective",
};
const MAX_BODY_BYTES = 1 << 20;
const SECTOR_HINTS: [Sector, RegExp][] = [
  ["reflective", /\b(realiz|insight|pattern|reflect)/i],
  ["procedural", /\b(how to|steps?|install|configure)\b/i],
  ["emotional", /\b(feel|felt|happy|sad|angry|love|afraid|excited)/i],
  ["episodic", /\b(yesterday|today|last (week|night|month)|remember when|went|met)\b/i],
];

type Answer = { status: number; body: unknown; headers?: Record<string, string> };
class HttpAnswer extends Error {
  constructor(readonly answer: Answer) {
    super(`HTTP ${answer.status}`);
  }
}
const reject = (status: number, body: unknown): never => {
  throw new HttpAnswer({ status, body });
};
const isRecord = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);
const words = (s: string) => new Set(s.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []);
const isSector = (v: unknown): v is Sector =>
  typeof v === "string" && (SECTORS as readonly string[]).includes(v);

export class FakeOpenMemoryServer implements ContractUpstream {
  readonly requests: RecordedRequest[] = [];
  tenantCheck: boolean;
  private readonly store = new Map<string, FakeMemory>();
  private readonly relevance = new Map<string, number>();
  private readonly canned: {
    match: { method?: string; path?: string };
    answer: CannedResponse;
    left: number;
  }[] = [];
  private fault: { kind: FakeFault; left: number } | undefined;
  private readonly timers = new Set<NodeJS.Timeout>();
  private readonly now: () => number;

  private constructor(
    private readonly server: Server,
    private readonly opts: FakeOpenMemoryOptions,
  ) {
    this.tenantCheck = opts.tenantCheck ?? false;
    this.now = opts.now ?? Date.now;
  }

  static async start(opts: FakeOpenMemoryOptions = {}): Promise<FakeOpenMemoryServer> {
    const server = createServer();
    const fake = new FakeOpenMemoryServer(server, opts);
    server.on("request", (req: IncomingMessage, res: ServerResponse) => {
      fake.handle(req, res).catch(() => res.destroy());
    });
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(0, "127.0.0.1", () => resolve());
    });
    return fake;
  }

  get baseUrl(): string {
    const { port } = this.server.address() as AddressInfo;
    return `http://127.0.0.1:${port}`;
  }

  /** ContractUpstream: stores the memories for `userId` (message → episodic, fact → semantic, summary → reflective). */
  async seed(userId: string, memories: SeedMemory[]): Promise<void> {
    for (const m of memories) {
      const t = Date.parse(m.timestamp);
      const metadata: Record<string, unknown> = { session_id: m.sessionId };
      if (m.role !== undefined) metadata.role = m.role;
      this.insert({
        id: m.id,
        user_id: userId,
        content: m.content,
        primary_sector: TYPE_SECTOR[m.type],
        metadata,
        created_at: t,
        updated_at: t,
        last_seen_at: t,
      });
    }
  }

  /** Stores one memory directly (defaults fill the rest) and returns it. */
  insert(m: Partial<FakeMemory> & { content: string }): FakeMemory {
    const t = this.now();
    const sector = m.primary_sector ?? "semantic";
    const full: FakeMemory = {
      id: randomUUID(),
      user_id: null,
      tags: [],
      metadata: {},
      sectors: [sector],
      created_at: t,
      updated_at: t,
      last_seen_at: t,
      salience: 0.5,
      decay_lambda: 0.02,
      version: 1,
      ...m,
      primary_sector: sector,
    };
    this.store.set(full.id, full);
    return full;
  }

  memories(): FakeMemory[] {
    return [...this.store.values()].map((m) => structuredClone(m));
  }

  /** Pins the raw relevance of a memory (before z-scoring); 0 or less leaves it out of results. */
  setRelevance(id: string, raw: number): void {
    this.relevance.set(id, raw);
  }

  /** ContractUpstream: every following request (any route) fails this way, `times` times (default: until reset). */
  fail(fault: FakeFault, times = Number.POSITIVE_INFINITY): void {
    this.fault = { kind: fault, left: times };
  }

  /** The next `times` requests matching `match` get this answer instead of the normal one. */
  respondWith(answer: CannedResponse, match: { method?: string; path?: string } = {}, times = 1): void {
    this.canned.push({ match, answer, left: times });
  }

  async reset(): Promise<void> {
    this.store.clear();
    this.relevance.clear();
    this.canned.length = 0;
    this.requests.length = 0;
    this.fault = undefined;
    this.tenantCheck = this.opts.tenantCheck ?? false;
  }

  async close(): Promise<void> {
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? "/", "http://fake");
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of req) {
      size += (chunk as Buffer).length;
      if (size <= MAX_BODY_BYTES) chunks.push(chunk as Buffer);
    }
    const raw = Buffer.concat(chunks).toString("utf8");
    let body: unknown = raw === "" ? undefined : raw;
    try {
      body = raw === "" ? undefined : JSON.parse(raw);
    } catch {}
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(req.headers))
      if (v !== undefined) headers[k] = Array.isArray(v) ? v.join(", ") : v;
    const method = req.method ?? "GET";
    this.requests.push({
      method,
      path: url.pathname,
      query: Object.fromEntries(url.searchParams),
      headers,
      body,
    });

    const fault = this.takeFault();
    if (fault === "network") return void req.socket.destroy();
    if (fault === "slow") await this.sleep(this.opts.slowMs ?? 2000);
    if (res.destroyed || req.socket.destroyed) return;
    let answer: Answer;
    try {
      if (size > MAX_BODY_BYTES) reject(413, "Payload Too Large");
      answer =
        (fault && this.faultAnswer(fault)) ??
        this.takeCanned(method, url.pathname) ??
        this.route(method, url, headers, raw, body);
    } catch (err) {
      answer = err instanceof HttpAnswer ? err.answer : { status: 500, body: { err: "internal" } };
    }
    const text = typeof answer.body === "string" ? answer.body : JSON.stringify(answer.body);
    const type = typeof answer.body === "string" ? "text/plain; charset=utf-8" : "application/json";
    res.writeHead(answer.status, { "content-type": type, ...answer.headers }).end(text);
  }

  private takeFault(): FakeFault | undefined {
    if (this.fault === undefined || this.fault.left <= 0) return undefined;
    this.fault.left -= 1;
    return this.fault.kind;
  }

  private faultAnswer(fault: FakeFault): Answer | undefined {
    switch (fault) {
      case "server_error":
        return { status: 500, body: { err: "internal" } };
      case "overload":
        return {
          status: 500,
          body: { error: "query_failed", message: "Rate limit: 9 active queries (max 8)" },
        };
      case "rate_limited": {
        const reset = String(Math.ceil(this.now() / 1000) + 60);
        const headers = {
          "X-RateLimit-Limit": "100",
          "X-RateLimit-Remaining": "0",
          "X-RateLimit-Reset": reset,
        };
        return { status: 429, body: { error: "rate_limit_exceeded", retry_after: 60 }, headers };
      }
      case "bad_request":
        return { status: 400, body: { error: "invalid_input", details: ["query: invalid"] } };
      default:
        return undefined; // slow: answer normally, late
    }
  }

  private takeCanned(method: string, path: string): Answer | undefined {
    const hit = this.canned.find(
      (c) => c.left > 0 && (c.match.method ?? method) === method && (c.match.path ?? path) === path,
    );
    if (hit === undefined) return undefined;
    hit.left -= 1;
    return hit.answer;
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

  /** The tenant of the request's key (tenant mode), after the auth check. */
  private authenticate(headers: Record<string, string>): string | undefined {
    const bearer = /^Bearer\s+(.+)$/i.exec(headers.authorization ?? "")?.[1];
    const key = headers["x-api-key"] ?? bearer;
    const keys = this.opts.apiKeys ?? [];
    if (keys.length > 0) {
      if (key === undefined) reject(401, { error: "authentication_required", message: "API key required" });
      if (key === undefined || !keys.includes(key)) reject(403, { error: "invalid_api_key" });
    }
    return this.tenantCheck && key !== undefined ? tenantOf(key) : undefined;
  }

  /** The user a request acts for: the key's tenant (tenant mode) or the requested one (undefined: everyone). */
  private userFor(tenant: string | undefined, requested: unknown): string | undefined {
    const asked = typeof requested === "string" ? requested : undefined;
    if (tenant !== undefined && asked !== undefined && asked !== tenant) {
      reject(403, { error: "tenant_mismatch", message: "user_id does not match the API key's tenant" });
    }
    return tenant ?? asked;
  }

  private route(
    method: string,
    url: URL,
    headers: Record<string, string>,
    raw: string,
    body: unknown,
  ): Answer {
    const p = url.pathname;
    if (method === "GET" && p === "/health") {
      const embedding = { provider: "synthetic", dimensions: 256, mode: "simple" };
      return { status: 200, body: { ok: true, version: this.opts.version ?? "1.3.2", embedding } };
    }
    const userMatch = /^\/users\/([^/]+)\/memories$/.exec(p);
    const idMatch = /^\/memory\/([^/]+)$/.exec(p);
    const known =
      (method === "POST" && ["/memory/query", "/memory/add", "/memory/reinforce"].includes(p)) ||
      (method === "GET" && p === "/memory/all") ||
      (userMatch !== null && (method === "GET" || method === "DELETE")) ||
      (idMatch !== null && ["GET", "PATCH", "DELETE"].includes(method));
    if (!known) return { status: 404, body: "404: Not Found" };
    const tenant = this.authenticate(headers);
    if (method !== "GET" && method !== "DELETE" && raw !== "" && typeof body === "string") {
      reject(400, { error: "invalid_json" });
    }
    const b = isRecord(body) ? body : {};
    if (method === "POST" && p === "/memory/query") return this.query(tenant, b);
    if (method === "POST" && p === "/memory/add") return this.add(tenant, b);
    if (method === "POST" && p === "/memory/reinforce") {
      const m = this.visible(tenant, b.id);
      const boost = typeof b.boost === "number" ? b.boost : 0.1;
      m.salience = Math.min(1, m.salience + boost);
      return { status: 200, body: { ok: true } };
    }
    if (userMatch?.[1] !== undefined) {
      const uid = this.userFor(tenant, decodeURIComponent(userMatch[1]));
      const mine = [...this.store.values()].filter((m) => m.user_id === uid);
      if (method === "DELETE") {
        for (const m of mine) this.store.delete(m.id);
        return { status: 200, body: { ok: true, deleted: mine.length } };
      }
      return { status: 200, body: { user_id: uid, items: this.page(mine, url).map(item) } };
    }
    if (method === "GET" && p === "/memory/all") {
      const sector = url.searchParams.get("sector") || undefined;
      const all = [...this.store.values()].filter(
        (m) =>
          (tenant === undefined || m.user_id === tenant) &&
          (sector === undefined || m.primary_sector === sector),
      );
      return { status: 200, body: { items: this.page(all, url).map(item) } };
    }
    const m = this.visible(tenant, decodeURIComponent(idMatch?.[1] ?? ""));
    if (method === "GET") return { status: 200, body: { ...item(m), sectors: m.sectors } };
    if (method === "DELETE") {
      this.store.delete(m.id);
      return { status: 200, body: { ok: true } };
    }
    if (typeof b.content === "string") m.content = b.content;
    if (Array.isArray(b.tags)) m.tags = b.tags.filter((t): t is string => typeof t === "string");
    if (isRecord(b.metadata)) m.metadata = b.metadata;
    m.version += 1;
    m.updated_at = this.now();
    return { status: 200, body: { id: m.id, updated: true } };
  }

  private visible(tenant: string | undefined, id: unknown): FakeMemory {
    const m = typeof id === "string" ? this.store.get(id) : undefined;
    if (m === undefined || (tenant !== undefined && m.user_id !== tenant)) return reject(404, { err: "nf" });
    return m;
  }

  private page(items: FakeMemory[], url: URL): FakeMemory[] {
    const l = Number(url.searchParams.get("l") ?? 100);
    const u = Number(url.searchParams.get("u") ?? 0);
    items.sort((a, b) => b.created_at - a.created_at || (a.id < b.id ? -1 : 1));
    return items.slice(u, u + l);
  }

  private query(tenant: string | undefined, b: Record<string, unknown>): Answer {
    const details: string[] = [];
    const { query, k = 8, filters = {} } = b;
    if (typeof query !== "string") details.push("query: expected string");
    else if (query.length < 1) details.push("query: length < 1");
    else if (query.length > 8192) details.push("query: length > 8192");
    if (typeof k !== "number" || !Number.isInteger(k) || k < 1 || k > 200)
      details.push("k: expected integer 1–200");
    if (b.user_id !== undefined && typeof b.user_id !== "string") details.push("user_id: expected string");
    const f = isRecord(filters) ? filters : {};
    if (!isRecord(filters)) details.push("filters: expected object");
    if (f.sector !== undefined && !isSector(f.sector)) details.push("filters.sector: invalid enum value");
    const minScore = f.min_score;
    if (minScore !== undefined && !(typeof minScore === "number" && minScore >= 0 && minScore <= 1)) {
      details.push("filters.min_score: expected number 0–1");
    }
    if (details.length > 0 || typeof query !== "string" || typeof k !== "number") {
      return reject(400, { error: "invalid_input", details });
    }
    const user = this.userFor(tenant, b.user_id ?? f.user_id);
    const num = (v: unknown) => (typeof v === "number" ? v : undefined);
    const [start, end, min] = [num(f.startTime), num(f.endTime), num(minScore)];
    const q = words(query);
    const scored = [...this.store.values()]
      .filter((m) => user === undefined || m.user_id === user)
      .filter((m) => !isSector(f.sector) || m.sectors.includes(f.sector))
      .filter((m) => (min === undefined || m.salience >= min) && (start ?? -Infinity) <= m.created_at)
      .filter((m) => m.created_at <= (end ?? Infinity))
      .map((m) => ({ m, raw: this.relevance.get(m.id) ?? lexical(q, words(m.content)) }))
      .filter((s) => s.raw > 0)
      .sort((a, b) => b.raw - a.raw || (a.m.id < b.m.id ? -1 : 1))
      .slice(0, k);
    const mean = scored.reduce((s, x) => s + x.raw, 0) / (scored.length || 1);
    const sd = Math.sqrt(scored.reduce((s, x) => s + (x.raw - mean) ** 2, 0) / (scored.length || 1));
    const matches = scored.map(({ m, raw }) => ({
      id: m.id,
      content: m.content,
      score: sd > 1e-12 ? (raw - mean) / sd : 0,
      sectors: m.sectors,
      primary_sector: m.primary_sector,
      path: [m.id],
      salience: m.salience,
      last_seen_at: m.last_seen_at,
    }));
    if (this.opts.reinforceOnQuery) {
      for (const { m } of scored)
        Object.assign(m, { salience: Math.min(1, m.salience + 0.05), last_seen_at: this.now() });
    }
    return { status: 200, body: { query, matches } };
  }

  private add(tenant: string | undefined, b: Record<string, unknown>): Answer {
    const { content, tags = [], metadata = {} } = b;
    const details: string[] = [];
    if (typeof content !== "string" || content.length < 1 || content.length > 200_000) {
      details.push("content: expected string of 1–200000 characters");
    }
    if (!Array.isArray(tags) || tags.some((t) => typeof t !== "string"))
      details.push("tags: expected string[]");
    if (!isRecord(metadata)) details.push("metadata: expected object");
    if (b.user_id !== undefined && typeof b.user_id !== "string") details.push("user_id: expected string");
    if (details.length > 0 || typeof content !== "string")
      return reject(400, { error: "invalid_input", details });
    const user = this.userFor(tenant, b.user_id) ?? null;
    const norm = (s: string) => s.toLowerCase().replace(/\s+/g, " ").trim();
    const dup = [...this.store.values()].find((m) => m.user_id === user && norm(m.content) === norm(content));
    if (dup !== undefined) {
      const body = {
        id: dup.id,
        primary_sector: dup.primary_sector,
        sectors: dup.sectors,
        chunks: 1,
        deduplicated: true,
      };
      return { status: 200, body };
    }
    const meta = isRecord(metadata) ? metadata : {};
    const sector = isSector(meta.sector)
      ? meta.sector
      : (SECTOR_HINTS.find(([, re]) => re.test(content))?.[0] ?? "semantic");
    const tagList = Array.isArray(tags) ? tags.filter((t): t is string => typeof t === "string") : [];
    const m = this.insert({ user_id: user, content, tags: tagList, metadata: meta, primary_sector: sector });
    return {
      status: 200,
      body: { id: m.id, primary_sector: m.primary_sector, sectors: m.sectors, chunks: 1 },
    };
  }
}

/** Cosine similarity of two word sets. */
function lexical(q: Set<string>, c: Set<string>): number {
  let common = 0;
  for (const w of q) if (c.has(w)) common += 1;
  return q.size === 0 || c.size === 0 ? 0 : common / Math.sqrt(q.size * c.size);
}

/** A memory as `/memory/all` and `/users/{uid}/memories` list it. */
function item(m: FakeMemory) {
  const { sectors: _sectors, ...rest } = m;
  return structuredClone(rest);
}
