import { thresholdStage } from "../../src/pipeline/stages/threshold";
import { makeItem, makePolicy } from "../helpers/items";

describe("thresholdStage", () => {
  test("drops score < minScore, keeps score == minScore, keeps order", () => {
    const input = [
      makeItem({ id: "a", score: 0.2999 }),
      makeItem({ id: "b", score: 0.3 }),
      makeItem({ id: "c", score: 0.95 }),
      makeItem({ id: "d", score: 0 }),
    ];
    const { items, trace } = thresholdStage(input, makePolicy({ retrieval: { minScore: 0.3 } }));
    expect(items.map((i) => i.id)).toEqual(["b", "c"]);
    expect(trace).toEqual({
      stage: "score_threshold",
      in: 4,
      out: 2,
      changes: [
        { id: "a", reason: "below_min_score" },
        { id: "d", reason: "below_min_score" },
      ],
      detail: { minScore: 0.3 },
    });
  });

  test("minScore 0 keeps everything, minScore 1 keeps only perfect scores", () => {
    const input = [makeItem({ id: "a", score: 0 }), makeItem({ id: "b", score: 1 })];
    expect(thresholdStage(input, makePolicy({ retrieval: { minScore: 0 } })).items).toHaveLength(2);
    expect(thresholdStage(input, makePolicy({ retrieval: { minScore: 1 } })).items.map((i) => i.id)).toEqual([
      "b",
    ]);
  });
});
