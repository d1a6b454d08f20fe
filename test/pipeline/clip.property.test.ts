import fc from "fast-check";
import { CLIP_MARKER, clipContent, clipStage } from "../../src/pipeline/stages/clip";
import { sentenceEnds, sentenceSpans, splitSentences } from "../../src/pipeline/text/sentences";
import { makeItem, makePolicy } from "../helpers/items";

/** Pieces that exercise the boundary rules far more often than uniform unicode would. */
const piece = fc.constantFrom(
  "Dr.",
  "Mr.",
  "etc.",
  "e.g.",
  "p.m.",
  "U.S.",
  "J.",
  "No.",
  "Jan.",
  "3.14",
  "v1.2.3",
  "https://a.b/c?d=1",
  "ana.lopez@example.co.uk",
  "...",
  "…",
  ".",
  "!",
  "?",
  "?!",
  "。",
  "！",
  "？",
  "؟",
  "۔",
  "।",
  '"',
  "'",
  ")",
  "」",
  "(",
  "「",
  "と",
  " ",
  " ",
  "  ",
  "\n",
  "\n\n",
  "\r\n",
  "\u2029",
  "\t",
  "I",
  "The",
  "then",
  "word",
  "Word",
  "我喜欢",
  "晴れ",
  "안녕",
  "مرحبا",
  "שלום",
  "e\u0301",
  "😀",
  "👩‍👩‍👧",
  "1",
  "42",
);
const sentenceish = fc.array(piece, { maxLength: 40 }).map((parts) => parts.join(""));
const anyText = fc.oneof(
  sentenceish,
  fc.string({ unit: "grapheme", maxLength: 200 }),
  fc.string({ unit: "binary", maxLength: 200 }),
  fc.string({ unit: "grapheme-ascii", maxLength: 200 }),
);
const limit = fc.integer({ min: 1, max: 5 });
const noWs = (s: string): string => s.replace(/\s+/g, "");
const params = { numRuns: 400 };

function withoutMarker(content: string): string {
  return content.endsWith(CLIP_MARKER) ? content.slice(0, -CLIP_MARKER.length) : content;
}

describe("clip properties", () => {
  test("never throws; spans are trimmed, ordered and lose nothing but whitespace", () => {
    fc.assert(
      fc.property(anyText, limit, (text, n) => {
        clipContent(text, n);
        const spans = sentenceSpans(text);
        let prev = 0;
        for (const { start, end } of spans) {
          expect(start).toBeGreaterThanOrEqual(prev);
          expect(end).toBeGreaterThan(start);
          expect(text.slice(prev, start).trim()).toBe("");
          const s = text.slice(start, end);
          expect(s).toBe(s.trim());
          prev = end;
        }
        expect(text.slice(prev).trim()).toBe("");
        expect(noWs(splitSentences(text).join(""))).toBe(noWs(text));
        // Stopping early (what the clip stage does) finds the same first sentences.
        expect(sentenceEnds(text, n)).toEqual(sentenceEnds(text).slice(0, n));
      }),
      params,
    );
  });

  test("at most N sentences plus '...': a verbatim slice of the input, separators included", () => {
    fc.assert(
      fc.property(anyText, limit, (text, n) => {
        const sentences = splitSentences(text);
        const { content, clipped } = clipContent(text, n);
        expect(clipped).toBe(sentences.length > n);
        if (!clipped) {
          expect(content).toBe(text);
          return;
        }
        expect(content.endsWith(CLIP_MARKER) || content.endsWith("…")).toBe(true);
        // The output is the input's own text (never re-joined: a join could assemble PII the redactor never
        // saw), starting at the first sentence: exactly the first N sentences with what stood between them.
        // No marker is added to a slice that already ends with one ("..." as the last kept sentence).
        const start = text.length - text.trimStart().length;
        const body = text.startsWith(content, start) ? content : withoutMarker(content);
        expect(text.startsWith(body, start)).toBe(true);
        let pos = 0;
        for (const s of sentences.slice(0, n)) {
          const at = body.indexOf(s, pos);
          expect(at).toBeGreaterThanOrEqual(pos);
          expect(body.slice(pos, at).trim()).toBe("");
          pos = at + s.length;
        }
        expect(body.slice(pos)).toBe("");
      }),
      params,
    );
  });

  test("a kept sentence that is itself '...' gets no second marker (found by the property above)", () => {
    expect(clipContent("...\r\nDr.", 1)).toEqual({ content: "...", clipped: true });
  });

  test("prefix-preserving: the output without '...' is the input's beginning, up to whitespace", () => {
    fc.assert(
      fc.property(anyText, limit, (text, n) => {
        const { content } = clipContent(text, n);
        expect(noWs(text).startsWith(noWs(withoutMarker(content)))).toBe(true);
        // Every kept sentence appears in both, in the same order.
        let inInput = 0;
        let inOutput = 0;
        for (const s of splitSentences(text).slice(0, n)) {
          inInput = text.indexOf(s, inInput);
          inOutput = content.indexOf(s, inOutput);
          expect(inInput).toBeGreaterThanOrEqual(0);
          expect(inOutput).toBeGreaterThanOrEqual(0);
          inInput += s.length;
          inOutput += s.length;
        }
      }),
      params,
    );
  });

  test("deterministic and pure: same input, same output; input untouched", () => {
    fc.assert(
      fc.property(fc.array(anyText, { maxLength: 6 }), limit, (texts, n) => {
        const items = texts.map((content, i) => makeItem({ id: `m${i}`, content }));
        const snapshot = structuredClone(items);
        const policy = makePolicy({ retrieval: { clipSentences: n } });
        const first = clipStage(items, policy);
        const second = clipStage(items, policy);
        expect(second).toEqual(first);
        expect(items).toEqual(snapshot);
        expect(first.items.map((i) => i.originalLength)).toEqual(texts.map((t) => t.length));
        expect(first.trace.changes.length).toBeLessThanOrEqual(texts.length);
      }),
      params,
    );
  });
});
