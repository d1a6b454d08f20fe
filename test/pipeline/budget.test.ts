import { budgetStage, countTotalTokens } from "../../src/pipeline/stages/budget";
import { truncateToFit, wordCutOffsets } from "../../src/pipeline/text/graphemes";
import { getTokenizer } from "../../src/pipeline/tokenizers";
import type { StageContext, Tokenizer, WorkItem } from "../../src/pipeline/types";
import { TOKENIZERS, type TokenizerName } from "../../src/policy/schema";
import { makeItem, makePolicy } from "../helpers/items";

const segmenter = new Intl.Segmenter("en", { granularity: "grapheme" });
const graphemesOf = (text: string): string[] => Array.from(segmenter.segment(text), (s) => s.segment);

function ctxFor(tokenizer: Tokenizer): StageContext {
  return { tokenizer, redactor: { enabled: false, redact: (text) => ({ text, fired: [] }) } };
}

function run(items: WorkItem[], maxTokens: number, name: TokenizerName) {
  const tokenizer = getTokenizer(name);
  const policy = makePolicy({ tokenizer: name, retrieval: { maxTokens } });
  return { tokenizer, ...budgetStage(items, policy, ctxFor(tokenizer)) };
}

/** The cut kept only whole graphemes of the original, in order, and ended with "...". */
function expectCleanTruncation(original: string, truncated: string): void {
  expect(truncated.endsWith("...")).toBe(true);
  const prefix = truncated.slice(0, -3);
  expect(prefix.length).toBeGreaterThan(0);
  expect(original.startsWith(prefix)).toBe(true);
  const kept = graphemesOf(prefix);
  expect(graphemesOf(original).slice(0, kept.length)).toEqual(kept);
  expect(graphemesOf(truncated).slice(0, kept.length)).toEqual(kept); // the "..." merged into none
  expect(prefix).toBe(prefix.trimEnd());
}

/** Seed 000's generateLargeMemories, deterministic: mixed lengths and scripts. */
function generateLargeMemories(n: number): WorkItem[] {
  const phrases = [
    "The user prefers oat milk lattes and usually orders before the 9 a.m. stand-up.",
    "用户喜欢在早上八点喝燕麦拿铁，三月份搬到柏林。",
    "ユーザーは朝八時にオーツミルクラテを飲むのが好きです。",
    "사용자는 아침 여덟 시에 귀리 우유 라테를 좋아합니다.",
    "Family trip 👨‍👩‍👧 to Lyon 🇫🇷 was great 🎉",
    "Café crème at the re\u0301sume\u0301 workshop.",
    "המשתמש אוהב קפה עם חלב שיבולת שועל",
  ];
  return Array.from({ length: n }, (_, i) => {
    const base = phrases[i % phrases.length] ?? "";
    return makeItem({ id: `m${String(i).padStart(5, "0")}`, content: `${i}: ${base.repeat(1 + (i % 4))}` });
  });
}

describe("budgetStage: the budget holds (seed 000)", () => {
  const memories = generateLargeMemories(10_000);

  test.each(TOKENIZERS)("10,000 memories, maxTokens 1500, %s", (name) => {
    const { items, trace, tokenizer } = run(memories, 1500, name);
    const used = countTotalTokens(
      items.map((i) => i.content),
      tokenizer,
    );
    expect(used).toBeLessThanOrEqual(1500);
    expect(used).toBeGreaterThan(1400); // and it is used, not wasted
    expect(trace.detail).toEqual({ maxTokens: 1500, usedTokens: used, tokenizer: name, packing: "truncate" });
    expect(trace.in).toBe(10_000);
    expect(trace.out).toBe(items.length);
    const dropped = trace.changes.filter((c) => c.reason === "dropped_by_budget");
    const truncated = trace.changes.filter((c) => c.reason === "truncated_by_budget");
    expect(truncated.length).toBeLessThanOrEqual(1);
    expect(items.length + dropped.length).toBe(10_000);
    expect(items.map((i) => i.id)).toEqual(memories.slice(0, items.length).map((m) => m.id));
  });

  test("seed 000's own estimate (approx) is never exceeded", () => {
    const { items } = run(memories, 1500, "approx");
    expect(items.reduce((sum, m) => sum + Math.ceil(m.content.length / 4), 0)).toBeLessThanOrEqual(1500);
  });
});

describe("budgetStage: truncation and dropping", () => {
  test("everything fits: nothing changes, the same objects come back", () => {
    const input = [makeItem({ id: "a", content: "short" }), makeItem({ id: "b", content: "also short" })];
    const { items, trace } = run(input, 100, "approx");
    expect(items).toEqual(input);
    expect(items[0]).toBe(input[0]);
    expect(trace).toEqual({
      stage: "token_budget",
      in: 2,
      out: 2,
      changes: [],
      detail: { maxTokens: 100, usedTokens: 5, tokenizer: "approx", packing: "truncate" },
    });
  });

  test("a memory that fits exactly is kept whole (≤, not <)", () => {
    const input = [makeItem({ id: "a", content: "x".repeat(400) }), makeItem({ id: "b", content: "y" })];
    const { items, trace } = run(input, 100, "approx");
    expect(items.map((i) => i.content)).toEqual(["x".repeat(400)]);
    expect(trace.changes).toEqual([{ id: "b", reason: "dropped_by_budget" }]);
    expect(trace.detail?.usedTokens).toBe(100);
  });

  test("the first memory that does not fit is cut at a word and ends with '...', the rest is dropped", () => {
    const filler = "f".repeat(4 * 95); // 95 approx tokens: 5 left = 20 characters including "..."
    const input = [
      makeItem({ id: "a", content: filler }),
      makeItem({ id: "b", content: "The quick brown fox jumps over the lazy dog" }),
      makeItem({ id: "c", content: "never" }),
      makeItem({ id: "d", content: "seen" }),
    ];
    const { items, trace } = run(input, 100, "approx");
    expect(items.map((i) => i.content)).toEqual([filler, "The quick brown..."]);
    expect(trace.changes).toEqual([
      { id: "b", reason: "truncated_by_budget" },
      { id: "c", reason: "dropped_by_budget" },
      { id: "d", reason: "dropped_by_budget" },
    ]);
    expect(trace.detail?.usedTokens).toBe(100);
  });

  test("counting the '...' it adds: a cut that fits only without it is not taken", () => {
    // 6 tokens left = 24 characters: "The quick brown fox ran" (23) fits alone but not with "..." (26);
    // seed 000 would have produced 24 characters + "..." = 7 tokens.
    const input = [
      makeItem({ id: "a", content: "f".repeat(4 * 94) }),
      makeItem({ id: "b", content: "The quick brown fox ran far away" }),
    ];
    const { items } = run(input, 100, "approx");
    expect(items[1]?.content).toBe("The quick brown fox...");
  });

  test("when not even one word and '...' fit, the memory is dropped, and so is everything after it", () => {
    const input = [
      makeItem({ id: "a", content: "f".repeat(4 * 98) }), // 2 tokens left: 8 chars, a 5-char word at most
      makeItem({ id: "b", content: "Supercalifragilistic is long" }),
      makeItem({ id: "c", content: "ok" }),
    ];
    const { items, trace } = run(input, 100, "approx");
    expect(items.map((i) => i.id)).toEqual(["a"]);
    expect(trace.changes).toEqual([
      { id: "b", reason: "dropped_by_budget" },
      { id: "c", reason: "dropped_by_budget" },
    ]);
  });

  test("a cut that would keep only the speaker label and dots is no cut: the memory is dropped", () => {
    // 4 tokens left (16 characters): "Karim: ..." and the cut's "..." fit, its next word does not.
    const input = [
      makeItem({ id: "a", content: "f".repeat(4 * 96) }),
      makeItem({ id: "b", content: "Karim: ... Supercalifragilisticexpialidocious, said the beagle." }),
    ];
    const { items, trace } = run(input, 100, "approx");
    expect(items.map((i) => i.content)).toEqual(["f".repeat(4 * 96)]);
    expect(trace.changes).toEqual([{ id: "b", reason: "dropped_by_budget" }]);
    // With a word of content in reach, the cut is taken as before: the label and that word.
    const wider = run(
      [input[0] as WorkItem, makeItem({ id: "c", content: "Karim: I was there. Then more words." })],
      100,
      "approx",
    );
    expect(wider.items.map((i) => i.content)).toEqual(["f".repeat(4 * 96), "Karim: I was..."]);
  });

  test("no budget left at all: later memories are dropped, however short", () => {
    const input = [makeItem({ id: "a", content: "f".repeat(400) }), makeItem({ id: "b", content: "a b" })];
    expect(run(input, 100, "approx").trace.changes).toEqual([{ id: "b", reason: "dropped_by_budget" }]);
  });

  test("trailing whitespace is not kept before the '...'", () => {
    const input = [
      makeItem({ id: "a", content: "f".repeat(4 * 97) }), // 3 tokens left: 12 characters
      makeItem({ id: "b", content: "one   \n\t two three four five" }),
    ];
    // "one   \n\t ..." would be 12 characters; the cut steps back over the whitespace instead.
    expect(run(input, 100, "approx").items[1]?.content).toBe("one...");
  });

  test("inputs are never mutated; the truncated memory is a new object", () => {
    const input = Object.freeze([
      Object.freeze(makeItem({ id: "a", content: "f".repeat(4 * 96) })),
      Object.freeze(makeItem({ id: "b", content: "one two three four five six" })),
    ]);
    const snapshot = JSON.stringify(input);
    const { items } = run([...input], 100, "approx");
    expect(JSON.stringify(input)).toBe(snapshot);
    expect(items[1]).not.toBe(input[1]);
    expect(items[1]).toEqual({ ...input[1], content: "one two three..." });
  });

  test("same input, same output", () => {
    const input = generateLargeMemories(50);
    expect(JSON.stringify(run(input, 777, "o200k_base"))).toBe(JSON.stringify(run(input, 777, "o200k_base")));
  });
});

const MULTILINGUAL: Record<string, string> = {
  chinese: "我喜欢吃北京烤鸭和上海小笼包，每年春节都会回家和家人一起包饺子。",
  japanese: "私は東京で寿司を食べるのが好きです。週末にはカタカナの本を読みます。",
  korean: "저는 서울에서 김치찌개를 먹는 것을 좋아해요. 주말에는 한강에서 자전거를 타요.",
  hangulJamo:
    "\u1112\u1161\u11AB\u1100\u1173\u11AF \u1112\u1161\u11AB\u1100\u1173\u11AF \u1112\u1161\u11AB\u1100\u1173\u11AF",
  zwjFamilies: "👨‍👩‍👧👩‍👩‍👦‍👦👨‍👨‍👧‍👧 👨‍👩‍👧 👩🏽‍💻👩🏽‍💻👩🏽‍💻 🏳️‍🌈🏳️‍🌈",
  flags: "🇫🇷🇩🇪🇯🇵🇰🇷🇧🇷🇺🇸 🇫🇷 🇩🇪🇯🇵",
  combining:
    "e\u0301te\u0301 cafe\u0301 re\u0301sume\u0301 a\u0301\u0302\u0303 Z\u0335\u0321\u0322a\u0335l\u0336g\u0337o\u0338",
  rtl: "مرحبا بالعالم، هذا اختبار للنص العربي. שלום עולם, זה מבחן לטקסט עברי.",
  thai: "ภาษาไทยไม่มีช่องว่างระหว่างคำ แต่มีช่องว่างระหว่างประโยค",
  mixed: "Meeting 会議 at 3pm 🇯🇵 with Zoë (e\u0301) — שלום 👨‍👩‍👧 done",
};

describe("budgetStage: multilingual truncation never breaks a grapheme", () => {
  /** A filler that leaves exactly `left` tokens of `maxTokens` under `tokenizer`. */
  function fillerLeaving(tokenizer: Tokenizer, maxTokens: number, left: number): string {
    let filler = "";
    while (tokenizer.count(`${filler} z`) <= maxTokens - left) filler += " z";
    expect(tokenizer.count(filler)).toBeLessThanOrEqual(maxTokens - left);
    return filler;
  }

  for (const name of TOKENIZERS) {
    test.each(Object.keys(MULTILINGUAL))(`${name}: %s`, (script) => {
      const tokenizer = getTokenizer(name);
      const base = MULTILINGUAL[script] ?? "";
      let text = base;
      while (tokenizer.count(text) <= 60) text += base; // never fits whole in the 1–40 tokens left
      let truncations = 0;
      for (let left = 1; left <= 40; left++) {
        const filler = fillerLeaving(tokenizer, 100, left);
        const input = [makeItem({ id: "a", content: filler }), makeItem({ id: "b", content: text })];
        const { items, trace } = run(input, 100, name);
        const total = countTotalTokens(
          items.map((i) => i.content),
          tokenizer,
        );
        expect(total).toBeLessThanOrEqual(100);
        const cut = items[1];
        if (cut === undefined) {
          expect(trace.changes).toEqual([{ id: "b", reason: "dropped_by_budget" }]);
          continue;
        }
        truncations += 1;
        expect(trace.changes).toEqual([{ id: "b", reason: "truncated_by_budget" }]);
        expectCleanTruncation(text, cut.content);
        // Longest: the next cut point would not have fitted.
        const prefixLength = cut.content.length - 3;
        const next = wordCutOffsets(text, "...").find((o) => o > prefixLength);
        if (next !== undefined) {
          expect(tokenizer.count(`${text.slice(0, next)}...`)).toBeGreaterThan(100 - tokenizer.count(filler));
        }
      }
      expect(truncations).toBeGreaterThan(20);
    });
  }
});

describe("grapheme-safe word cuts", () => {
  test("latin text is cut after words, never inside one, never after a space", () => {
    const text = "Hello, big  world!";
    expect(wordCutOffsets(text).map((o) => text.slice(0, o))).toEqual([
      "Hello",
      "Hello,",
      "Hello, big",
      "Hello, big  world",
      "Hello, big  world!",
    ]);
  });

  test("Chinese and Japanese may be cut after any character", () => {
    expect(wordCutOffsets("北京烤鸭。")).toEqual([1, 2, 3, 4, 5]);
    expect(wordCutOffsets("食べる")).toEqual([1, 2, 3]);
  });

  test.each([
    ["emoji ZWJ family", "👨‍👩‍👧👨‍👩‍👧", ["👨‍👩‍👧", "👨‍👩‍👧👨‍👩‍👧"]],
    ["flags", "🇫🇷🇩🇪", ["🇫🇷", "🇫🇷🇩🇪"]],
    ["combining mark", "e\u0301 e\u0301", ["e\u0301", "e\u0301 e\u0301"]],
    [
      "Hangul jamo syllables",
      "\u1112\u1161\u11AB \u1100\u1173\u11AF",
      ["\u1112\u1161\u11AB", "\u1112\u1161\u11AB \u1100\u1173\u11AF"],
    ],
    ["surrogate pairs", "𝒳𝒴 𝒵", ["𝒳𝒴", "𝒳𝒴 𝒵"]],
  ])("%s stay whole", (_label, text, prefixes) => {
    expect(wordCutOffsets(text).map((o) => text.slice(0, o))).toEqual(prefixes);
  });

  test("a 'Prepend' character never absorbs the '...'", () => {
    // U+0600 ARABIC NUMBER SIGN joins the next grapheme: "\u0600..." would turn "\u0600" into "\u0600.".
    const text = "ab \u0600\ncd";
    const out = truncateToFit(text, "...", (candidate) => candidate.length <= 7);
    expect(out).toBe("ab...");
  });

  test("truncateToFit returns undefined when nothing fits, and only tested candidates", () => {
    expect(truncateToFit("hello world", "...", () => false)).toBeUndefined();
    expect(truncateToFit("", "...", () => true)).toBeUndefined();
    const tested: string[] = [];
    const out = truncateToFit("a b c d e f g h", "...", (c) => {
      tested.push(c);
      return c.length <= 8;
    });
    expect(out).toBe("a b c...");
    expect(tested).toContain(out);
    expect(tested.length).toBeLessThanOrEqual(4); // log2(8 cuts) + 1
  });

  test("a non-monotone count still yields a candidate that fits", () => {
    // Pretend counts dip and rise: only some prefixes "fit"; whatever is returned must fit.
    const fits = (c: string) => c.length % 3 === 0 && c.length < 14;
    const out = truncateToFit("a b c d e f g h", "...", fits);
    expect(out === undefined || fits(out)).toBe(true);
  });
});
