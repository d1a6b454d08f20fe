/**
 * Following turns on Zep through POST /v1/retrieve (the real adapter, the fake Zep): with `retrieval.following`,
 * the turn after the best hit that holds the answer without any of the question's words ("I bought a navy one from
 * Marlow & Finch") comes from the thread read and is kept; the drop-in door's own graph.search answer stays Zep's.
 */
import request from "supertest";
import type { SeedMemory } from "../backends/contract";
import { createZepFakeServer, ZEP_FAKE_API_KEY, type ZepFakeServer } from "../backends/fakes/zep-server";
import { type Gateway, KEYS, startGateway } from "./gateway";

const msg = (id: string, thread: string, minute: number, content: string): SeedMemory => ({
  id,
  content,
  type: "message",
  sessionId: thread,
  timestamp: `2024-03-02T18:${String(minute).padStart(2, "0")}:00.000Z`,
});

const POLICY = (name: string, following: string) =>
  `name: ${name}\nversion: 1\ntokenizer: approx\n` +
  `retrieval: { minScore: 0, topK: 4, overfetch: 1, maxTokens: 500${following} }\n` +
  "clip: { mode: off }\nranking: { enabled: true }\nzep: { scopes: [episodes], reranker: cross_encoder }\n";

describe("Zep following turns through /v1/retrieve", () => {
  let zep: ZepFakeServer;
  let gw: Gateway;

  beforeAll(async () => {
    zep = await createZepFakeServer();
    await zep.seed("maya", [
      msg("w1", "t-wed", 0, "Maya: I've been asked to be an usher at Sam's wedding."),
      msg("w2", "t-wed", 1, "Tom: Do you still have the suit?"),
      msg("w3", "t-wed", 2, "Maya: That one is long gone. I bought a navy one from Marlow & Finch."),
      msg("w4", "t-wed", 3, "Tom: Good."),
      msg("l1", "t-lake", 0, "Maya: Sam's wedding is at the lake."),
      msg("l2", "t-lake", 1, "Tom: Lovely spot."),
    ]);
    gw = await startGateway({
      env: { T_ZEP_KEY: ZEP_FAKE_API_KEY },
      backends: `      zep: { apiKeyEnv: T_ZEP_KEY, baseUrl: "${zep.baseUrl}" }`,
      policies: {
        following: POLICY("following", ", following: { top: 1, turns: 2 }"),
        plain: POLICY("plain", ""),
      },
    });
  });

  afterAll(async () => {
    await gw.close();
    await zep.close();
  });

  const threadCalls = () => zep.requests.filter((r) => r.path.startsWith("/threads/")).map((r) => r.path);

  const retrieve = async (policy: string) => {
    const res = await request(gw.h.app)
      .post("/v1/retrieve")
      .set("x-api-key", KEYS.app)
      .send({
        userId: "maya",
        sessionId: "s-9",
        query: "What did I buy to wear as an usher at Sam's wedding?",
        useMemory: true,
        backend: "zep",
        policy,
      })
      .expect(200);
    expect(res.body.metadata.fallback).toBeNull();
    return res.body.memories as Array<{ id: string; content: string }>;
  };

  test("with following the answer turn after the best hit is kept, from one thread read; without, it is not found", async () => {
    const plain = await retrieve("plain");
    expect(plain.map((m) => m.id)).not.toContain("w3");
    expect(threadCalls()).toEqual([]);
    const followed = await retrieve("following");
    const ids = followed.map((m) => m.id);
    expect(ids).toContain("w1");
    expect(ids).toContain("w3");
    expect(followed.find((m) => m.id === "w3")?.content).toContain("Marlow & Finch");
    // The other thread's hit brings nothing (top 1), and one thread was read.
    expect(ids).not.toContain("l2");
    expect(threadCalls()).toEqual(["/threads/t-wed?lastn=100"]);
  });

  test("the drop-in door's graph.search answers Zep's own items whatever the policy's following", async () => {
    const door = (policy: string) =>
      request(gw.h.app)
        .post("/api/v2/graph/search")
        .set("x-api-key", KEYS.app)
        .set("x-memgate-policy", policy)
        .send({ user_id: "maya", query: "usher wedding", scope: "episodes", reranker: "cross_encoder" })
        .expect(200);
    const before = threadCalls().length;
    const [plain, followed] = [await door("plain"), await door("following")];
    expect(followed.body).toEqual(plain.body);
    expect(followed.body.episodes.map((e: { uuid: string }) => e.uuid)).not.toContain("w2");
    expect(threadCalls()).toHaveLength(before);
  });
});
