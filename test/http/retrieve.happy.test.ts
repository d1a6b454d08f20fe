import request from "supertest";
import { type Harness, KEYS, makeHarness } from "../helpers/harness";
import { makeCandidate } from "../helpers/items";

const body = (patch: Record<string, unknown> = {}) => ({
  userId: "u-123",
  sessionId: "s-9",
  query: "what do I usually order?",
  useMemory: true,
  ...patch,
});

const zepMemories = [
  makeCandidate({
    id: "f1",
    content: "Ana orders an oat milk flat white. She likes it hot. She never takes sugar.",
    score: 0.92,
    timestamp: "2026-03-01T09:00:00Z",
  }),
  makeCandidate({
    id: "f2",
    content: "  ana orders an oat milk flat white. she likes it hot.  she never takes sugar",
    score: 0.6,
    timestamp: "2026-03-05T09:00:00Z",
  }),
  makeCandidate({
    id: "m1",
    content: "Make it decaf today, please.",
    score: 0.55,
    type: "message",
    role: "user",
    timestamp: "2026-03-20T08:30:00Z",
    sessionId: "s-2",
  }),
  makeCandidate({ id: "low", content: "Unrelated note about parking.", score: 0.1 }),
];

describe("POST /v1/retrieve — happy paths", () => {
  let h: Harness;
  beforeEach(async () => {
    h = await makeHarness();
    h.zep.acme?.setUser("u-123", zepMemories);
  });
  afterEach(() => h.close());

  test("shapes the tenant's Zep results with the default policy", async () => {
    const res = await request(h.app)
      .post("/v1/retrieve")
      .set("authorization", `Bearer ${KEYS.acmeChat}`)
      .send(body())
      .expect(200)
      .expect("content-type", /application\/json/);
    expect(res.body.memories.map((m: { id: string }) => m.id)).toEqual(["f1", "m1"]);
    const [fact] = res.body.memories;
    expect(fact).toMatchObject({
      id: "f1",
      // The default policy keeps up to 4 sentences: this fact is whole.
      content: "Ana orders an oat milk flat white. She likes it hot. She never takes sugar.",
      type: "fact",
      provenance: {
        collection: "user:u-123",
        searchType: "hybrid",
        originalLength: 75,
        wasRedacted: false,
        backend: "zep",
      },
    });
    expect(res.body.metadata).toMatchObject({
      totalResults: 4,
      includedResults: 2,
      appliedFilters: [
        "score_threshold",
        "deduplication",
        "interleave:alternate",
        "clip:relevant",
        "token_budget",
      ],
      config: { topK: 12, clipSentences: 4, maxTokens: 1500, searchType: "hybrid", minScore: 0.15 },
      policy: { name: "default", version: 2 },
      backend: "zep",
      cache: "miss",
      fallback: null,
    });
    expect(res.body.metadata.policy.hash).toMatch(/^[0-9a-f]{64}$/);
    expect(res.body.metadata.totalTokens).toBeGreaterThan(0);
    expect(typeof res.body.metadata.queryTime).toBe("number");
    expect(res.body.systemPrompt).toContain("## Relevant Context from Previous Conversations");
    expect(res.body.systemPrompt).toContain(
      "- Ana orders an oat milk flat white. She likes it hot. She never takes sugar. (confidence: 0.92)",
    );
    expect(res.body.systemPrompt).toContain("[2026-03-20T08:30:00Z] user: Make it decaf today, please.");
    expect(res.body.trace).toBeUndefined();
    expect(h.zep.acme?.lastRequest?.limit).toBe(24);
    expect(res.headers["x-request-id"]).toBeDefined();
  });

  test("the same request again is a cache hit with identical memories and prompt", async () => {
    const agent = request(h.app);
    const first = await agent.post("/v1/retrieve").set("x-api-key", KEYS.acmeChat).send(body()).expect(200);
    const second = await agent.post("/v1/retrieve").set("x-api-key", KEYS.acmeChat).send(body()).expect(200);
    expect(second.body.metadata.cache).toBe("hit");
    expect(second.body.memories).toEqual(first.body.memories);
    expect(second.body.systemPrompt).toBe(first.body.systemPrompt);
    expect(h.zep.acme?.searchCalls).toBe(1);
  });

  test("the Zep SDK's Api-Key scheme is accepted", async () => {
    await request(h.app)
      .post("/v1/retrieve")
      .set("authorization", `Api-Key ${KEYS.acmeChat}`)
      .send(body())
      .expect(200);
  });

  test("`backend` picks another backend of the tenant", async () => {
    h.openmemory.acme?.setUser("u-123", [
      makeCandidate({ id: "om1", content: "From OpenMemory.", score: 0.8 }),
    ]);
    const res = await request(h.app)
      .post("/v1/retrieve")
      .set("x-api-key", KEYS.acmeChat)
      .send(body({ backend: "openmemory" }))
      .expect(200);
    expect(res.body.memories.map((m: { id: string }) => m.id)).toEqual(["om1"]);
    expect(res.body.metadata.backend).toBe("openmemory");
  });

  test("an allowed policy is applied and reported", async () => {
    const res = await request(h.app)
      .post("/v1/retrieve")
      .set("x-api-key", KEYS.acmeChat)
      .send(body({ policy: "fast" }))
      .expect(200);
    expect(res.body.metadata.policy.name).toBe("fast");
    expect(res.body.memories.map((m: { id: string }) => m.id)).toContain("low");
  });

  test("admin: overrides are validated and applied; explain returns the per-stage trace", async () => {
    const res = await request(h.app)
      .post("/v1/retrieve")
      .set("x-api-key", KEYS.acmeOps)
      .send(body({ overrides: { topK: 1, clipSentences: 1 }, explain: true }))
      .expect(200);
    expect(res.body.metadata.config.topK).toBe(1);
    expect(res.body.memories).toHaveLength(1);
    // Relevant clipping to one sentence: the one that matches "order".
    expect(res.body.memories[0].content).toBe("Ana orders an oat milk flat white. ...");
    const stages = res.body.trace.map((t: { stage: string }) => t.stage);
    expect(stages).toEqual([
      "fetch",
      "score_threshold",
      "deduplication",
      "top_k",
      "interleave",
      "clip",
      "token_budget",
    ]);
    // topK 1 × overfetch 2: only the two best candidates are fetched, and the trace says so.
    expect(h.zep.acme?.lastRequest?.limit).toBe(2);
    expect(res.body.trace[0]).toEqual({
      stage: "fetch",
      in: 2,
      out: 2,
      changes: [],
      detail: { asked: 2, fetched: 2 },
    });
    expect(res.body.trace[2]).toMatchObject({
      stage: "deduplication",
      in: 2,
      out: 1,
      changes: [{ id: "f2", reason: "duplicate_of:f1" }],
    });
    // The cut to topK is its own stage: one unique memory, topK 1, nothing beyond it here.
    expect(res.body.trace[3]).toEqual({
      stage: "top_k",
      in: 1,
      out: 1,
      changes: [],
      detail: { topK: 1, reserve: 0 },
    });
    expect(res.body.trace[5].changes).toEqual([
      {
        id: "f1",
        reason: "clipped",
        sentences: {
          total: 3,
          kept: [{ sentence: 1, why: "match", score: expect.any(Number), terms: ["order"] }],
        },
      },
    ]);
    const wide = await request(h.app)
      .post("/v1/retrieve")
      .set("x-api-key", KEYS.acmeOps)
      .send(body({ overrides: { topK: 2 }, explain: true }))
      .expect(200);
    expect(wide.body.trace[1].changes).toEqual([{ id: "low", reason: "below_min_score" }]);
    expect(res.body.metadata.policy.hash).not.toBe(
      (await request(h.app).post("/v1/retrieve").set("x-api-key", KEYS.acmeOps).send(body())).body.metadata
        .policy.hash,
    );
  });

  test("admin: overrides switch clipping to relevant and fill the budget; explain says which sentences and why", async () => {
    const res = await request(h.app)
      .post("/v1/retrieve")
      .set("x-api-key", KEYS.acmeOps)
      .send(
        body({
          query: "does she take sugar?",
          overrides: {
            clipSentences: 1,
            clip: { mode: "relevant" },
            budget: { packing: "skip", fill: true },
          },
          explain: true,
        }),
      )
      .expect(200);
    expect(res.body.memories[0].content).toBe("... She never takes sugar.");
    expect(res.body.metadata.appliedFilters).toContain("clip:relevant");
    const clip = res.body.trace.find((t: { stage: string }) => t.stage === "clip");
    expect(clip.detail).toEqual({ clipSentences: 1, mode: "relevant", queryTerms: 2 });
    expect(clip.changes[0]).toEqual({
      id: "f1",
      reason: "clipped",
      sentences: {
        total: 3,
        kept: [{ sentence: 3, why: "match", score: expect.any(Number), terms: ["take", "sugar"] }],
      },
    });
    const budget = res.body.trace.find((t: { stage: string }) => t.stage === "token_budget");
    expect(budget.detail).toMatchObject({ packing: "skip" });

    const bad = await request(h.app)
      .post("/v1/retrieve")
      .set("x-api-key", KEYS.acmeOps)
      .send(body({ overrides: { clip: { mode: "best" }, budget: { maxMemories: 99 } } }));
    expect(bad.status).toBe(400);
    expect(bad.body.detail).toMatch(/overrides\.clip\.mode: /);
  });

  test("globex is served by its embedded local store", async () => {
    await h.close();
    h = await makeHarness({
      localRecords: [
        {
          id: "g1",
          userId: "u-1",
          content: "Sam prefers window seats on long flights.",
          type: "fact",
          timestamp: "2026-02-01T10:00:00Z",
          sessionId: "s-1",
        },
      ],
    });
    const res = await request(h.app)
      .post("/v1/retrieve")
      .set("x-api-key", KEYS.globex)
      .send(body({ userId: "u-1", query: "window seat flights" }))
      .expect(200);
    expect(res.body.metadata.backend).toBe("local");
    expect(res.body.memories.map((m: { id: string }) => m.id)).toEqual(["g1"]);
  });
});

describe("dev mode (no tenants file)", () => {
  test("any key or none is accepted and the local backend serves", async () => {
    const h = await makeHarness({
      tenants: null,
      localRecords: [
        {
          id: "d1",
          userId: "u-1",
          content: "Dev memory about espresso.",
          type: "fact",
          timestamp: "2026-02-01T10:00:00Z",
          sessionId: "s-1",
        },
      ],
    });
    try {
      for (const auth of [undefined, "Bearer anything"]) {
        const req = request(h.app).post("/v1/retrieve");
        if (auth) req.set("authorization", auth);
        const res = await req.send(body({ userId: "u-1", query: "espresso" })).expect(200);
        expect(res.body.memories.map((m: { id: string }) => m.id)).toEqual(["d1"]);
      }
    } finally {
      await h.close();
    }
  });
});
