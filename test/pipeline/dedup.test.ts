import fc from "fast-check";
import { dedupStage } from "../../src/pipeline/stages/dedup";
import { normalizeAndHash, normalizedKey, normalizeForHash } from "../../src/pipeline/text/hash";
import type { WorkItem } from "../../src/pipeline/types";
import { makeItem, makePolicy } from "../helpers/items";

describe("normalizeAndHash", () => {
  test("is 16 hex characters of SHA-256", () => {
    expect(normalizeAndHash("Hello world")).toMatch(/^[0-9a-f]{16}$/);
  });

  test("ignores case, compatibility forms, whitespace runs and boundary punctuation", () => {
    const h = normalizeAndHash("Ana is allergic to peanuts.");
    expect(normalizeAndHash("  ana   is allergic\tto PEANUTS!!")).toBe(h);
    expect(normalizeAndHash("\u201cAna is allergic to peanuts\u201d")).toBe(h);
    expect(normalizeAndHash("Ａｎａ is allergic to peanuts")).toBe(h); // full-width letters (NFKC)
    expect(normalizeAndHash("Ana is allergic to walnuts.")).not.toBe(h);
  });

  test("keeps non-Latin text: seed 000's ASCII \\w would strip all of it and merge every CJK memory", () => {
    expect(normalizeForHash("我喜欢咖啡。")).toBe("我喜欢咖啡");
    expect(normalizeAndHash("我喜欢咖啡。")).not.toBe(normalizeAndHash("我每天喝茶。"));
    expect(normalizeAndHash("커피를 좋아해요.")).not.toBe(normalizeAndHash("차를 좋아해요."));
    expect(normalizeAndHash("مرحبا بالعالم")).not.toBe(normalizeAndHash("שלום עולם"));
    // Seed 000's regex really does collapse them:
    const seed = (t: string) =>
      t
        .toLowerCase()
        .normalize("NFKC")
        .replace(/\s+/g, " ")
        .trim()
        .replace(/^[^\w]+|[^\w]+$/g, "");
    expect(seed("我喜欢咖啡。")).toBe(seed("我每天喝茶。"));
  });

  test("emoji are content, not punctuation", () => {
    expect(normalizeAndHash("👍")).not.toBe(normalizeAndHash("❤️"));
  });

  test("combining marks and precomposed forms hash alike (NFKC)", () => {
    expect(normalizeAndHash("caf\u0065\u0301")).toBe(normalizeAndHash("caf\u00e9"));
  });
});

describe("normalizedKey", () => {
  test("is normalizeForHash, read from the cache or not", () => {
    fc.assert(
      fc.property(fc.string({ unit: "grapheme", maxLength: 60 }), fc.string({ maxLength: 20 }), (a, b) => {
        const text = `${a} ${b}`;
        expect(normalizedKey(text)).toBe(normalizeForHash(text));
        // A fresh string with the same contents hits the cache.
        expect(normalizedKey(`${a} ${b}`)).toBe(normalizeForHash(text));
      }),
      { numRuns: 500 },
    );
  });
});

describe("dedupStage", () => {
  const policy = makePolicy();

  test("groups as a Map keyed by the normalized text would, however many texts share a length", () => {
    // The grouping as written before: one Map keyed by the normalized text.
    const reference = (items: WorkItem[]) => {
      const winners = new Map<string, WorkItem>();
      const losers: Array<{ item: WorkItem; key: string }> = [];
      for (const item of items) {
        const key = normalizeForHash(item.content);
        const current = winners.get(key);
        const wins =
          current === undefined ||
          (item.score !== current.score
            ? item.score > current.score
            : item.timeMs !== current.timeMs
              ? item.timeMs > current.timeMs
              : item.id < current.id);
        if (current === undefined || wins) winners.set(key, item);
        if (current !== undefined) losers.push(wins ? { item: current, key } : { item, key });
      }
      return {
        winners: [...winners.values()].map((i) => i.id),
        changes: losers.map(({ item, key }) => ({
          id: item.id,
          reason: `duplicate_of:${winners.get(key)?.id}`,
        })),
      };
    };
    // Texts of one normalized length (many more than a length's list holds before it gets a Map) and others.
    const pool = [
      ...Array.from({ length: 20 }, (_, i) => `note ${String(i).padStart(2, "0")}`),
      "NOTE 03",
      " note 07!",
      "x",
      "X",
      "longer text",
      // Non-ASCII texts whose normal form is an ASCII one's (full-width letters, a no-break space), and one not.
      "ＮＯＴＥ 03",
      "note\u00a007",
      "note 07 é",
      "\t(note  11)…",
    ];
    const wide = makePolicy({ retrieval: { topK: 20 }, budget: { fill: true, maxMemories: 50 } });
    // Up to 128 candidates the stage reads every group's length in turn; above, it keeps lists and Maps by length.
    for (const size of [
      { minLength: 0, maxLength: 40 },
      { minLength: 129, maxLength: 160 },
    ])
      fc.assert(
        fc.property(
          fc.array(fc.record({ c: fc.constantFrom(...pool), score: fc.constantFrom(0.2, 0.5, 0.9) }), size),
          (picks) => {
            const items = picks.map((p, i) =>
              makeItem({ id: `m${String(i).padStart(2, "0")}`, content: p.c, score: p.score }),
            );
            const expected = reference(items);
            const { items: out, trace } = dedupStage(items, wide);
            // At most 29 groups: every group's winner is kept (topK 20, then reserve up to 50).
            expect(new Set(out.map((o) => o.id))).toEqual(new Set(expected.winners));
            expect(trace.changes.filter((c) => c.reason.startsWith("duplicate_of:"))).toEqual(
              expected.changes,
            );
          },
        ),
        { numRuns: 500 },
      );
  });

  test("seed 000: 'Hello world', 'Hello world', 'HELLO WORLD' → 1", () => {
    const input = [
      makeItem({ id: "1", content: "Hello world" }),
      makeItem({ id: "2", content: "Hello world" }),
      makeItem({ id: "3", content: "HELLO WORLD" }),
    ];
    const { items } = dedupStage(input, policy);
    expect(items).toHaveLength(1);
  });

  test("the highest score wins, then the newer, then the smaller id", () => {
    const byScore = dedupStage(
      [makeItem({ id: "a", content: "x y", score: 0.4 }), makeItem({ id: "b", content: "X Y", score: 0.9 })],
      policy,
    );
    expect(byScore.items.map((i) => i.id)).toEqual(["b"]);
    expect(byScore.trace.changes).toEqual([{ id: "a", reason: "duplicate_of:b" }]);

    const byTime = dedupStage(
      [
        makeItem({ id: "a", content: "x y", timestamp: "2026-02-01T00:00:00Z" }),
        makeItem({ id: "b", content: "x y", timestamp: "2026-01-01T00:00:00Z" }),
      ],
      policy,
    );
    expect(byTime.items.map((i) => i.id)).toEqual(["a"]);

    const byId = dedupStage(
      [makeItem({ id: "z", content: "x y" }), makeItem({ id: "c", content: "x y" })],
      policy,
    );
    expect(byId.items.map((i) => i.id)).toEqual(["c"]);
    expect(byId.trace.changes).toEqual([{ id: "z", reason: "duplicate_of:c" }]);
  });

  test("the winner does not depend on input order", () => {
    const a = makeItem({ id: "a", content: "same", score: 0.7 });
    const b = makeItem({ id: "b", content: "SAME", score: 0.7 });
    const c = makeItem({ id: "c", content: "same!", score: 0.7 });
    for (const order of [
      [a, b, c],
      [c, b, a],
      [b, c, a],
    ]) {
      expect(dedupStage(order, policy).items.map((i) => i.id)).toEqual(["a"]);
    }
  });

  test("keeps the best topK by score (ties by id) and reports the rest as beyond_topK", () => {
    const input = [0.9, 0.5, 0.7, 0.7, 0.3].map((score, i) =>
      makeItem({ id: `m${i}`, score, content: `c${i}` }),
    );
    const { items, trace } = dedupStage(input, makePolicy({ retrieval: { topK: 3 } }));
    expect(items.map((i) => i.id)).toEqual(["m0", "m2", "m3"]);
    expect(trace.changes).toEqual([
      { id: "m1", reason: "beyond_topK" },
      { id: "m4", reason: "beyond_topK" },
    ]);
    expect(trace).toMatchObject({ stage: "deduplication", in: 5, out: 3 });
  });

  test("does not mutate its input", () => {
    const input = [makeItem({ id: "b", score: 0.1 }), makeItem({ id: "a", score: 0.9 })];
    const copy = structuredClone(input);
    dedupStage(input, policy);
    expect(input).toEqual(copy);
  });
});
