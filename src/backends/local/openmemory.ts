/**
 * The OpenMemory wire view of the embedded local store, so the demo works with the `openmemory-js` client and no
 * other server. Used by the OpenMemory door (src/compat/openmemory) when a tenant has no `openmemory` backend but
 * has `local`.
 *
 * Mapping between OpenMemory's wire format and the local store:
 * - `add`: `user_id` (default `"default"`) → userId; `tags` → tags; the sector is `metadata.sector` when it is
 *   one of OpenMemory's five, else `semantic`; the memory type follows the OpenMemory adapter's table
 *   (episodic → message, reflective → summary, others → fact); sessionId = `metadata.session_id`, else
 *   `"openmemory"`. The local store has no metadata field, so `metadata` is kept beside it by this surface for
 *   the process lifetime (as are memories added at run time: the JSONL file is never written).
 * - items: `created_at` = `updated_at` = `last_seen_at` = the record's timestamp (epoch ms); `salience` 0.5 and
 *   `decay_lambda` 0 (the local store has neither); `version` 1.
 * - query (the door's native search, through the retrieval core like every search): the user's BM25 search
 *   (score normalized by the local backend), then seed 003's extras, as for an upstream OpenMemory
 *   (../openmemory/native.ts).
 */

import type { MemoryType } from "../../pipeline/types";
import type { Policy } from "../../policy/schema";
import { createdMsOf, docIdOf } from "../openmemory/extras";
import { sectorToType } from "../openmemory/map";
import { answerOf, fetchSize, type NativeMatch, OPENMEMORY_MAX_K } from "../openmemory/native";
import type { NativeAnswer, NativeSearch } from "../types";
import { toCandidate } from "./candidate";
import { LocalDataError } from "./load";
import type { MemoryRecord } from "./schema";
import type { MemoryStore } from "./store";

/** The user a query without `user_id` acts for on the local store (OpenMemory's own default). */
export const DEFAULT_USER = "default";

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

  constructor(private readonly store: MemoryStore) {}

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

  /** `POST /memory/query` as a native search: the user's BM25 hits → the extras (see the top of this file). */
  query(
    native: NativeSearch,
    opts: { limit: number; searchType: Policy["retrieval"]["searchType"] },
  ): NativeAnswer {
    if (native.kind !== "openmemory.query") throw new Error(`the local store cannot answer ${native.kind}`);
    const k = Math.min(fetchSize(opts.limit, native.extras), OPENMEMORY_MAX_K);
    const query = typeof native.body.query === "string" ? native.body.query : "";
    const hits = this.store.searchUser(native.userId ?? DEFAULT_USER, query, opts.searchType, k);
    const matches: NativeMatch[] = hits.map(({ record, score, raw: bm25 }) => {
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
      return { candidate: toCandidate(record, score, bm25), facts, raw };
    });
    return answerOf(matches, native.extras, { query });
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

const surfaces = new WeakMap<MemoryStore, LocalOpenMemory>();

/** The one OpenMemory surface of a local store (its metadata lives as long as the store). */
export function localSurface(store: MemoryStore): LocalOpenMemory {
  let surface = surfaces.get(store);
  if (surface === undefined) {
    surface = new LocalOpenMemory(store);
    surfaces.set(store, surface);
  }
  return surface;
}
