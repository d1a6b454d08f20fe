/**
 * Section budgets (policy `budget.sections`, seed 004's allocation, seed 001's summaries first): each memory type
 * a share of `maxTokens`, filled summaries → facts → messages, unused share flowing on; the prompt grouped in
 * that order; explain shows each section's spend. Validation names the field.
 */
import { runPipeline } from "../../src/pipeline";
import { budgetStage, sectionAllowances } from "../../src/pipeline/stages/budget";
import { getTokenizer } from "../../src/pipeline/tokenizers";
import type { WorkItem } from "../../src/pipeline/types";
import { canonicalJson } from "../../src/policy/canonical";
import { compilePolicy, compilePolicyText } from "../../src/policy/compile";
import { makeCandidate, makeItem, makePolicy } from "../helpers/items";

const tokenizer = getTokenizer("approx");
const ctx = { tokenizer } as never;
/** A memory of exactly `tokens` approx tokens (4 characters each). */
const sized = (id: string, type: WorkItem["type"], tokens: number) =>
  makeItem({ id, type, content: `${"abc ".repeat(tokens - 1)}end.` });

describe("section budgets", () => {
  test("allowances: floor(share × maxTokens) each, what no share claims to messages; they add up to maxTokens", () => {
    expect(Object.fromEntries(sectionAllowances({ summary: 0.2, fact: 0.3, message: 0.5 }, 450))).toEqual({
      summary: 90,
      fact: 135,
      message: 225,
    });
    expect(Object.fromEntries(sectionAllowances({ summary: 0.25 }, 101))).toEqual({
      summary: 25,
      fact: 0,
      message: 76,
    });
    expect(Object.fromEntries(sectionAllowances({ summary: 0.1, fact: 0.2, message: 0.7 }, 333))).toEqual({
      summary: 33,
      fact: 66,
      message: 234,
    });
  });

  test("summaries first, each section within its share plus what flowed to it; explain shows the spend", () => {
    const policy = makePolicy({
      retrieval: { maxTokens: 100 },
      budget: { packing: "skip", sections: { summary: 0.2, fact: 0.3, message: 0.5 } },
    });
    const items = [
      sized("m1", "message", 30),
      sized("f1", "fact", 25),
      sized("s1", "summary", 15), // leaves 5 of its 20 to facts
      sized("f2", "fact", 10), // facts: 30 + 5 = 35, 25 + 10 = 35 used
      sized("m2", "message", 25), // messages: 50, 30 + 25 > 50: skipped
      sized("m3", "message", 20),
    ];
    const result = budgetStage(items, policy, ctx);
    expect(result.items.map((i) => i.id)).toEqual(["s1", "f1", "f2", "m1", "m3"]);
    expect(result.trace.changes).toEqual([{ id: "m2", reason: "dropped_by_budget" }]);
    expect(result.trace.detail).toEqual({
      maxTokens: 100,
      usedTokens: 100,
      tokenizer: "approx",
      packing: "skip",
      summaryShare: 20,
      summaryAvailable: 20,
      summaryUsed: 15,
      factShare: 30,
      factAvailable: 35,
      factUsed: 35,
      messageShare: 50,
      messageAvailable: 50,
      messageUsed: 50,
    });
  });

  test("truncate packing stops one section only; the next still gets its share", () => {
    const policy = makePolicy({
      retrieval: { maxTokens: 100 },
      budget: { sections: { summary: 0.5, message: 0.5 } },
    });
    const items = [sized("s1", "summary", 40), sized("s2", "summary", 40), sized("m1", "message", 30)];
    const result = budgetStage(items, policy, ctx);
    expect(result.items.map((i) => i.id)).toEqual(["s1", "s2", "m1"]);
    expect(result.items[1]?.content.endsWith("...")).toBe(true);
    expect(result.trace.changes).toEqual([{ id: "s2", reason: "truncated_by_budget" }]);
    expect(tokenizer.count(result.items[1]?.content ?? "")).toBeLessThanOrEqual(10);
    expect(result.usedTokens).toBeLessThanOrEqual(100);
  });

  test("the prompt shows summaries, then facts, then messages; without sections seed 000's order", () => {
    const candidates = [
      makeCandidate({ id: "m1", type: "message", content: "Hello there.", score: 0.9 }),
      makeCandidate({ id: "f1", type: "fact", content: "Likes tea.", score: 0.8 }),
      makeCandidate({ id: "s1", type: "summary", content: "A chat about tea.", score: 0.7 }),
    ];
    const prompt = (sections?: { summary: number }) =>
      runPipeline(
        { userId: "u", query: "tea", candidates, backend: "local" },
        compilePolicy(makePolicy({ retrieval: { minScore: 0 }, budget: sections ? { sections } : {} })),
      ).systemPrompt;
    const headings = (text: string) => text.split("\n").filter((l) => l.startsWith("### "));
    expect(headings(prompt({ summary: 0.3 }))).toEqual([
      "### Conversation Summaries",
      "### Known Facts",
      "### Previous Messages",
    ]);
    expect(headings(prompt())).toEqual([
      "### Previous Messages",
      "### Known Facts",
      "### Conversation Summaries",
    ]);
  });

  test("validation: shares in (0,1], adding up to at most 1, known types only, each error naming the field", () => {
    const problems = (sections: string) => {
      const r = compilePolicyText(`name: p\nversion: 1\nbudget:\n  sections: ${sections}\n`, "p.yaml");
      return r.ok ? [] : r.problems.map((p) => `${p.path.join(".")}: ${p.message}`);
    };
    expect(problems("{ summary: 0 }")).toEqual([
      "budget.sections.summary: must be a number greater than 0 and at most 1 (got 0)",
    ]);
    expect(problems("{ fact: 1.5 }")).toEqual([
      "budget.sections.fact: must be a number greater than 0 and at most 1 (got 1.5)",
    ]);
    expect(problems("{ summary: 0.5, fact: 0.4, message: 0.2 }")).toEqual([
      expect.stringMatching(/^budget\.sections: the shares must add up to at most 1/),
    ]);
    expect(problems("{ profile: 0.5 }")).toEqual([
      expect.stringMatching(/^budget\.sections: .*profile/),
      "budget.sections: name at least one of summary, fact, message",
    ]);
    expect(problems("{}")).toEqual(["budget.sections: name at least one of summary, fact, message"]);
    // 0.1 + 0.2 + 0.7 is 1.0000000000000002 in floating point: still valid.
    expect(problems("{ summary: 0.1, fact: 0.2, message: 0.7 }")).toEqual([]);
    const citations = compilePolicyText("name: p\nversion: 1\nformat: { citations: yes }\n", "p.yaml");
    expect(citations.ok ? [] : citations.problems.map((p) => p.path.join("."))).toEqual(["format.citations"]);
  });

  test("a policy without the new fields keeps its canonical JSON (and so its hash): no defaults filled in", () => {
    const json = canonicalJson(makePolicy());
    expect(json).not.toContain("sections");
    expect(json).not.toContain("citations");
    expect(json).not.toContain("userSummary");
  });
});
