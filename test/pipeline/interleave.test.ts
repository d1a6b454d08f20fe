import { interleaveStage } from "../../src/pipeline/stages/interleave";
import type { WorkItem } from "../../src/pipeline/types";
import { makeItem, makePolicy } from "../helpers/items";

const day = (d: number) => `2026-03-${String(d).padStart(2, "0")}T12:00:00.000Z`;

/** Relevant-but-old and recent-but-less-relevant memories, as a real search returns them. */
function generateTestMemories(): WorkItem[] {
  return [
    makeItem({ id: "rel-1", score: 0.95, timestamp: day(1) }),
    makeItem({ id: "rel-2", score: 0.9, timestamp: day(2) }),
    makeItem({ id: "rel-3", score: 0.85, timestamp: day(3) }),
    makeItem({ id: "new-1", score: 0.4, timestamp: day(28) }),
    makeItem({ id: "new-2", score: 0.45, timestamp: day(27) }),
    makeItem({ id: "new-3", score: 0.5, timestamp: day(26) }),
  ];
}

const ids = (items: WorkItem[]) => items.map((i) => i.id);

describe("interleaveStage", () => {
  test("seed 000: interleaving alternates score and recency", () => {
    const recentCutoff = Date.parse(day(20));
    const { items } = interleaveStage(generateTestMemories(), makePolicy());
    const first = items[0];
    const second = items[1];
    if (first === undefined || second === undefined) throw new Error("expected two memories");
    expect(first.score).toBeGreaterThan(0.8);
    expect(second.timeMs).toBeGreaterThan(recentCutoff);
    expect(ids(items)).toEqual(["rel-1", "new-1", "rel-2", "new-2", "rel-3", "new-3"]);
  });

  test("alternate skips memories already used by the other list", () => {
    // The best memory is also the newest: position 1 takes the next-newest instead.
    const input = [
      makeItem({ id: "a", score: 0.9, timestamp: day(10) }),
      makeItem({ id: "b", score: 0.8, timestamp: day(5) }),
      makeItem({ id: "c", score: 0.7, timestamp: day(8) }),
    ];
    expect(ids(interleaveStage(input, makePolicy()).items)).toEqual(["a", "c", "b"]);
  });

  test("score_first and recency_first", () => {
    const input = generateTestMemories();
    expect(
      ids(interleaveStage(input, makePolicy({ interleaving: { strategy: "score_first" } })).items),
    ).toEqual(["rel-1", "rel-2", "rel-3", "new-3", "new-2", "new-1"]);
    expect(
      ids(interleaveStage(input, makePolicy({ interleaving: { strategy: "recency_first" } })).items),
    ).toEqual(["new-1", "new-2", "new-3", "rel-3", "rel-2", "rel-1"]);
  });

  test("weighted: `ratio` score picks, then one recency pick", () => {
    const input = generateTestMemories();
    const policy = makePolicy({ interleaving: { strategy: "weighted", ratio: 2 } });
    expect(ids(interleaveStage(input, policy).items)).toEqual([
      "rel-1",
      "rel-2",
      "new-1",
      "rel-3",
      "new-3",
      "new-2",
    ]);
    const { trace } = interleaveStage(input, policy);
    expect(trace.detail).toEqual({ strategy: "weighted", ratio: 2 });
  });

  test("ties are broken by id, whatever the input order", () => {
    const a = makeItem({ id: "a", score: 0.5, timestamp: day(1) });
    const b = makeItem({ id: "b", score: 0.5, timestamp: day(1) });
    const c = makeItem({ id: "c", score: 0.5, timestamp: day(1) });
    for (const order of [
      [a, b, c],
      [c, a, b],
    ]) {
      expect(ids(interleaveStage(order, makePolicy()).items)).toEqual(["a", "b", "c"]);
    }
  });

  test("never drops or duplicates a memory", () => {
    const input = generateTestMemories();
    for (const strategy of ["alternate", "score_first", "recency_first", "weighted"] as const) {
      const out = interleaveStage(input, makePolicy({ interleaving: { strategy } })).items;
      expect(new Set(ids(out))).toEqual(new Set(ids(input)));
      expect(out).toHaveLength(input.length);
    }
  });
});
