/**
 * The reply turn of a question episode on Zep through POST /v1/retrieve (the real adapter, the fake Zep): with
 * `retrieval.replies` and ranking, the answer to "did you name the puppy?" comes right after its question.
 */
import request from "supertest";
import type { SeedMemory } from "../backends/contract";
import { createZepFakeServer, ZEP_FAKE_API_KEY, type ZepFakeServer } from "../backends/fakes/zep-server";
import { type Gateway, KEYS, startGateway } from "./gateway";

const msg = (id: string, minute: number, content: string): SeedMemory => ({
  id,
  content,
  type: "message",
  sessionId: "t-shelter",
  timestamp: `2024-03-02T18:${String(minute).padStart(2, "0")}:00.000Z`,
});

const POLICY = (name: string, replies: boolean) =>
  `name: ${name}\nversion: 1\ntokenizer: approx\n` +
  `retrieval: { minScore: 0, topK: 2, overfetch: 1, maxTokens: 500, replies: ${replies} }\n` +
  "clip: { mode: off }\nranking: { enabled: true }\nzep: { scopes: [episodes], reranker: cross_encoder }\n";

describe("Zep reply turns through /v1/retrieve", () => {
  let zep: ZepFakeServer;
  let gw: Gateway;

  beforeAll(async () => {
    zep = await createZepFakeServer();
    await zep.seed("maya", [
      msg("q1", 0, "Tom: How was the shelter visit? Did you name the puppy?"),
      msg("a1", 1, "Maya: Pickle! He chewed my left sneaker already."),
      msg("x1", 2, "Tom: The shelter had a puppy class too, every Monday."),
    ]);
    gw = await startGateway({
      env: { T_ZEP_KEY: ZEP_FAKE_API_KEY },
      backends: `      zep: { apiKeyEnv: T_ZEP_KEY, baseUrl: "${zep.baseUrl}" }`,
      policies: { replies: POLICY("replies", true), plain: POLICY("plain", false) },
    });
  });

  afterAll(async () => {
    await gw.close();
    await zep.close();
  });

  const retrieve = async (policy: string) => {
    const res = await request(gw.h.app)
      .post("/v1/retrieve")
      .set("x-api-key", KEYS.app)
      .send({
        userId: "maya",
        sessionId: "s-9",
        query: "What did I name the puppy from the shelter?",
        useMemory: true,
        backend: "zep",
        policy,
      })
      .expect(200);
    expect(res.body.metadata.fallback).toBeNull();
    return res.body.memories.map((m: { id: string }) => m.id) as string[];
  };

  test("with replies the answer turn follows its question; without, the search's own two", async () => {
    const ids = await retrieve("replies");
    expect(ids).toContain("a1");
    expect(ids.indexOf("a1")).toBe(ids.indexOf("q1") + 1);
    expect(await retrieve("plain")).not.toContain("a1");
  });
});
