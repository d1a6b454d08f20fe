/**
 * Zep's scores on memgate's one scale (src/backends/zep/score.ts, docs/policy.md#fetch), for every reranker, through
 * what a user touches: POST /v1/retrieve (the Zep adapter) and the Zep drop-in door driven by the real SDK. The
 * upstream is the fake Zep (test/backends/fakes/zep-server.ts), whose scores follow the reranker as Zep's do.
 *
 * The query has four words; Zep's order (the fake's) is f1 (all four), f2 (three), f3 (two), f4…f8 (one each).
 */
import { ZepClient } from "@getzep/zep-cloud";
import request from "supertest";
import type { SeedMemory } from "../backends/contract";
import { createZepFakeServer, ZEP_FAKE_API_KEY, type ZepFakeServer } from "../backends/fakes/zep-server";
import { type Gateway, KEYS, startGateway } from "./gateway";

const QUERY = "coffee order oat milk";
const ZEP_ORDER = ["f1", "f2", "f3", "f4", "f5", "f6", "f7", "f8"];
const fact = (id: string, content: string, day: number): SeedMemory => ({
  id,
  content,
  type: "fact",
  timestamp: `2026-03-${String(day).padStart(2, "0")}T09:00:00.000Z`,
  sessionId: "s-1",
});
const ANA: SeedMemory[] = [
  fact("f1", "Ana's coffee order is an oat milk latte.", 1),
  fact("f2", "Ana likes her coffee with oat milk.", 2),
  fact("f3", "Ana's coffee order arrives at nine.", 3),
  ...["Monday", "Tuesday", "Wednesday", "Thursday", "Friday"].map((day, i) =>
    fact(`f${i + 4}`, `Ana mentioned coffee on ${day}.`, i + 4),
  ),
];

const RERANKERS = ["cross_encoder", "rrf", "mmr", "episode_mentions"] as const;
type Reranker = (typeof RERANKERS)[number];

const sigmoid = (share: number) => 1 / (1 + Math.exp(3 - 6 * share));
const rank = ZEP_ORDER.map((_, r) => 1 / (r + 2));
/** What the fake sends (backendScore) and what memgate makes of it (score), in Zep's order. */
const EXPECTED: Record<Reranker, { raw: number[]; score: number[] }> = {
  cross_encoder: {
    raw: [1, 0.75, 0.5, 0.25, 0.25, 0.25, 0.25, 0.25].map(sigmoid),
    score: [1, 0.75, 0.5, 0.25, 0.25, 0.25, 0.25, 0.25].map(sigmoid),
  },
  // RRF at rank constant 1 of two retrievers; the "vector" one finds f1–f3 only.
  rrf: {
    raw: [2, 1, 2 / 3, 1 / 4, 1 / 5, 1 / 6, 1 / 7, 1 / 8],
    score: [2 / 3, 1 / 2, 2 / 5, 1 / 5, 1 / 6, 1 / 7, 1 / 8, 1 / 9],
  },
  mmr: { raw: [0.25, 0.125, 0, -0.125, -0.125, -0.125, -0.125, -0.125], score: rank },
  episode_mentions: { raw: [4, 3, 2, 1, 1, 1, 1, 1], score: rank },
};

/** Every score kept unless `minScore` says otherwise; best score first, nothing clipped, a budget that holds all. */
const policy = (name: string, reranker: Reranker, minScore: number) =>
  `name: ${name}\nversion: 1\ntokenizer: approx\n` +
  `retrieval: { minScore: ${minScore}, topK: 10, maxTokens: 1000 }\n` +
  "interleaving: { strategy: score_first }\nclip: { mode: off }\nbudget: { fill: false }\n" +
  `zep: { scopes: [edges], reranker: ${reranker} }\n`;

const POLICIES: Record<string, string> = {
  ...Object.fromEntries(RERANKERS.map((r) => [`scale-${r}`, policy(`scale-${r}`, r, 0)])),
  "weak-rrf": policy("weak-rrf", "rrf", 0.15),
};

interface Memory {
  id: string;
  score: number;
  provenance: { backend?: string; backendScore?: number };
}

describe("Zep scores on one scale, every reranker", () => {
  let zep: ZepFakeServer;
  let gw: Gateway;

  beforeAll(async () => {
    zep = await createZepFakeServer();
    await zep.seed("ana", ANA);
    gw = await startGateway({
      env: { T_ZEP_KEY: ZEP_FAKE_API_KEY },
      backends: `      zep: { apiKeyEnv: T_ZEP_KEY, baseUrl: "${zep.baseUrl}" }`,
      policies: POLICIES,
    });
  });

  afterAll(async () => {
    await gw.close();
    await zep.close();
  });

  const retrieve = async (policyName: string): Promise<Memory[]> => {
    const res = await request(gw.h.app)
      .post("/v1/retrieve")
      .set("x-api-key", KEYS.app)
      .send({
        userId: "ana",
        sessionId: "s-9",
        query: QUERY,
        useMemory: true,
        backend: "zep",
        policy: policyName,
      })
      .expect(200);
    expect(res.body.metadata.fallback).toBeNull();
    return res.body.memories as Memory[];
  };

  const doorSearch = (policyName: string, reranker?: Reranker) =>
    new ZepClient({ apiKey: KEYS.app, baseUrl: `${gw.origin}/api/v2` }).graph.search(
      {
        userId: "ana",
        query: QUERY,
        scope: "edges",
        limit: 10,
        ...(reranker === undefined ? {} : { reranker }),
      },
      { maxRetries: 0, headers: { "x-memgate-policy": policyName } },
    );

  test.each(RERANKERS)(
    "%s on /v1/retrieve: Zep's order, scores on the scale, Zep's own score carried",
    async (r) => {
      const memories = await retrieve(`scale-${r}`);
      expect(memories.map((m) => m.id)).toEqual(ZEP_ORDER);
      const { raw, score } = EXPECTED[r];
      memories.forEach((m, i) => {
        expect(m.score).toBeCloseTo(score[i] ?? Number.NaN, 12);
        expect(m.provenance.backendScore).toBeCloseTo(raw[i] ?? Number.NaN, 12);
        expect(m.provenance.backend).toBe("zep");
        if (i > 0) expect(m.score).toBeLessThanOrEqual(memories[i - 1]?.score ?? 0);
      });
      // Only a relevance comes near 1: a rank or an RRF value never makes the best of an answer "certain".
      if (r !== "cross_encoder") expect(Math.max(...memories.map((m) => m.score))).toBeLessThanOrEqual(0.75);
      // backendScore is provenance's last field: existing outputs keep their field order.
      expect(Object.keys(memories[0]?.provenance ?? {}).at(-1)).toBe("backendScore");
    },
  );

  test("rrf with minScore 0.15 on /v1/retrieve drops the facts only one retriever found low (RRF ≤ 1/6)", async () => {
    // Scored 1 − rank/L before (L = 10 × 2): f8, 8th of one retriever (RRF 0.125), came back as 0.65.
    const memories = await retrieve("weak-rrf");
    expect(memories.map((m) => m.id)).toEqual(["f1", "f2", "f3", "f4", "f5"]);
    expect(memories.at(-1)?.score).toBeCloseTo(1 / 6, 12);
  });

  test.each(RERANKERS)("%s on the Zep door: Zep's order and the calibrated score in `score`", async (r) => {
    const res = await doorSearch(`scale-${r}`, r);
    const edges = res.edges ?? [];
    expect(edges.map((e) => e.uuid)).toEqual(ZEP_ORDER);
    edges.forEach((e, i) => {
      expect(e.score).toBeCloseTo(EXPECTED[r].score[i] ?? Number.NaN, 12);
    });
  });

  test("the SDK's default reranker (rrf) with minScore 0.15: the weak facts are dropped at the door too", async () => {
    const res = await doorSearch("weak-rrf");
    const edges = res.edges ?? [];
    expect(edges.map((e) => e.uuid)).toEqual(["f1", "f2", "f3", "f4", "f5"]);
    edges.forEach((e, i) => {
      expect(e.score).toBeCloseTo(EXPECTED.rrf.score[i] ?? Number.NaN, 12);
    });
    const sent = zep.requestsTo("/graph/search").at(-1)?.body;
    expect(sent).not.toHaveProperty("reranker");
  });
});
