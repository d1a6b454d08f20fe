/**
 * The ranking sections through POST /v1/retrieve (dev mode, the real local store): the reply turn comes along,
 * metadata.sufficiency is there, the expansion round searches again only when it can help, and `turnTime` decides
 * a relative time scope — and the cache entry — never the gateway's clock.
 */
import request from "supertest";
import { type Harness, makeHarness } from "../helpers/harness";

const turns = [
  ["t1", "2024-03-02T18:00:00Z", "Tom: How was the shelter visit? Did you ever name the puppy?"],
  [
    "t2",
    "2024-03-02T18:01:00Z",
    "Maya: Pickle! He chewed through my left sneaker already, the little gremlin.",
  ],
  [
    "t3",
    "2024-03-09T18:00:00Z",
    "Tom: I cooked a huge paella for the neighbours. Everyone wanted the recipe.",
  ],
  ["t4", "2024-06-15T18:00:00Z", "Tom: I cooked ramen from scratch this weekend. The broth took nine hours."],
  ["t5", "2024-06-15T18:01:00Z", "Maya: Nine hours! I would have eaten the noodles raw by then."],
];
const records = turns.map(([id, timestamp, content]) => ({
  id,
  userId: "maya",
  type: "message",
  sessionId: `s-${(timestamp ?? "").slice(0, 10)}`,
  timestamp,
  content,
}));

const policy = (name: string, extra = "") => `name: ${name}
version: 1
retrieval: { topK: 2, overfetch: 1, clipSentences: 2, maxTokens: 300, minScore: 0, replies: true }
clip: { mode: relevant, answerAware: true, speakerLabel: true }
ranking: { enabled: true }
sufficiency: { enabled: true${extra} }
`;

async function retrieve(h: Harness, body: Record<string, unknown>) {
  const res = await request(h.app)
    .post("/v1/retrieve")
    .send({ userId: "maya", sessionId: "s-1", useMemory: true, ...body });
  expect(res.status).toBe(200);
  return res.body;
}

describe("POST /v1/retrieve with ranking, replies and sufficiency", () => {
  let h: Harness;
  beforeEach(async () => {
    h = await makeHarness({
      tenants: null,
      localRecords: records,
      policies: {
        ranked: policy("ranked"),
        expanding: policy("expanding", ", expand: true, threshold: 0.99"),
      },
    });
  });
  afterEach(() => h.close());

  test("the reply to a question turn comes along, right after it", async () => {
    const body = await retrieve(h, { query: "What did Maya name the puppy?", policy: "ranked" });
    const ids = body.memories.map((m: { id: string }) => m.id);
    expect(ids).toContain("t2");
    expect(ids.indexOf("t2")).toBe(ids.indexOf("t1") + 1);
    expect(body.metadata.sufficiency).toMatchObject({ expanded: false });
    expect(["sufficient", "partial", "insufficient"]).toContain(body.metadata.sufficiency.verdict);
  });

  test("turnTime resolves 'last weekend'; another turn time is another cache entry, the same one a hit", async () => {
    const june = await retrieve(h, {
      query: "What did Tom cook last weekend?",
      policy: "ranked",
      turnTime: "2024-06-19T12:00:00Z",
    });
    expect(june.memories[0].id).toBe("t4");
    const march = await retrieve(h, {
      query: "What did Tom cook last weekend?",
      policy: "ranked",
      turnTime: "2024-03-12T12:00:00Z",
    });
    expect(march.metadata.cache).toBe("miss");
    expect(march.memories[0].id).toBe("t3");
    const again = await retrieve(h, {
      query: "What did Tom cook last weekend?",
      policy: "ranked",
      turnTime: "2024-06-20T09:00:00Z",
    });
    // Same resolved scope (the weekend of 15–16 June): the same entry.
    expect(again.metadata.cache).toBe("hit");
    expect(again.memories[0].id).toBe("t4");
  });

  test("a bad turnTime is a 400 naming the field", async () => {
    const res = await request(h.app)
      .post("/v1/retrieve")
      .send({ userId: "maya", sessionId: "s-1", useMemory: true, query: "x", turnTime: "yesterday" });
    expect(res.status).toBe(400);
    expect(res.body.detail).toMatch(/turnTime/);
  });

  test("not sufficient: one expansion round with twice the candidates, when the backend had more to give", async () => {
    const local = await h.services.backends.get(h.services.tenants.tenants()[0] ?? ({} as never), "local");
    const backend = await local;
    const search = jest.spyOn(backend as NonNullable<typeof backend>, "search");
    const body = await retrieve(h, {
      query: "What did Tom cook for the neighbours in Lisbon?",
      policy: "expanding",
    });
    expect(search).toHaveBeenCalledTimes(2);
    expect(search.mock.calls.map((c) => c[0].limit)).toEqual([2, 4]);
    expect(body.metadata.sufficiency.expanded).toBe(true);
  });

  test("no expansion when the first search returned fewer than it asked for", async () => {
    const local = await h.services.backends.get(h.services.tenants.tenants()[0] ?? ({} as never), "local");
    const backend = await local;
    const search = jest.spyOn(backend as NonNullable<typeof backend>, "search");
    const body = await retrieve(h, { query: "sneaker gremlin", policy: "expanding" });
    expect(search).toHaveBeenCalledTimes(1);
    expect(body.metadata.sufficiency.expanded).toBe(false);
  });
});
