import { runPipeline } from "../../src/pipeline";
import { compilePolicy } from "../../src/policy/compile";
import { makeCandidate, makePolicy } from "../helpers/items";

describe("runPipeline", () => {
  test("clipping never assembles PII the redactor did not see (sentences split by a blank line)", () => {
    const compiled = compilePolicy(
      makePolicy({
        retrieval: { clipSentences: 2, minScore: 0 },
        redaction: { enabled: true, detectors: ["phone", "credit_card"] },
      }),
    );
    const { memories, systemPrompt } = runPipeline(
      {
        userId: "u",
        query: "",
        backend: "replay",
        candidates: [
          makeCandidate({ id: "a", content: "My number is 415\n\n555-0132 after six. Call then. Thanks." }),
          makeCandidate({ id: "b", content: "Card 4111 1111\n\n1111 1111 is old. Use the new one. Bye." }),
        ],
      },
      compiled,
    );
    const text = memories.map((m) => m.content).join("\n") + systemPrompt;
    expect(text).not.toMatch(/415 555-0132/);
    expect(text).not.toMatch(/4111 1111 1111 1111/);
    expect(memories.find((m) => m.id === "a")?.content).toBe("My number is 415\n\n555-0132 after six....");
  });

  test("metadata.totalTokens is the budget stage's own count of the output", () => {
    const compiled = compilePolicy(makePolicy({ tokenizer: "cl100k_base", retrieval: { minScore: 0 } }));
    const result = runPipeline(
      {
        userId: "u",
        query: "",
        backend: "replay",
        candidates: [
          makeCandidate({ id: "a", content: "hello world" }),
          makeCandidate({ id: "b", content: "你好，世界" }),
        ],
      },
      compiled,
    );
    const recount = result.memories.reduce((n, m) => n + compiled.ctx.tokenizer.count(m.content), 0);
    expect(result.totalTokens).toBe(recount);
    expect(result.totalTokens).toBeGreaterThan(0);
  });
});
