/**
 * `ranking.neighbours` (issue 25, docs/policy.md#ranking): a message gains weight × the gap to the best relevance of
 * the messages of its own session near it in time (decayed e^(−minutes apart / minutes), none beyond 3 × minutes).
 * The turn that holds the answer sits a turn or two after the one that repeats the question's words.
 */
import { runPipeline } from "../../src/pipeline";
import { analyzeQuery } from "../../src/pipeline/query/analyze";
import { liftByNeighbours, rankStage } from "../../src/pipeline/stages/rank";
import { compilePolicy } from "../../src/policy/compile";
import { policySchema } from "../../src/policy/schema";
import { makeCandidate, makeItem, makePolicy } from "../helpers/items";

const TURN = Date.parse("2024-09-01T12:00:00Z");
const weights = makePolicy().ranking.weights;
const at = (minute: number) => new Date(Date.parse("2024-08-10T18:00:00Z") + minute * 60_000).toISOString();
const msg = (id: string, content: string, minute: number, extra: Record<string, unknown> = {}) =>
  makeItem({
    id,
    content,
    type: "message",
    score: 0.4,
    sessionId: "s-wedding",
    timestamp: at(minute),
    ...extra,
  });

/** The usher's suit: the question's words in one turn, the shop two turns on; small talk elsewhere. */
const conversation = () => [
  msg(
    "topic",
    "Daniel: Priya's sister gets married in August and I've been asked to be an usher, suit and all.",
    0,
    {
      score: 0.6,
    },
  ),
  msg("small", "Grace: Lovely! Is the wedding in Leicester?", 1, { score: 0.3 }),
  msg("answer", "Daniel: I bought a navy one from Marlow & Finch yesterday, and Priya chose the tie.", 2, {
    score: 0.3,
  }),
  msg("other", "Daniel: Work was long, the suit of armour at the museum fell over again.", 0, {
    score: 0.35,
    sessionId: "s-museum",
    timestamp: "2024-08-20T10:00:00Z",
  }),
];

describe("ranking.neighbours", () => {
  const analysis = analyzeQuery("Which shop did Daniel get his usher's suit from?", TURN);

  test("the turn beside the one with the question's words outranks an unrelated turn that shares a word", () => {
    const plain = rankStage(conversation(), analysis, weights);
    const lifted = rankStage(conversation(), analysis, weights, undefined, undefined, {
      neighbours: { weight: 0.4, minutes: 15 },
    });
    const rankOf = (r: typeof plain, id: string) => r.ranking.find((x) => x.id === id)?.rank;
    expect(rankOf(plain, "answer")).toBeGreaterThan(rankOf(plain, "other") as number);
    expect(rankOf(lifted, "answer")).toBeLessThan(rankOf(lifted, "other") as number);
    // Exactly r + w × (s − r), s the best neighbour's relevance × e^(−2 min / 15 min).
    const rel = (r: typeof plain, id: string) => r.ranking.find((x) => x.id === id)?.relevance as number;
    const expected =
      rel(plain, "answer") + 0.4 * (rel(plain, "topic") * Math.exp(-2 / 15) - rel(plain, "answer"));
    expect(rel(lifted, "answer")).toBeCloseTo(expected, 5);
    // The best turn has no better neighbour: unchanged; the turn alone in its session too.
    expect(rel(lifted, "topic")).toBe(rel(plain, "topic"));
    expect(rel(lifted, "other")).toBe(rel(plain, "other"));
    expect(lifted.trace.detail?.neighbours).toBe(2);
    expect(plain.trace.detail?.neighbours).toBeUndefined();
    // The relevance the selection reads is the lifted one.
    expect(lifted.context.relevance.get("answer")).toBe(rel(lifted, "answer"));
  });

  test("no lift from another session, from beyond 3 × minutes, for a memory that is not a message, or at weight 0", () => {
    const relevance = (items: ReturnType<typeof conversation>, weight = 0.4, minutes = 15) => {
      const r = Float64Array.from([0.8, 0.02]);
      const raised = liftByNeighbours(items, r, { weight, minutes });
      return { r: [...r], raised };
    };
    const pair = (second: Record<string, unknown>) => [
      msg("a", "Ana: first", 0),
      msg("b", "Ben: second", 1, second),
    ];
    const near = relevance(pair({}));
    expect(near.raised).toBe(1);
    expect(near.r[1]).toBeCloseTo(0.02 + 0.4 * (0.8 * Math.exp(-1 / 15) - 0.02), 6);
    expect(relevance(pair({ sessionId: "s-other" })).r).toEqual([0.8, 0.02]);
    expect(relevance(pair({ timestamp: at(46) })).r).toEqual([0.8, 0.02]);
    expect(relevance(pair({ timestamp: at(44) })).raised).toBe(1);
    expect(relevance(pair({ type: "fact" })).r).toEqual([0.8, 0.02]);
    expect(relevance(pair({ sessionId: "" })).r).toEqual([0.8, 0.02]);
    expect(relevance(pair({}), 0).r).toEqual([0.8, 0.02]);
    // Each lift reads the relevance before the step: a chain does not carry the best turn further along.
    const chain = [msg("a", "Ana: one", 0), msg("b", "Ben: two", 1), msg("c", "Ana: three", 2)];
    const r = Float64Array.from([0.8, 0.2, 0.1]);
    liftByNeighbours(chain, r, { weight: 1, minutes: 15 });
    expect(r[2]).toBeCloseTo(0.8 * Math.exp(-2 / 15), 6);
  });

  test("the same relevance whatever the order of the candidates", () => {
    const items = conversation();
    const opts = { neighbours: { weight: 0.4, minutes: 15 } };
    const forward = rankStage(items, analysis, weights, undefined, undefined, opts).ranking;
    const backward = rankStage([...items].reverse(), analysis, weights, undefined, undefined, opts).ranking;
    const byId = (r: typeof forward) => Object.fromEntries(r.map((x) => [x.id, x.relevance]));
    expect(byId(backward)).toEqual(byId(forward));
  });

  test("in the pipeline: with K = 2 the answer turn is kept with the field, not without it", () => {
    const candidates = conversation().map(({ id, content, score, sessionId, timestamp, type }) =>
      makeCandidate({ id, content, score, sessionId, timestamp, type }),
    );
    const policy = (neighbours?: { weight: number; minutes: number }) =>
      compilePolicy(
        makePolicy({
          ranking: {
            enabled: true,
            dynamicK: { enabled: true, min: 2, max: 2 },
            ...(neighbours === undefined ? {} : { neighbours }),
          },
        }),
      );
    const run = (compiled: ReturnType<typeof policy>) =>
      runPipeline(
        {
          userId: "grace",
          query: "Which shop did Daniel get his usher's suit from?",
          candidates,
          backend: "local",
          turnTime: TURN,
        },
        compiled,
      ).memories.map((m) => m.id);
    expect(run(policy())).not.toContain("answer");
    expect(run(policy({ weight: 0.4, minutes: 15 }))).toContain("answer");
  });

  test("the policy field: validated, defaults 0.4 and 15 minutes, absent = off and the hash unchanged", () => {
    const base = { name: "p", version: 1, ranking: { enabled: true } };
    expect(policySchema.parse(base).ranking).not.toHaveProperty("neighbours");
    expect(
      policySchema.parse({ ...base, ranking: { enabled: true, neighbours: {} } }).ranking.neighbours,
    ).toEqual({
      weight: 0.4,
      minutes: 15,
    });
    for (const bad of [
      { weight: 1.5 },
      { weight: -0.1 },
      { minutes: 0 },
      { minutes: 1441 },
      { minutes: 2.5 },
      { k: 1 },
    ])
      expect(policySchema.safeParse({ ...base, ranking: { enabled: true, neighbours: bad } }).success).toBe(
        false,
      );
    const hash = (p: unknown) => compilePolicy(policySchema.parse(p)).hash;
    expect(hash(base)).not.toBe(hash({ ...base, ranking: { enabled: true, neighbours: {} } }));
  });
});
