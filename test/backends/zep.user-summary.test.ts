/**
 * Zep's user summary (policy `zep.userSummary: true`): the user's node is fetched beside the searches and its
 * summary becomes a `summary` memory, which `budget.sections` shows first. Against the fake Zep server the door
 * tests use (test/helpers/fake-upstreams.ts); without the field nothing more is called.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { createZepBackend } from "../../src/backends/zep";
import { BACKEND_FACTORIES } from "../../src/server/services";
import { hashKey } from "../../src/tenants/keys";
import { FakeUpstreams } from "../helpers/fake-upstreams";
import { type Harness, makeHarness } from "../helpers/harness";
import { makePolicy } from "../helpers/items";

const MEMORIES = [
  { id: "e1", content: "Ana orders an oat milk flat white every morning.", at: "2026-03-01T09:00:00Z" },
  { id: "e2", content: "Ana works from the Lisbon office on Tuesdays.", at: "2026-03-02T09:00:00Z" },
];
const SUMMARY = "Ana is a designer in Lisbon who drinks oat milk coffee.";

describe("Zep user summary", () => {
  let upstream: FakeUpstreams;
  beforeEach(async () => {
    upstream = await FakeUpstreams.start();
    upstream.seed("ana", MEMORIES);
    upstream.seed("bea", MEMORIES);
    upstream.summarize("ana", SUMMARY);
  });
  afterEach(() => upstream.close());

  const search = async (userId: string, zep: Record<string, unknown>) => {
    const backend = createZepBackend({ apiKey: "k", baseUrl: upstream.zepBaseUrl });
    try {
      return await backend.search({
        userId,
        query: "coffee",
        limit: 10,
        searchType: "hybrid",
        policy: makePolicy({ zep: { scopes: ["edges"], ...zep } }),
        signal: AbortSignal.timeout(5000),
      });
    } finally {
      await backend.close?.();
    }
  };

  test("on: the user's node summary is one more candidate, type summary, score 1, first", async () => {
    const found = await search("ana", { userSummary: true });
    expect(upstream.userNodeCalls).toBe(1);
    expect(found.map((c) => c.id)).toEqual(["node-ana", "e1", "e2"]);
    expect(found[0]).toEqual({
      id: "node-ana",
      content: SUMMARY,
      score: 1,
      timestamp: "2026-02-01T08:00:00.000Z",
      sessionId: "user:ana",
      type: "summary",
      backend: "zep",
      sourceId: "node-ana",
    });
  });

  test("a node without a summary adds nothing; off (the default) does not call Zep for it", async () => {
    expect((await search("bea", { userSummary: true })).map((c) => c.id)).toEqual(["e1", "e2"]);
    expect(upstream.userNodeCalls).toBe(1);
    expect((await search("ana", {})).map((c) => c.id)).toEqual(["e1", "e2"]);
    expect(upstream.userNodeCalls).toBe(1);
  });

  test("a failing search fails as before, user node or not", async () => {
    upstream.fail(500);
    await expect(search("ana", { userSummary: true })).rejects.toMatchObject({ kind: "unavailable" });
  });

  test("/v1/retrieve with sections and citations: the summary section first, [m1], within its share", async () => {
    const KEY = "mg_test_summary_app_0123456789";
    const policy = `name: profile
version: 1
tokenizer: approx
retrieval: { minScore: 0, maxTokens: 100 }
budget: { sections: { summary: 0.2, fact: 0.5, message: 0.3 } }
format: { citations: "on" }
zep: { scopes: [edges], userSummary: true }
`;
    const h: Harness = await makeHarness({
      policies: { profile: policy },
      factories: BACKEND_FACTORIES,
      tenants: `tenants:
  - id: t
    keys:
      - { name: app, sha256: ${hashKey(KEY)}, scopes: [retrieve, admin] }
    policies: { allowed: ["*"], default: profile }
    defaultBackend: zep
    backends:
      zep: { apiKeyEnv: T_ZEP_KEY, baseUrl: "${upstream.zepBaseUrl}" }
`,
      env: { T_ZEP_KEY: "zep-tenant-key", MEMGATE_RETRY_MAX: "0" },
    });
    const server: Server = await new Promise((resolve) => {
      const s = createServer(h.app).listen(0, "127.0.0.1", () => resolve(s));
    });
    try {
      const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      const ask = async () => {
        const res = await fetch(`${origin}/v1/retrieve`, {
          method: "POST",
          headers: { "content-type": "application/json", "x-api-key": KEY },
          body: JSON.stringify({
            userId: "ana",
            sessionId: "s-1",
            query: "coffee",
            useMemory: true,
            explain: true,
          }),
        });
        expect(res.status).toBe(200);
        return (await res.json()) as {
          memories: Array<{ id: string; ref?: string; type: string }>;
          citations: Record<string, { id: string; backend: string }>;
          systemPrompt: string;
          trace: Array<{ stage: string; detail?: Record<string, unknown> }>;
        };
      };
      const body = await ask();
      expect(Object.keys(body)).toEqual(["memories", "citations", "metadata", "systemPrompt", "trace"]);
      expect(body.memories.map((m) => [m.ref, m.id, m.type])).toEqual([
        ["m1", "node-ana", "summary"],
        // Interleaving `alternate`: best score, then newest.
        ["m2", "e2", "fact"],
        ["m3", "e1", "fact"],
      ]);
      expect(body.citations.m1).toMatchObject({ id: "node-ana", backend: "zep" });
      expect(body.systemPrompt.split("\n").slice(2, 4)).toEqual([
        "### Conversation Summaries",
        `- [m1] ${SUMMARY}`,
      ]);
      const budget = body.trace.find((t) => t.stage === "token_budget")?.detail ?? {};
      expect(budget).toMatchObject({ summaryShare: 20, summaryAvailable: 20, factShare: 50 });
      expect(Number(budget.summaryUsed)).toBeLessThanOrEqual(20);
    } finally {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await h.close();
    }
  });
});
