/** A payload as JSON text (src/retrieval/payload-text.ts): what a cache hit on /v1/retrieve answers from. */
import fc from "fast-check";
import type { CachedPayload } from "../../src/cache/types";
import type { RetrievalMetadata } from "../../src/retrieval/payload";
import { PayloadText } from "../../src/retrieval/payload-text";

function payload(contents: string[], prompt: string, extra: Partial<RetrievalMetadata> = {}): CachedPayload {
  return {
    memories: contents.map((content, i) => ({
      id: `m${i}`,
      content,
      score: 0.5 + i / 100,
      timestamp: "2026-03-01T09:00:00.000Z",
      sessionId: "s-1",
      type: "fact",
      provenance: {
        collection: "user:u",
        searchType: "hybrid",
        originalLength: content.length,
        wasRedacted: false,
      },
    })),
    metadata: {
      queryTime: 12.34,
      totalResults: contents.length,
      includedResults: contents.length,
      totalTokens: 42,
      appliedFilters: ["score_threshold", "token_budget"],
      config: { topK: 8, clipSentences: 2, maxTokens: 1500, searchType: "hybrid", minScore: 0.3 },
      policy: { name: "default", version: 1, hash: "h" },
      backend: "zep",
      cache: "miss",
      fallback: null,
      ...extra,
    },
    systemPrompt: prompt,
  };
}

const hitOf = (p: CachedPayload, queryTime: number): RetrievalMetadata => ({
  ...p.metadata,
  queryTime,
  cache: "hit",
});

describe("PayloadText", () => {
  test("its text is JSON.stringify of the payload, and a hit's JSON that of the payload with the hit's metadata", () => {
    fc.assert(
      fc.property(
        fc.array(fc.string({ unit: "grapheme" }), { maxLength: 5 }),
        fc.string({ unit: "binary" }),
        fc.double({ noNaN: true, noDefaultInfinity: true }),
        (contents, prompt, queryTime) => {
          const p = payload(contents, prompt);
          const text = PayloadText.of(p);
          expect(text.text).toBe(JSON.stringify(p));
          const meta = hitOf(p, queryTime);
          expect(text.json(meta)).toBe(JSON.stringify({ ...p, metadata: meta }));
          // As stored: read back from its text alone, the same answer, field order included.
          const stored = PayloadText.stored(text.text, text.metadataStart, text.metadataEnd);
          expect(stored?.metadata()).toEqual(p.metadata);
          expect(stored?.json(meta)).toBe(JSON.stringify({ ...p, metadata: meta }));
          expect(JSON.stringify(stored?.answer(meta))).toBe(text.json(meta));
          expect(stored?.payload()).toEqual(JSON.parse(JSON.stringify(p)));
        },
      ),
      { numRuns: 300 },
    );
  });

  test("encoded: the same text as UTF-8 bytes, answering the same JSON as bytes; the payload kept, never parsed", () => {
    fc.assert(
      fc.property(
        fc.array(fc.string({ unit: "grapheme" }), { maxLength: 5 }),
        fc.string({ unit: "grapheme" }),
        fc.double({ noNaN: true, noDefaultInfinity: true }),
        (contents, prompt, queryTime) => {
          const p = payload(contents, prompt);
          const text = PayloadText.of(p);
          const encoded = text.encoded();
          expect(encoded.encoded()).toBe(encoded);
          expect(encoded.bytes?.equals(Buffer.from(JSON.stringify(p), "utf8"))).toBe(true);
          expect(encoded.utf8()).toEqual(text.utf8());
          expect(encoded.payload()).toBe(p);
          expect(encoded.metadata()).toBe(p.metadata);
          const meta = hitOf(p, queryTime);
          const json = encoded.json(meta);
          expect(Buffer.isBuffer(json)).toBe(true);
          expect(json.toString()).toBe(JSON.stringify({ ...p, metadata: meta }));
          expect(JSON.stringify(encoded.answer(meta))).toBe(json.toString());
        },
      ),
      { numRuns: 200 },
    );
  });

  test("fields JSON leaves out are left out, in their order; a door's native rendering is kept", () => {
    const p = {
      ...payload(["a"], "p"),
      native: { sources: {}, echo: { x: 1 } },
      extra: undefined,
    } as CachedPayload;
    const text = PayloadText.of(p);
    expect(text.text).toBe(JSON.stringify(p));
    expect(text.json(hitOf(p, 1))).toBe(JSON.stringify({ ...p, metadata: hitOf(p, 1) }));
  });

  test("a stored text parses only its metadata until the payload is read", () => {
    const p = payload(["Ana orders a flat white."], "prompt");
    const made = PayloadText.of(p);
    const stored = PayloadText.stored(made.text, made.metadataStart, made.metadataEnd);
    if (stored === undefined) throw new Error("not read");
    const parse = jest.spyOn(JSON, "parse");
    try {
      const meta = hitOf(p, 3);
      const answer = stored.answer(meta);
      expect(answer.metadata).toBe(meta);
      expect(stored.json(meta)).toContain('"cache":"hit"');
      expect(parse).not.toHaveBeenCalled();
      expect(answer.memories[0]?.content).toBe("Ana orders a flat white.");
      expect(answer.systemPrompt).toBe("prompt");
      expect(parse).toHaveBeenCalledTimes(1);
    } finally {
      parse.mockRestore();
    }
  });

  test.each([
    ["a span that is not an object", 1, 5],
    ["a span past the text", 13, 10_000],
    ["an empty span", 13, 13],
    ["a negative start", -1, 10],
  ])("%s is not a stored text", (_what, start, end) => {
    expect(PayloadText.stored(PayloadText.of(payload(["a"], "p")).text, start, end)).toBeUndefined();
  });

  test("a stored text that is not a payload throws when read, not before", () => {
    const text = '{"metadata":{"cache":"miss"},"other":1}';
    const stored = PayloadText.stored(text, 12, 28);
    expect(stored?.metadata()).toEqual({ cache: "miss" });
    expect(() => stored?.payload()).toThrow("not a payload");
  });

  test("a stored payload with citations (format.citations: on) answers them, in their place, lazily", () => {
    fc.assert(
      fc.property(
        fc.array(fc.string({ unit: "grapheme" }), { maxLength: 5 }),
        fc.boolean(),
        fc.string(),
        (contents, withCitations, prompt) => {
          const base = payload(contents, prompt);
          const citations = Object.fromEntries(
            base.memories.map((m, i) => [
              `m${i + 1}`,
              { id: m.id, backend: "zep", sessionId: m.sessionId, timestamp: m.timestamp },
            ]),
          );
          const p: CachedPayload = withCitations
            ? { memories: base.memories, citations, metadata: base.metadata, systemPrompt: prompt }
            : base;
          const made = PayloadText.of(p);
          const stored = PayloadText.stored(made.text, made.metadataStart, made.metadataEnd);
          const meta = hitOf(p, 2);
          const answer = stored?.answer(meta);
          expect(JSON.stringify(answer)).toBe(JSON.stringify({ ...p, metadata: meta }));
          expect(answer !== undefined && "citations" in answer).toBe(withCitations);
          if (withCitations) expect(answer?.citations).toEqual(citations);
        },
      ),
      { numRuns: 200 },
    );
  });

  test("a hit's JSON (hitJson) is JSON.stringify of the payload with the hit's metadata, from a text, a stored text and stored bytes", () => {
    fc.assert(
      fc.property(
        fc.array(fc.string({ unit: "grapheme" }), { maxLength: 3 }),
        fc.string({ unit: "grapheme" }),
        fc.double({ noNaN: true, noDefaultInfinity: true }),
        fc.double({ noNaN: true, noDefaultInfinity: true }),
        fc.boolean(),
        (contents, policyName, storedTime, queryTime, extras) => {
          const p = payload(contents, "prompt", {
            queryTime: storedTime,
            policy: { name: policyName, version: 2, hash: "h2" },
            ...(extras
              ? {
                  sufficiency: { verdict: "partial", coverage: 0.5, expanded: true },
                  reinforcement: { available: false },
                }
              : {}),
          } as Partial<RetrievalMetadata>);
          const expected = JSON.stringify({ ...p, metadata: hitOf(p, queryTime) });
          const made = PayloadText.of(p);
          const { bytes, metadataStart, metadataEnd } = made.utf8();
          const texts = [
            made,
            PayloadText.stored(made.text, made.metadataStart, made.metadataEnd),
            PayloadText.storedBytes(bytes, metadataStart, metadataEnd),
            // The same bytes read again (a second Redis hit on the entry): its metadata is the one parsed before.
            PayloadText.storedBytes(Buffer.from(bytes), metadataStart, metadataEnd),
          ];
          for (const text of texts) {
            if (text === undefined) throw new Error("not read");
            const json = text.hitJson(queryTime);
            expect(typeof json === "string" ? json : json.toString("utf8")).toBe(expected);
            // As JSON has it (a stored -0 reads back as 0).
            expect(JSON.parse(JSON.stringify(text.hitMetadata()))).toEqual(
              JSON.parse(JSON.stringify({ ...p.metadata, cache: "hit" })),
            );
            expect(Object.isFrozen(text.hitMetadata())).toBe(true);
          }
          // The payload the text was made of is not frozen with it.
          expect(Object.isFrozen(p.metadata)).toBe(false);
        },
      ),
      { numRuns: 200 },
    );
  });

  test("a hit on a metadata whose first field is not queryTime serializes its metadata", () => {
    const text = '{"memories":[],"metadata":{"cache":"miss","queryTime":3},"systemPrompt":""}';
    const stored = PayloadText.stored(text, 26, 56);
    expect(stored?.hitJson(7)).toBe(
      '{"memories":[],"metadata":{"cache":"hit","queryTime":7},"systemPrompt":""}',
    );
  });

  test("stored bytes read again (each Redis hit) are not parsed again: the metadata of the same bytes is shared, frozen", () => {
    const p = payload(["Ana orders a flat white."], "prompt", { totalTokens: 77_001 });
    const { bytes, metadataStart, metadataEnd } = PayloadText.of(p).utf8();
    const first = PayloadText.storedBytes(Buffer.from(bytes), metadataStart, metadataEnd);
    expect(first?.metadata()).toEqual(p.metadata);
    const parse = jest.spyOn(JSON, "parse");
    try {
      const again = PayloadText.storedBytes(Buffer.from(bytes), metadataStart, metadataEnd);
      expect(again?.metadata()).toBe(first?.metadata());
      expect(again?.hitJson(5).toString()).toBe(
        JSON.stringify({ ...p, metadata: { ...p.metadata, queryTime: 5, cache: "hit" } }),
      );
      expect(parse).not.toHaveBeenCalled();
    } finally {
      parse.mockRestore();
    }
    expect(Object.isFrozen(first?.metadata())).toBe(true);
    expect(Object.isFrozen(first?.metadata().config)).toBe(true);
  });
});
