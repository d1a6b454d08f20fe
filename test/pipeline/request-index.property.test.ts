/**
 * The per-request text index (src/pipeline/text/request-index.ts) computes what the stages computed on their
 * own before, faster: these properties hold it to the plain definitions on arbitrary text.
 */
import fc from "fast-check";
import { relevanceQuery, scoreSentences, sentenceScoreLists } from "../../src/pipeline/text/relevance";
import { jaccardOfIds, RequestIndex } from "../../src/pipeline/text/request-index";
import { sentenceSpans } from "../../src/pipeline/text/sentences";
import { getTokenizer } from "../../src/pipeline/tokenizers";

/** The definition select used: words of 3+ letters or digits of the lower-cased text, as a string set. */
function wordSet(text: string): Set<string> {
  const set = new Set<string>();
  for (const m of text.toLowerCase().matchAll(/[\p{L}\p{N}]{3,}/gu)) set.add(m[0]);
  return set;
}
function jaccard(a: ReadonlySet<string>, b: ReadonlySet<string>): number {
  if (a.size === 0 || b.size === 0) return 0;
  let inter = 0;
  for (const t of a) if (b.has(t)) inter++;
  return inter / (a.size + b.size - inter);
}

/** Text with the cases that matter: ASCII case, accents, Turkish İ, CJK, astral letters, digits, lone surrogates. */
const UNITS = [
  "a",
  "B",
  "z",
  "Z",
  "0",
  "7",
  " ",
  ".",
  "'",
  "é",
  "É",
  "İ",
  "ß",
  "ﬁ",
  "中",
  "文",
  "𝐀",
  "😀",
  "\u0301",
  "\ud800",
  "-",
];
const text = fc.oneof(
  fc.string({ unit: fc.constantFrom(...UNITS), maxLength: 80 }),
  fc.string({ unit: "grapheme", maxLength: 120 }),
  fc.string({ unit: "binary", maxLength: 120 }),
  fc.constantFrom(
    "The BAKERY job, the bakery JOB!",
    "I love my new job at the bakery",
    "Héllo Wörld ÉCOLE école",
  ),
);

describe("RequestIndex word sets", () => {
  it("hold exactly the regex's words, and give the same Jaccard index", () => {
    fc.assert(
      fc.property(fc.array(text, { minLength: 2, maxLength: 6 }), (texts) => {
        const index = new RequestIndex("");
        for (const a of texts) {
          expect(index.wordIds(a).length).toBe(wordSet(a).size);
          for (const b of texts) {
            expect(jaccardOfIds(index.wordIds(a), index.wordIds(b))).toBe(jaccard(wordSet(a), wordSet(b)));
          }
        }
      }),
      { numRuns: 400 },
    );
  });
});

const WORDS = [
  "trip",
  "Lisbon",
  "doctor",
  "blood",
  "pressure",
  "pottery",
  "when",
  "the",
  "mariage",
  "Geburtstag",
  "中文",
  "école",
];
const sentence = fc
  .array(fc.constantFrom(...WORDS, "and", "a", "Dr.", "3 p.m.", "é", "!"), { minLength: 1, maxLength: 12 })
  .map((w) => `${w.join(" ")}.`);
const memory = fc.array(sentence, { minLength: 1, maxLength: 5 }).map((s) => s.join(" "));

describe("RequestIndex scores", () => {
  it("equal scoreSentences for the query's terms and for any sub-list of them, on any subset of memories", () => {
    fc.assert(
      fc.property(
        fc.array(fc.constantFrom(...WORDS), { minLength: 1, maxLength: 6 }),
        fc.array(memory, { minLength: 1, maxLength: 6 }),
        fc.array(fc.boolean(), { minLength: 6, maxLength: 6 }),
        (queryWords, memories, keep) => {
          const query = queryWords.join(" ");
          const { terms, language } = relevanceQuery(query);
          const index = new RequestIndex(query);
          const sub = terms.filter((_, k) => keep[k % keep.length]);
          const subset = memories.filter((_, i) => keep[(i + 1) % keep.length]);
          for (const [list, docs] of [
            [terms, memories],
            [sub, memories],
            [sub, subset],
            [terms, subset],
          ] as const) {
            const expected = scoreSentences(
              docs.map((t) => ({ text: t, sentences: sentenceSpans(t) })),
              list,
              language,
            );
            expect(sentenceScoreLists(index.scores(docs, list, language))).toEqual(expected);
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it("two requests reading the same texts in turn, with different questions, each score them for their own", () => {
    fc.assert(
      fc.property(
        fc.array(fc.constantFrom(...WORDS), { minLength: 1, maxLength: 6 }),
        fc.array(fc.constantFrom(...WORDS), { minLength: 1, maxLength: 6 }),
        fc.array(memory, { minLength: 1, maxLength: 6 }),
        (aWords, bWords, docs) => {
          const requests = [aWords, bWords].map((words) => {
            const query = words.join(" ");
            return { index: new RequestIndex(query), ...relevanceQuery(query) };
          });
          for (let round = 0; round < 2; round++)
            for (const { index, terms, language } of requests) {
              const expected = scoreSentences(
                docs.map((t) => ({ text: t, sentences: sentenceSpans(t) })),
                terms,
                language,
              );
              expect(sentenceScoreLists(index.scores(docs, terms, language))).toEqual(expected);
            }
        },
      ),
      { numRuns: 200 },
    );
  });

  it("termsIn is scoreSentences' matched terms of the whole text as one document, for the terms and any sub-list, in requests that read the same texts in turn", () => {
    const whole = (t: string) => [{ start: 0, end: t.length }];
    fc.assert(
      fc.property(
        fc.array(fc.constantFrom(...WORDS), { minLength: 1, maxLength: 6 }),
        fc.array(fc.oneof(memory, text), { minLength: 1, maxLength: 6 }),
        fc.array(fc.boolean(), { minLength: 6, maxLength: 6 }),
        (queryWords, texts, keep) => {
          const query = queryWords.join(" ");
          const { terms, language } = relevanceQuery(query);
          const sub = terms.filter((_, k) => keep[k % keep.length]);
          // Three requests in turn read the same texts: what one remembers never answers for the next.
          for (let request = 0; request < 3; request++) {
            const index = new RequestIndex(query);
            for (const list of [terms, sub, ["other"], terms]) {
              for (const t of texts) {
                const expected = scoreSentences([{ text: t, sentences: whole(t) }], list, language)[0]?.[0]
                  ?.matched;
                expect([...index.termsIn(t, list, language)]).toEqual([...(expected ?? [])]);
              }
            }
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it("counts each sentence's tokens as the tokenizer does, and remembers whole texts", () => {
    const tokenizer = getTokenizer("o200k_base");
    const index = new RequestIndex("");
    const counting = index.tokenizer(tokenizer);
    fc.assert(
      fc.property(memory, (t) => {
        sentenceSpans(t).forEach((span, j) => {
          expect(index.sentenceTokens(t, j, tokenizer)).toBe(tokenizer.count(t.slice(span.start, span.end)));
        });
        expect(counting.count(t)).toBe(tokenizer.count(t));
        expect(counting.count(t)).toBe(tokenizer.count(t));
      }),
      { numRuns: 200 },
    );
  });
});
