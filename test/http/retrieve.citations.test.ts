/**
 * Citations through the doors (policy `format.citations: on`): /v1/retrieve answers `citations` right after
 * `memories`, on a miss, on a cache hit (answered from the stored text) and on a fallback (`{}`); the drop-in doors
 * answer their SDK's own shape, unchanged — no refs in their texts, and no ref tokens taken from their budget.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { BACKEND_FACTORIES } from "../../src/server/services";
import { hashKey } from "../../src/tenants/keys";
import { OPENMEMORY, ZEP } from "../doors/doors";
import { FakeUpstreams } from "../helpers/fake-upstreams";
import { type Harness, makeHarness } from "../helpers/harness";

const CITED_KEY = "mg_test_cited_app_0123456789";
const PLAIN_KEY = "mg_test_plain_app_0123456789";
const SHAPE = "tokenizer: approx\nretrieval: { minScore: 0, topK: 5, maxTokens: 100 }\n";
const CITED = `name: cited\nversion: 1\n${SHAPE}format: { citations: "on" }\n`;
const PLAIN = `name: plain\nversion: 1\n${SHAPE}`;

/** One sentence of 132 characters: 33 approx tokens. Three fit the 100-token budget, but not with refs too. */
const sentence = (start: string) => `${start.padEnd(131, " x")}.`;
const MEMORIES = [
  { id: "m1", content: sentence("Ana orders an oat milk flat white"), at: "2026-03-01T09:00:00Z" },
  { id: "m2", content: sentence("Ana works from the Lisbon office"), at: "2026-03-02T09:00:00Z" },
  { id: "m3", content: sentence("Ana's favourite cafe is on Rua Augusta"), at: "2026-03-03T09:00:00Z" },
];

function tenants(upstream: FakeUpstreams): string {
  const backends = `    defaultBackend: zep
    backends:
      zep: { apiKeyEnv: T_ZEP_KEY, baseUrl: "${upstream.zepBaseUrl}" }
      openmemory: { url: "${upstream.origin}", apiKeyEnv: T_OM_KEY, userScoping: user_id }`;
  const tenant = (id: string, key: string, policy: string) => `  - id: ${id}
    keys:
      - { name: app, sha256: ${hashKey(key)}, scopes: [retrieve] }
    policies: { allowed: ["*"], default: ${policy} }
${backends}`;
  return `tenants:\n${tenant("cited", CITED_KEY, "cited")}\n${tenant("plain", PLAIN_KEY, "plain")}\n`;
}

describe("citations through the doors", () => {
  let upstream: FakeUpstreams;
  let h: Harness;
  let server: Server;
  let origin: string;

  beforeEach(async () => {
    upstream = await FakeUpstreams.start();
    for (const user of ["ana", "bea"]) upstream.seed(user, MEMORIES);
    h = await makeHarness({
      policies: { cited: CITED, plain: PLAIN },
      factories: BACKEND_FACTORIES,
      tenants: tenants(upstream),
      env: { T_ZEP_KEY: "zep-tenant-key", T_OM_KEY: "om-tenant-key", MEMGATE_RETRY_MAX: "0" },
    });
    server = await new Promise<Server>((resolve) => {
      const s = createServer(h.app).listen(0, "127.0.0.1", () => resolve(s));
    });
    origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterEach(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await h.close();
    await upstream.close();
  });

  const retrieve = async (key: string, patch: Record<string, unknown> = {}) => {
    const res = await fetch(`${origin}/v1/retrieve`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-api-key": key },
      body: JSON.stringify({ userId: "ana", sessionId: "s-1", query: "coffee", useMemory: true, ...patch }),
    });
    expect(res.status).toBe(200);
    return res.text();
  };

  test("/v1/retrieve: citations after memories on a miss, the same bytes on a hit but for metadata", async () => {
    const miss = JSON.parse(await retrieve(CITED_KEY));
    expect(Object.keys(miss)).toEqual(["memories", "citations", "metadata", "systemPrompt"]);
    expect(miss.metadata.cache).toBe("miss");
    const refs = miss.memories.map((m: { ref: string }) => m.ref);
    expect([...refs].sort()).toEqual(["m1", "m2", "m3"]);
    expect(Object.keys(miss.citations)).toEqual(["m1", "m2", "m3"]);
    // 3 × 33 content tokens and 3 × 2 ref tokens do not fit 100: the last memory is cut.
    expect(miss.metadata.totalTokens).toBeLessThanOrEqual(100);
    expect(miss.memories.at(-1).content.endsWith("...")).toBe(true);
    expect(miss.citations.m1).toEqual({
      id: miss.memories.find((m: { ref: string }) => m.ref === "m1").id,
      backend: "zep",
      sessionId: "user:ana",
      timestamp: expect.any(String),
    });
    expect(miss.systemPrompt).toContain("- [m1] ");
    const hit = JSON.parse(await retrieve(CITED_KEY));
    expect(hit.metadata.cache).toBe("hit");
    expect({ ...hit, metadata: null }).toEqual({ ...miss, metadata: null });
    expect(Object.keys(hit)).toEqual(Object.keys(miss));
  });

  test("/v1/retrieve: a fallback answers an empty citations map; a policy without citations answers none", async () => {
    const skipped = JSON.parse(await retrieve(CITED_KEY, { useMemory: false }));
    expect(skipped.metadata.fallback.code).toBe("MEMORY_DISABLED");
    expect(skipped.citations).toEqual({});
    const plain = JSON.parse(await retrieve(PLAIN_KEY));
    expect(Object.keys(plain)).toEqual(["memories", "metadata", "systemPrompt"]);
    expect(plain.memories.some((m: object) => "ref" in m)).toBe(false);
  });

  test.each([ZEP, OPENMEMORY])(
    "$name: the same answer with citations on as without (no refs)",
    async (door) => {
      const cited = await door.ask(origin, CITED_KEY, "ana", "coffee");
      const plain = await door.ask(origin, PLAIN_KEY, "bea", "coffee");
      expect(cited.texts.length).toBeGreaterThan(0);
      // Whole: the door pays no ref tokens (a /v1 answer with refs cuts the third memory).
      expect([...cited.texts].sort()).toEqual(MEMORIES.map((m) => m.content).sort());
      expect(cited.texts).toEqual(plain.texts);
      for (const text of cited.texts) expect(text).not.toMatch(/\[m\d+\]/);
    },
  );
});
