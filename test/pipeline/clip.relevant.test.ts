/**
 * `clip.mode: relevant` (docs/policy.md#clip): the N sentences that best match the query, in their original
 * order, verbatim, with "..." where sentences were left out.
 */
import fc from "fast-check";
import { runPipeline } from "../../src/pipeline";
import { clipStage, effectiveScores, OMISSION, selectSentences } from "../../src/pipeline/stages/clip";
import {
  queryTermsForRelevance,
  relevanceQuery,
  relevanceTerms,
  scoreSentences,
} from "../../src/pipeline/text/relevance";
import { sentenceSpans } from "../../src/pipeline/text/sentences";
import type { WorkItem } from "../../src/pipeline/types";
import { compilePolicy } from "../../src/policy/compile";
import { makeItem, makePolicy } from "../helpers/items";
import { expectRedactedAgain, phoneRedactor } from "../helpers/redacted-again";

const relevant = (n: number) => makePolicy({ retrieval: { clipSentences: n }, clip: { mode: "relevant" } });

function clip(
  texts: string[],
  query: string,
  n = 2,
): { contents: string[]; stage: ReturnType<typeof clipStage> } {
  const items = texts.map((content, i) => makeItem({ id: `m${i}`, content }));
  const stage = clipStage(items, relevant(n), undefined, query);
  return { contents: stage.items.map((i) => i.content), stage };
}

describe("relevance terms", () => {
  test("case, width and English inflection fold; CJK becomes bigrams; terms are cut to six characters", () => {
    expect(relevanceTerms("Weddings, WEDDING and ｗｅｄｄｉｎｇ")).toEqual(["wed", "wed", "and", "wed"]);
    expect(relevanceTerms("我每天喝咖啡")).toEqual(["我每", "每天", "天喝", "喝咖", "咖啡"]);
    expect(relevanceTerms("커피를 마셔요")).toEqual(["커피", "피를", "마셔", "셔요"]);
    expect(relevanceTerms("Die Wohnung in München")).toEqual(["die", "wohnun", "in", "münche"]);
    // The cut is a light stemmer for languages without one: Spanish, French and German inflections meet.
    expect(relevanceTerms("adoptamos adoptado")).toEqual(["adopta", "adopta"]);
    expect(relevanceTerms("inscription inscrite")).toEqual(["inscri", "inscri"]);
    expect(relevanceTerms("Geburtstag Geburtstags")).toEqual(["geburt", "geburt"]);
    // The cut never leaves half a surrogate pair (Gothic letters are astral).
    expect(relevanceTerms("a𐌰𐌱𐌲𐌳")).toEqual(["a𐌰𐌱𐌲"]);
    expect(relevanceTerms("v1.2 costs $3.50")).toEqual(["v1", "2", "cost", "3", "50"]);
  });

  test("the query keeps its content words once, in order; a query of stopwords only is kept whole", () => {
    expect(queryTermsForRelevance("What did the vet say about my cat's weight? The VET!")).toEqual([
      "vet",
      "say",
      "cat",
      "weight",
    ]);
    expect(queryTermsForRelevance("who am I?")).toEqual(["who", "am", "i"]);
    // Stopwords are told by the stem before the cut: "shoulder" is cut to "should" and stays.
    expect(queryTermsForRelevance("why does my shoulder hurt")).toEqual(["should", "hurt"]);
    expect(queryTermsForRelevance("what was the throughput of the service")).toEqual(["throug", "servic"]);
    expect(queryTermsForRelevance("should my shoulder hurt")).toEqual(["should", "hurt"]);
    expect(queryTermsForRelevance("  ")).toEqual([]);
  });

  test("BM25 over the candidates' sentences: rarer query words weigh more, no match scores 0", () => {
    const docs = [
      "Biscuit ate well. Biscuit slept. The vet said Biscuit is fine.",
      "Biscuit chased a bird.",
    ].map((text) => ({ text, sentences: sentenceSpans(text) }));
    const [first, second] = scoreSentences(docs, queryTermsForRelevance("vet Biscuit"));
    expect(first?.map((s) => s.matched)).toEqual([[1], [1], [0, 1]]);
    expect(second?.[0]?.matched).toEqual([1]);
    // "vet" is in 1 sentence of 4, "biscuit" in all 4: the vet sentence wins by far.
    const scores = first?.map((s) => s.score) ?? [];
    expect(scores[2]).toBeGreaterThan(5 * (scores[0] ?? 0));
    expect(scoreSentences(docs, ["zebra"])[0]?.every((s) => s.score === 0 && s.matched.length === 0)).toBe(
      true,
    );
  });
});

describe("selectSentences", () => {
  const s = (...scores: number[]) => scores;

  test("the best N by effective score (own + half the previous one's), in the original order; ties: the earlier", () => {
    // effective: 0, 3, 2.5, 5.5, 2.5
    expect(selectSentences(s(0, 3, 1, 5, 0), 2).map((k) => [k.sentence, k.why, k.score])).toEqual([
      [1, "match", 3],
      [3, "match", 5.5],
    ]);
    // effective: 2, 3, 3, 3 — the sentences after a match gain; ties go to the earlier.
    expect(selectSentences(s(2, 2, 2, 2), 2).map((k) => k.sentence)).toEqual([1, 2]);
    // effective: 0, 2, 1, 2, 3
    expect(selectSentences(s(0, 2, 0, 2, 2), 2).map((k) => k.sentence)).toEqual([1, 4]);
    // A sentence that matches nothing itself but follows a strong match beats a weak match: "context".
    expect(selectSentences(s(6, 0, 0, 1), 2).map((k) => [k.sentence, k.why, k.score])).toEqual([
      [0, "match", 6],
      [1, "context", 3],
    ]);
  });

  test("fewer matches than N: the sentence after a match, then the one before; none: the first N", () => {
    expect(selectSentences(s(0, 0, 4, 0, 0), 2).map((k) => [k.sentence, k.why])).toEqual([
      [2, "match"],
      [3, "context"],
    ]);
    expect(selectSentences(s(0, 0, 0, 0, 4), 3).map((k) => [k.sentence, k.why])).toEqual([
      [2, "context"],
      [3, "context"],
      [4, "match"],
    ]);
    expect(selectSentences(s(0, 0, 0, 0), 2).map((k) => [k.sentence, k.why])).toEqual([
      [0, "leading"],
      [1, "leading"],
    ]);
  });
});

describe("clipStage, relevant mode", () => {
  const vet =
    "Hi again! Busy week at the hospital, three night shifts in a row. Anyway, about Biscuit. " +
    "I finally took him to the new vet on Elm Street, Dr. Okafor. She thinks the limp is a sprain. " +
    "We go back on Friday.";

  test("keeps the answer that seed 000's first-two-sentence clip cuts", () => {
    const leading = clipStage([makeItem({ id: "a", content: vet })], makePolicy()).items[0]?.content;
    expect(leading).toBe("Hi again! Busy week at the hospital, three night shifts in a row....");
    const { contents } = clip([vet], "what was the name of Biscuit's new vet?");
    expect(contents[0]).toBe(
      "... Anyway, about Biscuit. I finally took him to the new vet on Elm Street, Dr. Okafor. ...",
    );
  });

  test("explain names the kept sentences, why, their scores and the query terms they hold", () => {
    const { stage } = clip([vet, "Biscuit likes tuna."], "what was the name of Biscuit's new vet?");
    expect(stage.trace.detail).toEqual({ clipSentences: 2, mode: "relevant", queryTerms: 4 });
    expect(stage.trace.changes).toEqual([
      {
        id: "m0",
        reason: "clipped",
        sentences: {
          total: 6,
          kept: [
            { sentence: 3, why: "match", score: expect.any(Number), terms: ["biscui"] },
            { sentence: 4, why: "match", score: expect.any(Number), terms: ["new", "vet"] },
          ],
        },
      },
    ]);
  });

  test("runs of adjacent sentences are one slice (line breaks kept); gaps and cut ends get ' ... '", () => {
    const text = "One apple.\n\nTwo pears. Three plums. Four apples! Five kiwis.";
    expect(clip([text], "apples", 2).contents[0]).toBe(`One apple.${OMISSION}Four apples! ...`);
    expect(clip([text], "pears plums", 2).contents[0]).toBe("... Two pears. Three plums. ...");
    expect(clip([text], "kiwis", 2).contents[0]).toBe("... Four apples! Five kiwis.");
  });

  test("a memory with at most N sentences, an empty query or one of no content words: as before", () => {
    expect(clip(["Short. Fine."], "fine", 2).contents[0]).toBe("Short. Fine.");
    const long = "First one. Second one. Third one.";
    expect(clip([long], "", 2).contents[0]).toBe("First one. Second one....");
    expect(clip([long], "   ", 2).stage.trace.detail).toEqual({ clipSentences: 2, mode: "leading" });
    // No sentence matches: the first N, marked like any relevant clip.
    expect(clip([long], "zebra", 2).contents[0]).toBe("First one. Second one. ...");
  });

  test("CJK: bigrams match without spaces; full-width terminators split", () => {
    const text = "今天很忙。我去了超市。我买了咖啡豆和牛奶。晚上看了电影。";
    expect(clip([text], "我买了什么咖啡？", 1).contents[0]).toBe("... 我买了咖啡豆和牛奶。 ...");
  });

  test("the query's IDF comes from the candidate set: a word every memory repeats weighs little", () => {
    const memories = [
      "Biscuit ate. Biscuit napped. Biscuit played. The groomer trimmed his claws.",
      "Biscuit is a cat. Biscuit is orange.",
    ];
    expect(clip(memories, "Biscuit groomer", 1).contents[0]).toBe("... The groomer trimmed his claws.");
  });

  test("appliedFilters names the mode; originalLength is the length before clipping", () => {
    const compiled = compilePolicy(relevant(1));
    const result = runPipeline(
      {
        userId: "u",
        query: "plums",
        backend: "t",
        candidates: [
          {
            id: "a",
            content: "Apples. Plums. Pears.",
            score: 0.9,
            timestamp: "2026-01-01T00:00:00Z",
            sessionId: "s",
            type: "fact",
          },
        ],
      },
      compiled,
    );
    expect(result.appliedFilters).toContain("clip:relevant");
    expect(result.memories[0]?.content).toBe("... Plums. ...");
    expect(result.memories[0]?.provenance.originalLength).toBe(21);
  });

  test("joined sentences are redacted again: a phone word brought next to a number (found by the pipeline property test)", () => {
    // On the whole text "Call" is on another line than 100-01-0001, so the phone detector rightly does not fire;
    // the clip joins the first and the last sentence on one line, where it would. runPipeline redacts what a
    // stage rewrote (src/pipeline/stages/redact.ts redactRewritten).
    const policy = makePolicy({
      retrieval: { clipSentences: 2 },
      clip: { mode: "relevant" },
      redaction: { enabled: true, detectors: ["phone"] },
    });
    const content =
      "旅行 and and and and and 100-01-0001\n\n我喜欢喝茶。 Call me later!and and 旅行 and and ";
    expect(phoneRedactor().redact(content).fired).toEqual([]);
    const item = makeItem({ id: "m0", content });
    const joined = clipStage([item], policy, undefined, "茶 旅行").items[0]?.content ?? "";
    expect(joined).toContain("100-01-0001 ... Call me");

    const result = runPipeline(
      {
        userId: "u",
        query: "茶 旅行",
        backend: "t",
        candidates: [
          { ...item, score: 0.9, timestamp: "2026-01-01T00:00:00Z", sessionId: "s", type: "fact" },
        ],
        explain: true,
      },
      compilePolicy(policy),
    );
    expectRedactedAgain(result, "clip", ["clipped", "redacted:phone"], joined);
  });
});

// ---- properties ----------------------------------------------------------------------------------------

const WORDS = [
  "vet",
  "Biscuit",
  "coffee",
  "Lisbon",
  "wedding",
  "the",
  "a",
  "Dr.",
  "3.5",
  "咖啡",
  "旅行",
  "🙂",
];
const sentence = fc
  .tuple(
    fc.array(fc.constantFrom(...WORDS, "and", "we", "went", "to"), { minLength: 1, maxLength: 8 }),
    fc.constantFrom(".", "!", "?", "。", "...", "…"),
  )
  .map(([w, end]) => w.join(" ") + end);
const text = fc.oneof(
  {
    weight: 4,
    arbitrary: fc
      .array(fc.tuple(sentence, fc.constantFrom(" ", "  ", "\n", "\n\n")), { maxLength: 9 })
      .map((p) => p.map(([s, j]) => s + j).join("")),
  },
  { weight: 1, arbitrary: fc.string({ unit: "grapheme", maxLength: 120 }) },
);
const query = fc
  .array(fc.constantFrom(...WORDS, "what", "did", "I", "say"), { maxLength: 5 })
  .map((w) => w.join(" "));
const params = { numRuns: 300 };

/**
 * Reads a relevant-mode output back against its input: an optional "... ", then each kept run as the input's
 * own slice, " ... " between runs, an optional " ..." — nothing else. Returns false on any other byte.
 */
function readsBack(input: string, output: string, kept: readonly number[]): boolean {
  const spans = sentenceSpans(input);
  let pos = 0;
  let i = 0;
  while (i < kept.length) {
    let j = i;
    while (j + 1 < kept.length && (kept[j + 1] ?? 0) === (kept[j] ?? 0) + 1) j++;
    const slice = input.slice(spans[kept[i] ?? 0]?.start ?? 0, spans[kept[j] ?? 0]?.end ?? 0);
    const gap = i === 0 ? ((kept[0] ?? 0) > 0 ? "... " : "") : OMISSION;
    if (!output.startsWith(gap + slice, pos)) return false;
    pos += gap.length + slice.length;
    i = j + 1;
  }
  const rest = output.slice(pos);
  return rest === "" || rest === " ...";
}

describe("relevant clipping properties", () => {
  test("at most N sentences, in their original order, each verbatim; deterministic; input untouched", () => {
    fc.assert(
      fc.property(
        fc.array(text, { minLength: 1, maxLength: 6 }),
        query,
        fc.integer({ min: 1, max: 5 }),
        (texts, q, n) => {
          const items: WorkItem[] = texts.map((content, i) => makeItem({ id: `m${i}`, content }));
          const snapshot = JSON.stringify(items);
          const policy = relevant(n);
          const first = clipStage(items, policy, undefined, q);
          expect(JSON.stringify(clipStage(items, policy, undefined, q))).toBe(JSON.stringify(first));
          expect(JSON.stringify(items)).toBe(snapshot);
          const changed = new Map(first.trace.changes.map((c) => [c.id, c]));
          first.items.forEach((out, i) => {
            const input = texts[i] ?? "";
            const change = changed.get(out.id);
            expect(out.originalLength).toBe(input.length);
            if (change === undefined) {
              expect(out.content).toBe(input);
              return;
            }
            const total = sentenceSpans(input).length;
            if (change.sentences === undefined) return; // leading mode (no content word in the query)
            // The trace numbers sentences from 1.
            const kept = change.sentences.kept.map((k) => k.sentence - 1);
            expect(change.sentences.total).toBe(total);
            expect(kept.length).toBe(n);
            expect(total).toBeGreaterThan(n);
            expect(kept).toEqual([...kept].sort((a, b) => a - b));
            expect(new Set(kept).size).toBe(kept.length);
            expect(readsBack(input, out.content, kept)).toBe(true);
          });
        },
      ),
      params,
    );
  });

  test("the kept matches are the best-scoring sentences (ties: the earlier one)", () => {
    fc.assert(
      fc.property(text, query, fc.integer({ min: 1, max: 3 }), (t, q, n) => {
        const terms = queryTermsForRelevance(q);
        const spans = sentenceSpans(t);
        const [scores = []] = scoreSentences([{ text: t, sentences: spans }], terms);
        const kept = selectSentences(
          scores.map((x) => x.score),
          n,
        );
        const effective = effectiveScores(scores);
        const matches = kept.filter((k) => k.why !== "context" || (effective[k.sentence] ?? 0) > 0);
        const worst = matches.reduce((m, k) => Math.min(m, k.score), Number.POSITIVE_INFINITY);
        effective.forEach((e, i) => {
          if (kept.some((k) => k.sentence === i)) return;
          if (matches.length === 0) expect(e).toBe(0);
          else expect(e).toBeLessThanOrEqual(worst);
        });
        expect(kept.length).toBe(Math.min(n, spans.length));
        // Ties go to the earlier sentence; with free slots left, nothing that matches is left out.
        effective.forEach((e, i) => {
          if (kept.some((k) => k.sentence === i) || e === 0) return;
          expect(matches.length).toBe(n);
          if (e === worst) {
            for (const k of matches) if (k.score === worst) expect(k.sentence).toBeLessThan(i);
          }
        });
      }),
      params,
    );
  });
});

describe("the scorer's shortcuts change nothing", () => {
  const word = fc.oneof(
    fc.stringMatching(/^[a-zA-Z]{1,12}$/),
    fc.constantFrom(
      "dying",
      "lying",
      "tying",
      "Die",
      "LIE",
      "ties",
      "happily",
      "happy",
      "y",
      "ye",
      "sky",
      "skis",
    ),
    fc.constantFrom("咖啡", "我喝咖啡", "Müller", "ｃｏｆｆｅｅ", "café", "3.5", "v2", "don’t", "…", "—"),
    // Function words that make a query French, Spanish or German, and words Snowball stems (accents and
    // umlauts dropped, "ß" → "ss").
    fc.constantFrom(
      "la",
      "le",
      "du",
      "el",
      "qué",
      "die",
      "der",
      "wann",
      "frères",
      "Häuser",
      "Straße",
      "perros",
    ),
  );
  const sentenceOf = fc
    .tuple(fc.array(word, { minLength: 1, maxLength: 12 }), fc.constantFrom(".", "!", "?", "。"))
    .map(([w, end]) => w.join(" ") + end);
  const textOf = fc.array(sentenceOf, { minLength: 1, maxLength: 6 }).map((s) => s.join(" "));

  test("Porter2 keeps the first two letters of every word but dying, lying, tying and one-letter stems", () => {
    const { stem } = require("porter2") as { stem: (w: string) => string };
    // The exceptions the scorer's prefix table allows for, found by search: a vowel before "ed"/"ing".
    expect(["oed", "aeds", "eing", "ieds"].map((w) => stem(w))).toEqual(["o", "a", "e", "i"]);
    fc.assert(
      fc.property(
        fc.oneof(fc.stringMatching(/^[a-z]{2,14}$/), fc.stringMatching(/^[a-z][aeiou](ed|ing|eds|edly)$/)),
        (w) => {
          const s = stem(w);
          if (["dying", "lying", "tying"].includes(w) || s.length < 2) return;
          expect(s.slice(0, 2)).toBe(w.slice(0, 2));
        },
      ),
      { numRuns: 2000 },
    );
  });

  test("words whose term count NFKC changes (Hangul jamo, kana digraphs) are read in full, not counted raw", () => {
    // With a non-ASCII query term every word is read in full; with an ASCII-only query all-CJK words are only
    // counted. A term matching nothing changes no score, so both must score alike.
    for (const odd of ["ㄱㅏㄱㅏㄱㅏㄱㅏ", "\u1100\u1161\u1100\u1161\u1100\u1161", "ゟゟゟ", "ﾡﾢﾡﾢ"]) {
      const texts = [`my cat ${odd}. The cat sat. A dog.`, "The cat sat on the mat. Nothing else."];
      const docs = texts.map((text) => ({ text, sentences: sentenceSpans(text) }));
      const ascii = scoreSentences(docs, ["cat"]);
      const full = scoreSentences(docs, ["cat", "zzü"]);
      expect([odd, ascii.map((m) => m.map((x) => x.score))]).toEqual([
        odd,
        full.map((m) => m.map((x) => x.score)),
      ]);
    }
  });

  test("Snowball (French, Spanish, German) keeps the first two letters of every plain ASCII word", () => {
    const stemmers = ["french", "spanish", "german"].map(
      (l) => (require(`@orama/stemmers/${l}`) as { stemmer: (w: string) => string }).stemmer,
    );
    fc.assert(
      fc.property(fc.stringMatching(/^[a-z][a-z0-9]{2,13}$/), (w) => {
        for (const stem of stemmers) expect(stem(w).slice(0, 2)).toBe(w.slice(0, 2));
      }),
      { numRuns: 2000 },
    );
  });

  test("a one-letter query term still finds the words that stem to it", () => {
    const docs = [{ text: "They aed. Nothing else.", sentences: sentenceSpans("They aed. Nothing else.") }];
    expect(scoreSentences(docs, ["a"])[0]?.map((s) => s.matched)).toEqual([[0], []]);
  });

  test("scores equal those of reading every word in full", () => {
    fc.assert(
      fc.property(
        fc.array(textOf, { minLength: 1, maxLength: 4 }),
        fc.array(word, { maxLength: 5 }),
        (texts, q) => {
          // In the query's language: English words with Porter2, French, Spanish or German with Snowball.
          const { terms, language } = relevanceQuery(q.join(" "));
          const docs = texts.map((text) => ({ text, sentences: sentenceSpans(text) }));
          const fast = scoreSentences(docs, terms, language);
          // Reference: every sentence's terms built in full, matched and counted by hand.
          const perSentence = docs.map((d) =>
            d.sentences.map((s) => relevanceTerms(d.text.slice(s.start, s.end), language)),
          );
          const all = perSentence.flat();
          // BM25 by hand (k1 1.2, b 0.75), every sentence a document.
          const df = terms.map((t) => all.filter((ts) => ts.includes(t)).length);
          const idf = df.map((n) => Math.log(1 + (all.length - n + 0.5) / (n + 0.5)));
          const avg = all.reduce((sum, ts) => sum + ts.length, 0) / all.length || 1;
          perSentence.forEach((sentences, m) => {
            sentences.forEach((ts, i) => {
              const matched = terms.flatMap((t, k) => (ts.includes(t) ? [k] : []));
              expect(fast[m]?.[i]?.matched).toEqual(matched);
              const norm = 1.2 * (1 - 0.75 + (0.75 * ts.length) / avg);
              const score = matched.reduce((sum, k) => {
                const f = ts.filter((x) => x === terms[k]).length;
                return sum + ((idf[k] ?? 0) * f * 2.2) / (f + norm);
              }, 0);
              expect(fast[m]?.[i]?.score).toBeCloseTo(score, 5);
            });
          });
        },
      ),
      { numRuns: 300 },
    );
  });
});
