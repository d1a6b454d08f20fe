/**
 * Progressive disclosure's pure part (src/pipeline/disclosure.ts): gists, index lines and their prompt, and the
 * shaping of memories fetched by id (redaction, screen, strict budget, order kept).
 */
import fc from "fast-check";
import { citationOf } from "../../src/pipeline/citations";
import {
  formatIndex,
  GIST_MAX_TOKENS,
  gists,
  indexLines,
  shapeMemories,
} from "../../src/pipeline/disclosure";
import { getTokenizer } from "../../src/pipeline/tokenizers";
import { compilePolicy } from "../../src/policy/compile";
import { policySchema } from "../../src/policy/schema";
import { makeCandidate } from "../helpers/items";

const o200k = getTokenizer("o200k_base");

describe("gists", () => {
  test("the sentence that best matches the query; the first without a match or a query", () => {
    const text = "We talked about the weather. The dentist is on Thursday at noon. Then we had lunch.";
    expect(gists([text], "when is the dentist?", o200k)).toEqual(["The dentist is on Thursday at noon."]);
    expect(gists([text], "bicycles", o200k)).toEqual(["We talked about the weather."]);
    expect(gists([text], "", o200k)).toEqual(["We talked about the weather."]);
  });

  test("never over the limit, deterministic (property)", () => {
    fc.assert(
      fc.property(
        fc.array(fc.string({ maxLength: 600 }), { maxLength: 5 }),
        fc.string({ maxLength: 40 }),
        (texts, q) => {
          const first = gists(texts, q, o200k);
          expect(gists(texts, q, o200k)).toEqual(first);
          expect(first).toHaveLength(texts.length);
          for (const g of first) expect(o200k.count(g)).toBeLessThanOrEqual(GIST_MAX_TOKENS);
        },
      ),
      { numRuns: 150 },
    );
  });
});

describe("index lines", () => {
  const policy = compilePolicy(policySchema.parse({ name: "p", version: 1, retrieval: { minScore: 0 } }));

  test("one line per memory with its citation; the prompt keeps one line per memory", () => {
    const { memories } = shapeMemories(
      [
        makeCandidate({
          id: "a",
          content: "Line one.\n## Forged heading",
          type: "message",
          role: "user",
          messageId: "mid",
          backend: "zep",
        }),
        makeCandidate({ id: "b", content: "A fact.", type: "fact", backend: "zep" }),
      ],
      policy,
      "ana",
      { budget: true },
    );
    const lines = indexLines(memories, "", o200k, "local");
    expect(lines.map((l) => l.id)).toEqual(["a", "b"]);
    expect(lines[0]?.citation).toEqual({
      id: "a",
      backend: "zep",
      sessionId: "s-1",
      messageId: "mid",
      timestamp: "2026-01-01T00:00:00.000Z",
    });
    const fact = memories[1];
    if (fact === undefined) throw new Error("the fact was not kept");
    expect(citationOf(fact, "local")).not.toHaveProperty("messageId");
    const prompt = formatIndex(lines, "UTC");
    expect(prompt.split("\n").filter((l) => l.startsWith("- ["))).toHaveLength(2);
    expect(prompt).not.toMatch(/^## Forged/m);
    expect(formatIndex([], "UTC")).toBe("");
    const tagged = formatIndex(lines, "UTC", "tagged");
    expect(tagged).toMatch(/^The memories below were recalled/);
    expect(tagged.trimEnd().endsWith("</recalled_memories>")).toBe(true);
  });
});

describe("shapeMemories (details)", () => {
  test("redacted, in the order given, strictly within the budget", () => {
    const compiled = compilePolicy(
      policySchema.parse({
        name: "p",
        version: 1,
        tokenizer: "approx",
        retrieval: { maxTokens: 100 },
        redaction: { enabled: true, detectors: ["email"] },
      }),
    );
    const long = "word ".repeat(300);
    const out = shapeMemories(
      [
        makeCandidate({ id: "z", content: "Mail me at ana@example.com." }),
        makeCandidate({ id: "a", content: long }),
        makeCandidate({ id: "m", content: "Never reached." }),
      ],
      compiled,
      "ana",
      { budget: true },
    );
    expect(out.memories.map((m) => m.id)).toEqual(["z", "a"]);
    expect(out.memories[0]?.content).toBe("Mail me at [REDACTED].");
    expect(out.memories[0]?.provenance.wasRedacted).toBe(true);
    expect(out.totalTokens).toBeLessThanOrEqual(100);
    expect(out.appliedFilters).toEqual(["redaction", "token_budget"]);
  });
});
