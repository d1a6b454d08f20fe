/**
 * Zep facts' validity (`valid_at`, `invalid_at`) in the rank stage's time signal, through POST /v1/retrieve with the
 * real Zep adapter against the fake Zep: a fact invalidated before the turn loses against the valid one for a
 * "now" question, and a fact valid during the question's time scope fits it — though Zep ranks the other first.
 */
import request from "supertest";
import type { SeedMemory } from "../backends/contract";
import { createZepFakeServer, ZEP_FAKE_API_KEY, type ZepFakeServer } from "../backends/fakes/zep-server";
import { type Gateway, KEYS, startGateway } from "./gateway";

const fact = (id: string, content: string, extra: Partial<SeedMemory>): SeedMemory => ({
  id,
  content,
  type: "fact",
  timestamp: "2024-01-10T09:00:00.000Z",
  sessionId: "s-1",
  ...extra,
});

// Zep (the fake) ranks by shared words: the Lisbon fact matches more of each question's words, so it comes first.
// Its validity is the newer one (valid_at, the timestamp memgate shows, is later), but it ended in February 2024.
const ANA: SeedMemory[] = [
  fact("f-lisbon", "Ana lives in a rented flat in Lisbon near the river", {
    validAt: "2023-10-01T00:00:00.000Z",
    invalidAt: "2024-02-01T00:00:00.000Z",
    timestamp: "2023-10-05T09:00:00.000Z",
  }),
  fact("f-porto", "Ana lives in Porto", {
    validAt: "2019-05-01T00:00:00.000Z",
    timestamp: "2019-05-03T09:00:00.000Z",
  }),
];

const POLICY = (name: string, ranking: boolean) =>
  `name: ${name}\nversion: 1\ntokenizer: approx\n` +
  "retrieval: { minScore: 0, topK: 1, overfetch: 2, maxTokens: 500 }\nclip: { mode: off }\n" +
  `ranking: { enabled: ${ranking}, weights: { factual: { time: 0.5 } } }\n` +
  "zep: { scopes: [edges], reranker: cross_encoder }\n";

describe("Zep facts' valid_at / invalid_at in the time signal", () => {
  let zep: ZepFakeServer;
  let gw: Gateway;

  beforeAll(async () => {
    zep = await createZepFakeServer();
    await zep.seed("ana", ANA);
    gw = await startGateway({
      env: { T_ZEP_KEY: ZEP_FAKE_API_KEY },
      backends: `      zep: { apiKeyEnv: T_ZEP_KEY, baseUrl: "${zep.baseUrl}" }`,
      policies: { ranked: POLICY("ranked", true), plain: POLICY("plain", false) },
    });
  });

  afterAll(async () => {
    await gw.close();
    await zep.close();
  });

  const retrieve = async (policy: string, query: string) => {
    const res = await request(gw.h.app)
      .post("/v1/retrieve")
      .set("x-api-key", KEYS.app)
      .send({
        userId: "ana",
        sessionId: "s-9",
        query,
        useMemory: true,
        backend: "zep",
        policy,
        turnTime: "2024-06-01T12:00:00Z",
      })
      .expect(200);
    expect(res.body.metadata.fallback).toBeNull();
    return res.body.memories.map((m: { id: string }) => m.id) as string[];
  };

  test("without ranking Zep's order stands: the Lisbon fact first", async () => {
    expect(await retrieve("plain", "Where does Ana live now, near the river?")).toEqual(["f-lisbon"]);
    expect(await retrieve("plain", "Where did Ana live near the river in March 2024?")).toEqual(["f-lisbon"]);
  });

  test("a 'now' question: the newer fact invalidated before the turn loses against the still valid one", async () => {
    expect(await retrieve("ranked", "Where does Ana live now, near the river?")).toEqual(["f-porto"]);
  });

  test("a question about a time: the fact that held then fits, the one that did not yet or no longer hold loses", async () => {
    expect(await retrieve("ranked", "Where did Ana live near the river in May 2021?")).toEqual(["f-porto"]);
    expect(await retrieve("ranked", "Where did Ana live near the river in March 2024?")).toEqual(["f-porto"]);
    expect(await retrieve("ranked", "Where did Ana live near the river in December 2023?")).toEqual([
      "f-lisbon",
    ]);
  });
});
