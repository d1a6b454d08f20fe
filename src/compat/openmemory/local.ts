/**
 * The OpenMemory surface served from the embedded local backend (src/backends/local), so the demo works with
 * the `openmemory-js` client and no other server. Used when a tenant has no `openmemory` backend but has
 * `local` (./routes.ts).
 *
 * Mapping between OpenMemory's wire format and the local store:
 * - `add`: `user_id` (default `"default"`) → userId; `tags` → tags; the sector is `metadata.sector` when it is
 *   one of OpenMemory's five, else `semantic`; the memory type follows the OpenMemory adapter's table
 *   (episodic → message, reflective → summary, others → fact); sessionId = `metadata.session_id`, else
 *   `"openmemory"`. The local store has no metadata field, so `metadata` is kept beside it by this surface for
 *   the process lifetime (as are memories added at run time: the JSONL file is never written).
 * - items: `created_at` = `updated_at` = `last_seen_at` = the record's timestamp (epoch ms); `salience` 0.5 and
 *   `decay_lambda` 0 (the local store has neither); `version` 1.
 * - query: the user's BM25 search (score normalized by the local backend), then seed 003's extras and the
 *   policy, as for an upstream OpenMemory (./shape.ts).
 */
import { type LocalBackend, LocalDataError, type MemoryRecord, toCandidate } from "../../backends/local";
import { sectorToType } from "../../backends/openmemory/map";
import type { MemoryType } from "../../pipeline/types";
import type { CompiledPolicy } from "../../policy/compile";
import { createdMsOf, docIdOf } from "./extras";
import { OPENMEMORY_MAX_K, type OpenMemoryQuery } from "./request";
import { DEFAULT_USER, type Match, type ShapedQuery, shapeQuery } from "./shape";

export const SECTORS = ["episodic", "semantic", "procedural", "emotional", "reflective"] as const;
const TYPE_SECTOR: Record<MemoryType, string> = {
  message: "episodic",
  fact: "semantic",
  summary: "reflective",
};
const PAGE = 1000;

export type Answer = { status: number; body: unknown };
const notFound: Answer = { status: 404, body: { err: "nf" } };

export interface AddBody {
  content: string;
  tags?: string[];
  metadata?: Record<string, unknown>;
  user_id?: string;
}

export class LocalOpenMemory {
  private readonly metadata = new Map<string, Record<string, unknown>>();

  constructor(private readonly store: LocalBackend) {}

  add(body: AddBody): Answer {
    const meta = body.metadata ?? {};
    const sector = sectorOf(meta, "fact");
    const session =
      typeof meta.session_id === "string" && meta.session_id.trim() !== "" ? meta.session_id : "";
    let record: MemoryRecord;
    try {
      record = this.store.add({
        userId: body.user_id ?? DEFAULT_USER,
        content: body.content,
        type: sectorToType(sector),
        sessionId: session || "openmemory",
        ...(body.tags === undefined ? {} : { tags: body.tags }),
      });
    } catch (err) {
      if (err instanceof LocalDataError)
        return { status: 400, body: { error: "invalid_input", details: [err.message] } };
      throw err;
    }
    if (Object.keys(meta).length > 0) this.metadata.set(record.id, { ...meta });
    return { status: 200, body: { id: record.id, primary_sector: sector, sectors: [sector], chunks: 1 } };
  }

  get(id: string): Answer {
    const record = this.store.get(id);
    if (record === undefined) return notFound;
    const item = this.item(record);
    return { status: 200, body: { ...item, sectors: [item.primary_sector] } };
  }

  delete(id: string): Answer {
    if (!this.store.delete(id)) return notFound;
    this.metadata.delete(id);
    return { status: 200, body: { ok: true } };
  }

  all(limit: number, offset: number, sector: string | undefined): Answer {
    const items = this.records(undefined)
      .map((r) => this.item(r))
      .filter((i) => sector === undefined || i.primary_sector === sector);
    return { status: 200, body: { items: items.slice(offset, offset + limit) } };
  }

  userMemories(userId: string, limit: number, offset: number): Answer {
    const items = this.store.list(userId, { limit, offset }).items.map((r) => this.item(r));
    return { status: 200, body: { user_id: userId, items } };
  }

  deleteUser(userId: string): Answer {
    const mine = this.records(userId);
    for (const r of mine) this.delete(r.id);
    return { status: 200, body: { ok: true, deleted: mine.length } };
  }

  health(): Answer {
    return {
      status: 200,
      body: { ok: true, version: "memgate-local", embedding: { provider: "none", mode: "bm25" } },
    };
  }

  query(q: OpenMemoryQuery, compiled: CompiledPolicy): ShapedQuery {
    const { searchType, overfetch } = compiled.policy.retrieval;
    const k = Math.min(q.k * overfetch, OPENMEMORY_MAX_K);
    const hits = this.store.searchUser(q.userId ?? DEFAULT_USER, q.query, searchType, k);
    const matches: Match[] = hits.map(({ record, score }) => {
      const meta = this.metadata.get(record.id);
      const item = this.item(record);
      const raw = {
        id: record.id,
        content: record.content,
        score,
        sectors: [item.primary_sector],
        primary_sector: item.primary_sector,
        path: [record.id],
        salience: item.salience,
        last_seen_at: item.last_seen_at,
      };
      const facts = {
        tags: record.tags ?? [],
        createdMs: createdMsOf(meta, item.created_at),
        docId: docIdOf(meta),
      };
      return { candidate: toCandidate(record, score), facts, raw };
    });
    return shapeQuery(matches, q, compiled, { backend: "local", topK: Math.min(q.k, OPENMEMORY_MAX_K) });
  }

  private records(userId: string | undefined): MemoryRecord[] {
    const out: MemoryRecord[] = [];
    for (let offset = 0; ; offset += PAGE) {
      const page = this.store.list(userId, { limit: PAGE, offset });
      out.push(...page.items);
      if (page.items.length < PAGE || out.length >= page.total) return out;
    }
  }

  private item(record: MemoryRecord) {
    const meta = this.metadata.get(record.id) ?? {};
    const at = Date.parse(record.timestamp);
    return {
      id: record.id,
      content: record.content,
      tags: [...(record.tags ?? [])],
      metadata: meta,
      created_at: at,
      updated_at: at,
      last_seen_at: at,
      salience: 0.5,
      decay_lambda: 0,
      primary_sector: sectorOf(meta, record.type),
      version: 1,
      user_id: record.userId,
    };
  }
}

function sectorOf(meta: Record<string, unknown>, type: MemoryType): string {
  const asked = SECTORS.find((s) => s === meta.sector);
  return asked ?? TYPE_SECTOR[type];
}

const surfaces = new WeakMap<LocalBackend, LocalOpenMemory>();

/** The one OpenMemory surface of a local store (its metadata lives as long as the store). */
export function localSurface(store: LocalBackend): LocalOpenMemory {
  let surface = surfaces.get(store);
  if (surface === undefined) {
    surface = new LocalOpenMemory(store);
    surfaces.set(store, surface);
  }
  return surface;
}
