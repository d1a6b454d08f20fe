/**
 * Seed 003's extras on `POST /memory/query` (tags AND with fallback, as_of, version strategies), asked for
 * through `openmemory-js` against the gateway, upstream OpenMemory faked; plus the pure selection rules.
 */
import OpenMemory from "openmemory-js";
import {
  applyExtras,
  createdMsOf,
  docIdOf,
  type ExtraFacts,
  pickVersions,
  type WithFacts,
} from "../../src/backends/openmemory/extras";
import { FakeOpenMemoryServer } from "../backends/fakes/openmemory-server";
import { type Gateway, KEYS, startGateway } from "./gateway";

const OM_KEY = "om-tenant-key";
const at = (iso: string) => Date.parse(iso);
const DOCS = [
  { id: "v1", content: "Memgate guide v1: install memgate.", created_at: at("2026-01-01T00:00:00Z") },
  {
    id: "v2",
    content: "Memgate guide v2: install memgate, then write a policy file and validate it.",
    created_at: at("2026-02-01T00:00:00Z"),
  },
  { id: "v3", content: "Memgate guide v3: install memgate now.", created_at: at("2026-03-01T00:00:00Z") },
];

describe("seed 003 extras through openmemory-js (upstream OpenMemory)", () => {
  let om: FakeOpenMemoryServer;
  let gw: Gateway;
  const client = () => new OpenMemory({ baseUrl: gw.origin, apiKey: KEYS.app });
  /** The SDK sends every option it is given; extras outside its typed options go in a plain object. */
  const ask = (options: Record<string, unknown>) =>
    client().query("memgate guide install", {
      k: 10,
      ...options,
      filters: { user_id: "ana", ...(options.filters ?? {}) },
    });
  const ids = async (options: Record<string, unknown>) =>
    (await ask(options)).matches.map((m) => m.id).sort();

  beforeEach(async () => {
    om = await FakeOpenMemoryServer.start({ apiKeys: [OM_KEY] });
    for (const d of DOCS) {
      om.insert({
        ...d,
        user_id: "ana",
        tags: ["file_ingest", "docs"],
        metadata: { doc_id: "guide" },
        updated_at: d.created_at,
        last_seen_at: d.created_at,
      });
    }
    const noteAt = at("2025-12-01T00:00:00Z");
    om.insert({
      id: "note",
      user_id: "ana",
      content: "Chat: the memgate guide says install first.",
      tags: ["chat"],
      created_at: noteAt,
      last_seen_at: noteAt,
    });
    gw = await startGateway({
      env: { T_OM_KEY: OM_KEY },
      backends: `      openmemory: { url: "${om.baseUrl}", apiKeyEnv: T_OM_KEY, userScoping: user_id }`,
    });
  });

  afterEach(async () => {
    await gw.close();
    await om.close();
  });

  test("without extras the query is OpenMemory's own (no lookups)", async () => {
    expect(await ids({})).toEqual(["note", "v1", "v2", "v3"]);
    expect(om.requests.filter((r) => r.method === "GET")).toHaveLength(0);
  });

  test("tags are ANDed; the extras never reach the upstream; lookups are bounded by the matches", async () => {
    expect(await ids({ filters: { tags: ["file_ingest", "docs"] } })).toEqual(["v1", "v2", "v3"]);
    expect(await ids({ filters: { tags: ["chat"] } })).toEqual(["note"]);
    const query = om.requests.find((r) => r.path === "/memory/query");
    expect(query?.body).toEqual({ query: "memgate guide install", k: 20, filters: { user_id: "ana" } });
    const lookups = om.requests.filter((r) => r.method === "GET" && r.path.startsWith("/memory/"));
    expect(lookups).toHaveLength(8); // 4 matches × 2 queries
    for (const r of lookups) expect(r.headers["x-api-key"]).toBe(OM_KEY);
  });

  test("no memory has every tag: the unfiltered set, and the answer says so", async () => {
    const res = await fetch(`${gw.origin}/memory/query`, {
      method: "POST",
      headers: { authorization: `Bearer ${KEYS.app}`, "content-type": "application/json" },
      body: JSON.stringify({
        query: "memgate guide install",
        filters: { user_id: "ana", tags: ["docs", "chat"] },
      }),
    });
    expect(res.headers.get("x-memgate-tag-fallback")).toBe("true");
    const body = (await res.json()) as { matches: Array<{ id: string }> };
    expect(body.matches.map((m) => m.id).sort()).toEqual(["note", "v1", "v2", "v3"]);
  });

  test("version strategies keep one version per document", async () => {
    const docs = { filters: { tags: ["docs"] } };
    expect(await ids({ ...docs, version_strategy: "latest" })).toEqual(["v3"]);
    expect(await ids({ ...docs, version_strategy: "earliest" })).toEqual(["v1"]);
    expect(await ids({ ...docs, version_strategy: "longest" })).toEqual(["v2"]);
    expect(await ids({ version_strategy: "latest" })).toEqual(["note", "v3"]);
  });

  test("as_of: latest as of an instant, also given inside filters or as epoch ms", async () => {
    expect(await ids({ version_strategy: "latest", as_of: "2026-02-15T00:00:00Z" })).toEqual(["note", "v2"]);
    expect(await ids({ as_of: "2025-12-15T00:00:00+01:00" })).toEqual(["note"]);
    expect(await ids({ filters: { as_of: at("2026-01-15T00:00:00Z"), version_strategy: "latest" } })).toEqual(
      ["note", "v1"],
    );
  });

  test("a malformed extra is a 400 in OpenMemory's error shape", async () => {
    await expect(ask({ version_strategy: "newest" })).rejects.toThrow("OpenMemory API error: 400");
    const res = await fetch(`${gw.origin}/memory/query`, {
      method: "POST",
      headers: { authorization: `Bearer ${KEYS.app}`, "content-type": "application/json" },
      body: JSON.stringify({ query: "x", as_of: "2026-02-15" }),
    });
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({
      error: "invalid_input",
      details: [expect.stringMatching(/^as_of:/)],
    });
  });
});

describe("extras selection rules", () => {
  const item = (id: string, content: string, score: number, facts: Partial<ExtraFacts>): WithFacts => ({
    candidate: { id, content, score, timestamp: "2026-01-01T00:00:00Z", sessionId: "s", type: "fact" },
    facts: { tags: [], createdMs: undefined, docId: "d", ...facts },
  });

  test("document identity: doc_id (string or number), else filename, else none", () => {
    expect(docIdOf({ doc_id: "a", filename: "f.md" })).toBe("a");
    expect(docIdOf({ doc_id: 7 })).toBe("7");
    expect(docIdOf({ filename: "f.md" })).toBe("f.md");
    expect(docIdOf({})).toBeUndefined();
    expect(createdMsOf({ ingested_at: "2026-01-02T00:00:00Z" }, 5)).toBe(at("2026-01-02T00:00:00Z"));
    expect(createdMsOf({ ingested_at: "garbage" }, 5)).toBe(5);
  });

  test("ties and unknown times resolve deterministically; memories without a document are never collapsed", () => {
    const a = item("a", "same", 0.5, { createdMs: 10 });
    const b = item("b", "same", 0.5, { createdMs: 10 });
    const unknown = item("c", "longer text here", 0.9, {});
    const solo = item("s", "x", 0.1, { docId: undefined });
    expect(pickVersions([b, a, unknown, solo], "latest").map((i) => i.candidate.id)).toEqual(["a", "s"]);
    expect(pickVersions([b, a, unknown, solo], "earliest").map((i) => i.candidate.id)).toEqual(["a", "s"]);
    expect(pickVersions([b, a, unknown, solo], "longest").map((i) => i.candidate.id)).toEqual(["c", "s"]);
    expect(pickVersions([b, a, unknown, solo], "score").map((i) => i.candidate.id)).toEqual(["c", "s"]);
  });

  test("as_of with nothing left falls back to the set before it, and says so", () => {
    const late = item("x", "t", 0.5, { createdMs: 100 });
    expect(applyExtras([late], { asOfMs: 50 })).toMatchObject({ items: [late], asOfFallback: true });
    expect(applyExtras([], { tags: ["a"] })).toMatchObject({ items: [], tagFallback: false });
  });
});
