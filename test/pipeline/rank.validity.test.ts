import { analyzeQuery } from "../../src/pipeline/query/analyze";
import { rankStage } from "../../src/pipeline/stages/rank";
import { makeItem, makePolicy } from "../helpers/items";

const TURN = Date.parse("2024-06-01T12:00:00Z");
const weights = makePolicy().ranking.weights;
const items = () => [
  makeItem({
    id: "old",
    type: "fact",
    content: "Ana lives in Lisbon",
    timestamp: "2023-10-01T00:00:00.000Z",
    validAt: "2023-10-01T00:00:00.000Z",
    invalidAt: "2024-02-01T00:00:00.000Z",
  }),
  makeItem({
    id: "now",
    type: "fact",
    content: "Ana lives in Porto",
    timestamp: "2019-05-01T00:00:00.000Z",
    validAt: "2019-05-01T00:00:00.000Z",
  }),
  makeItem({ id: "msg", content: "Ana: I love the river", timestamp: "2024-05-01T00:00:00.000Z" }),
];
const timeOf = (query: string, turnTime: number | undefined) => {
  const { ranking } = rankStage(items(), analyzeQuery(query, turnTime), weights);
  return Object.fromEntries(ranking.map((r) => [r.id, r.signals.time]));
};

describe("rank stage: a fact's validity in the time signal", () => {
  test("'now': 0 once invalidated before the turn, 1 while valid; a message keeps its recency", () => {
    expect(timeOf("Where does Ana live now?", TURN)).toEqual({ old: 0, now: 1, msg: 1 });
  });

  test("'now' with the turn before the invalidation: still valid then", () => {
    expect(timeOf("Where does Ana live now?", Date.parse("2024-01-15T00:00:00Z"))).toMatchObject({ old: 1 });
  });

  test("'now' without a turn time (replay): any invalidation counts as past", () => {
    expect(timeOf("Where does Ana live now?", undefined)).toMatchObject({ old: 0, now: 1 });
  });

  test("a scope: 1 when the fact held at some time in it, else e^(−days between / 14)", () => {
    const may2021 = timeOf("Where did Ana live in May 2021?", TURN);
    expect(may2021.now).toBe(1);
    expect(may2021.old).toBeLessThan(1e-6);
    const dec2023 = timeOf("Where did Ana live in December 2023?", TURN);
    expect(dec2023).toMatchObject({ old: 1, now: 1 });
    // March 2024 starts 29 days after the Lisbon fact ended.
    expect(timeOf("Where did Ana live in March 2024?", TURN).old).toBeCloseTo(Math.exp(-29 / 14), 5);
  });
});
