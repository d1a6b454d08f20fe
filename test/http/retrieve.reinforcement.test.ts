/**
 * Reinforcement through POST /v1/retrieve (dev mode, the real local store, the in-process counts): memories kept
 * again and again rise in rank when `ranking.reinforcement` is enabled; with it off nothing changes and nothing is
 * counted; a cache hit does not count; explain and metadata say whether the counts were available.
 */
import request from "supertest";
import { type Harness, makeHarness } from "../helpers/harness";

const records = [
  ["m-morning", "2024-03-02T08:00:00Z", "Maya: I drink green tea in the morning before work."],
  ["m-night", "2024-03-03T22:00:00Z", "Maya: I drink green tea at night when I read, with honey."],
  ["m-other", "2024-03-04T12:00:00Z", "Maya: The bakery on the corner sells great bread."],
].map(([id, timestamp, content]) => ({
  id,
  userId: "maya",
  type: "message",
  sessionId: "s-1",
  timestamp,
  content,
}));

const policy = (name: string, reinforcement: string) => `name: ${name}
version: 1
retrieval: { topK: 1, overfetch: 3, clipSentences: 2, maxTokens: 300, minScore: 0 }
ranking: { enabled: true${reinforcement} }
`;

const ON = ", reinforcement: { enabled: true, weight: 0.6, saturation: 3 }";

async function retrieve(h: Harness, body: Record<string, unknown>) {
  const res = await request(h.app)
    .post("/v1/retrieve")
    .send({ userId: "maya", sessionId: "s-1", useMemory: true, ...body });
  expect(res.status).toBe(200);
  return res.body;
}

const ids = (body: { memories: Array<{ id: string }> }) => body.memories.map((m) => m.id);
const QUESTION = "When do I drink green tea?";

describe("POST /v1/retrieve with ranking.reinforcement", () => {
  let h: Harness;
  beforeEach(async () => {
    h = await makeHarness({
      tenants: null,
      localRecords: records,
      policies: { reinforced: policy("reinforced", ON), plain: policy("plain", "") },
    });
  });
  afterEach(() => h.close());

  /** Questions that keep only the night memory, each a new query (a cache miss). */
  async function keepNight(policyName: string, times: number) {
    for (let i = 0; i < times; i++) {
      const body = await retrieve(h, { query: `tea at night with honey ${i}`, policy: policyName });
      expect(ids(body)).toEqual(["m-night"]);
    }
  }

  test("a memory kept again and again rises above one the question alone prefers", async () => {
    const before = await retrieve(h, { query: QUESTION, policy: "reinforced", explain: true });
    expect(ids(before)).toEqual(["m-morning"]);
    expect(before.metadata.reinforcement).toEqual({ available: true });
    await keepNight("reinforced", 4);
    const after = await retrieve(h, { query: QUESTION, policy: "reinforced", explain: true });
    expect(ids(after)).toEqual(["m-night"]);
    const rank = after.trace.find((t: { stage: string }) => t.stage === "rank");
    expect(rank.detail.reinforcement).toBe("available");
    const signals = Object.fromEntries(
      rank.ranking.map((r: { id: string; signals: Record<string, number> }) => [r.id, r.signals]),
    );
    // Kept 4 times (saturation 3): 1; the morning memory was kept once (the first question): ln 2 / ln 4.
    expect(signals["m-night"].reinforcement).toBe(1);
    expect(signals["m-morning"].reinforcement).toBe(0.5);
    expect(Object.keys(signals)).not.toContain("m-other"); // the search never found it
  });

  test("a cache hit does not count", async () => {
    await retrieve(h, { query: QUESTION, policy: "reinforced" });
    for (let i = 0; i < 4; i++) {
      const hit = await retrieve(h, { query: "tea at night with honey", policy: "reinforced" });
      expect(hit.metadata.cache).toBe(i === 0 ? "miss" : "hit");
    }
    const after = await retrieve(h, { query: QUESTION, policy: "reinforced", explain: true });
    const rank = after.trace.find((t: { stage: string }) => t.stage === "rank");
    const night = rank.ranking.find((r: { id: string }) => r.id === "m-night");
    // One production kept it once: ln 2 / ln 4.
    expect(night.signals.reinforcement).toBe(0.5);
  });

  test("disabled: the same questions change nothing, count nothing, and metadata has no reinforcement", async () => {
    const before = await retrieve(h, { query: QUESTION, policy: "plain", explain: true });
    expect(ids(before)).toEqual(["m-morning"]);
    expect(before.metadata.reinforcement).toBeUndefined();
    const rank = before.trace.find((t: { stage: string }) => t.stage === "rank");
    expect(rank.detail.reinforcement).toBeUndefined();
    expect(rank.ranking[0].signals.reinforcement).toBeUndefined();
    await keepNight("plain", 4);
    const after = await retrieve(h, { query: QUESTION, policy: "plain", explain: true });
    expect(after.memories).toEqual(before.memories);
    // Nothing was counted while it was off: the enabled policy starts from zero.
    const fresh = await retrieve(h, { query: QUESTION, policy: "reinforced", explain: true });
    expect(ids(fresh)).toEqual(["m-morning"]);
    const counted = fresh.trace.find((t: { stage: string }) => t.stage === "rank");
    for (const r of counted.ranking) expect(r.signals.reinforcement).toBe(0);
  });
});
