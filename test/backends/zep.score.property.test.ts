/**
 * Properties of Zep's score calibration (src/backends/zep/score.ts) over any answer Zep could send: on [0,1],
 * never increasing down Zep's order (the contract's "monotone in the backend's ranking"), the same answer always
 * scored the same, and only a relevance reaching the top of the scale.
 */
import fc from "fast-check";
import { calibrateScores, ZEP_ALL_RERANKERS } from "../../src/backends/zep/score";

const raw = fc.oneof(
  fc.double({ min: -5, max: 5, noNaN: true }),
  fc.integer({ min: 0, max: 50 }),
  fc.constant(undefined),
);
const answer = fc.array(raw, { maxLength: 50 });
const reranker = fc.constantFrom(...ZEP_ALL_RERANKERS);

describe("Zep score calibration", () => {
  test("every score is on [0,1], never increasing down Zep's list, and a pure function of the answer", () => {
    fc.assert(
      fc.property(answer, reranker, (raws, r) => {
        const scores = calibrateScores(raws, r);
        expect(scores).toHaveLength(raws.length);
        scores.forEach((s, i) => {
          expect(s).toBeGreaterThanOrEqual(0);
          expect(s).toBeLessThanOrEqual(1);
          if (i > 0) expect(s).toBeLessThanOrEqual(scores[i - 1] ?? 1);
        });
        expect(calibrateScores([...raws], r)).toEqual(scores);
      }),
    );
  });

  test("without a relevance (every reranker but cross_encoder) the best of an answer stays below 1", () => {
    const rankBased = fc.constantFrom(...ZEP_ALL_RERANKERS.filter((r) => r !== "cross_encoder"));
    fc.assert(
      fc.property(answer, rankBased, (raws, r) => {
        for (const s of calibrateScores(raws, r)) expect(s).toBeLessThan(1);
      }),
    );
  });

  test("rank-only rerankers ignore Zep's numbers: 1 / (rank + 2)", () => {
    fc.assert(
      fc.property(answer, fc.constantFrom("mmr", "episode_mentions", "node_distance" as const), (raws, r) => {
        expect(calibrateScores(raws, r)).toEqual(raws.map((_, rank) => 1 / (rank + 2)));
      }),
    );
  });

  test("an RRF answer is scored raw / (raw + 1); one that does not look like RRF by rank", () => {
    expect(calibrateScores([3, 2, 1, 0.5, 0.12], "rrf")).toEqual([0.75, 2 / 3, 0.5, 1 / 3, 0.12 / 1.12]);
    // Rising ordinals, a fusion at rank constant 60, a missing value: rank scores.
    for (const raws of [
      [1, 2, 3],
      [0.0164, 0.0161, 0.0159],
      [2, undefined, 1],
    ])
      expect(calibrateScores(raws, "rrf")).toEqual([1 / 2, 1 / 3, 1 / 4]);
  });
});
