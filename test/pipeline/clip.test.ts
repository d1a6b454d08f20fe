import { clipContent, clipStage } from "../../src/pipeline/stages/clip";
import type { StageContext, WorkItem } from "../../src/pipeline/types";
import { makeItem, makePolicy } from "../helpers/items";

const ctx: StageContext = {
  redactor: { enabled: false, redact: (text) => ({ text, fired: [] }) },
  tokenizer: { name: "approx", count: (text) => Math.ceil(text.length / 4) },
};

describe("clipContent", () => {
  test.each<[string, number, string, boolean]>([
    ["Ant. Bee. Cat.", 2, "Ant. Bee....", true],
    ["Ant. Bee. Cat.", 1, "Ant....", true],
    ["Ant. Bee.", 2, "Ant. Bee.", false],
    ["Ant. Bee.", 5, "Ant. Bee.", false],
    ["One sentence without end", 1, "One sentence without end", false],
    ["", 1, "", false],
    ["Dr. Smith came at 3 p.m. today. He left. Bye.", 1, "Dr. Smith came at 3 p.m. today....", true],
    ["Why? Because. Fine.", 1, "Why?...", true],
    // The original whitespace between kept sentences becomes one space.
    ["One.\n\n  Two\nstill two. Three.", 2, "One.\n\n  Two\nstill two....", true],
    ["Title\n\nBody. More.", 2, "Title\n\nBody....", true],
    // No space is inserted where the original had none.
    ["我喜欢咖啡。我每天早上喝一杯。你呢？", 2, "我喜欢咖啡。我每天早上喝一杯。...", true],
    // No doubled ellipsis.
    ["Well... We left. Then rain.", 1, "Well...", true],
    ["Hmm… Later then. Bye.", 1, "Hmm…", true],
    // Inner text is kept verbatim.
    ["Cafe\u0301  au   lait. 😀 Next.", 1, "Cafe\u0301  au   lait....", true],
  ])("%j to %i sentence(s)", (text, max, content, clipped) => {
    expect(clipContent(text, max)).toEqual({ content, clipped });
  });

  test("single-letter initials are not sentences", () => {
    expect(clipContent("J. R. R. Tolkien wrote it. Then he slept.", 1).content).toBe(
      "J. R. R. Tolkien wrote it....",
    );
  });

  test("a limit below 1 or not finite is treated as 1", () => {
    expect(clipContent("Ant. Bee.", 0).content).toBe("Ant....");
    expect(clipContent("Ant. Bee.", Number.NaN).content).toBe("Ant....");
    expect(clipContent("Ant. Bee. Cat.", 2.9).content).toBe("Ant. Bee....");
  });

  test("returns the same string when nothing is clipped", () => {
    const text = "  Spaced  out.\n\n";
    expect(clipContent(text, 2).content).toBe(text);
  });
});

describe("clipStage", () => {
  const policy = makePolicy({ retrieval: { clipSentences: 2 } });

  test("clips, records originalLength on every item and traces only clipped ones", () => {
    const long = "First one. Second one. Third one.";
    const input = [
      makeItem({ id: "a", content: long }),
      makeItem({ id: "b", content: "Short. Fine." }),
      makeItem({ id: "c", content: "我喜欢咖啡。我每天早上喝一杯。你呢？" }),
    ];
    const { items, trace } = clipStage(input, policy, ctx);
    expect(items.map((i) => [i.id, i.content, i.originalLength])).toEqual([
      ["a", "First one. Second one....", long.length],
      ["b", "Short. Fine.", 12],
      ["c", "我喜欢咖啡。我每天早上喝一杯。...", 18],
    ]);
    expect(trace).toEqual({
      stage: "clip",
      in: 3,
      out: 3,
      changes: [
        { id: "a", reason: "clipped" },
        { id: "c", reason: "clipped" },
      ],
      detail: { clipSentences: 2, mode: "leading" },
    });
  });

  test("originalLength counts UTF-16 code units of the content before clipping", () => {
    const content = "😀😀. Next one. Last.";
    const { items } = clipStage(
      [makeItem({ id: "e", content })],
      makePolicy({ retrieval: { clipSentences: 1 } }),
      ctx,
    );
    expect(items[0]?.originalLength).toBe(21);
    expect(items[0]?.content).toBe("😀😀....");
  });

  test("keeps order, keeps every other field, and never mutates its input", () => {
    const input: WorkItem[] = [
      makeItem({ id: "z", content: "Ant. Bee. Cat.", score: 0.9, role: "user", type: "message" }),
      makeItem({ id: "y", content: "Only one." }),
    ];
    const snapshot = structuredClone(input);
    Object.freeze(input);
    for (const item of input) Object.freeze(item);
    const { items } = clipStage(input, policy, ctx);
    expect(input).toEqual(snapshot);
    expect(items).not.toBe(input);
    expect(items[0]).not.toBe(input[0]);
    expect(items[0]).toEqual({ ...snapshot[0], content: "Ant. Bee....", originalLength: 14 });
    expect(items[1]).toEqual({ ...snapshot[1], originalLength: 9 });
  });

  test("respects clipSentences 1 to 5", () => {
    const text = "S1. S2. S3. S4. S5. S6.";
    const clipped = [1, 2, 3, 4, 5].map(
      (n) =>
        clipStage(
          [makeItem({ id: "x", content: text })],
          makePolicy({ retrieval: { clipSentences: n } }),
          ctx,
        ).items[0]?.content,
    );
    expect(clipped).toEqual([
      "S1....",
      "S1. S2....",
      "S1. S2. S3....",
      "S1. S2. S3. S4....",
      "S1. S2. S3. S4. S5....",
    ]);
  });

  test("an empty list gives an empty trace", () => {
    expect(clipStage([], policy, ctx)).toEqual({
      items: [],
      trace: { stage: "clip", in: 0, out: 0, changes: [], detail: { clipSentences: 2, mode: "leading" } },
    });
  });
});
