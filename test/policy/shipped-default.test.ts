/**
 * The shipped policies/default.yaml (chosen on the long-conversation golden set, docs/eval.md "What the shaped context
 * still holds"): what it turns on, and that it shapes a conversation as documented. The machinery tests run on a
 * fixed `default` of their own (test/helpers/policies/default.yaml).
 */
import { join } from "node:path";
import { runPipeline } from "../../src/pipeline";
import { compilePolicyFile } from "../../src/policy/compile";
import { makeCandidate } from "../helpers/items";

const ROOT = join(__dirname, "../..");

async function shipped() {
  const r = await compilePolicyFile(join(ROOT, "policies/default.yaml"));
  if (!r.ok) throw new Error(r.problems.map((p) => p.message).join("; "));
  return r.compiled;
}

describe("the shipped default policy", () => {
  test("turns on ranking, diversity, dynamic K (10–13), conversational neighbours, answer-aware clipping, replies and following turns, sufficiency within 450 tokens and 72 % of the backend's top 20", async () => {
    const { policy } = await shipped();
    expect(policy.version).toBe(10);
    expect(policy.retrieval).toMatchObject({
      maxTokens: 450,
      replies: true,
      questionAt: "anywhere",
      following: { top: 5, turns: 2 },
      topK: 20,
      overfetch: 5,
    });
    expect(policy.budget).toMatchObject({
      packing: "skip",
      fill: false,
      relative: { topK: 20, share: 0.72, minTokens: 150 },
      stop: { afterTokens: 240, completeness: 0.9 },
    });
    expect(policy.budget.relative?.complexShare).toBeUndefined();
    expect(policy.ranking).toMatchObject({
      enabled: true,
      diversity: 0.9,
      dynamicK: { enabled: true, min: 10, max: 13 },
      entitySpecificity: true,
      neighbours: { weight: 0.4, minutes: 15 },
    });
    expect(policy.clip).toMatchObject({
      mode: "relevant",
      answerAware: true,
      maxTokensPerMemory: 60,
      speakerLabel: true,
      answerNeighbour: 0.6,
    });
    expect(policy.sufficiency).toMatchObject({ enabled: true, expand: true });
    expect(policy.tokenizer).toBe("o200k_base");
  });

  test("shapes a conversation: the reply after its question, the speaker kept, the budget held, a certificate", async () => {
    const compiled = await shipped();
    const talk = [
      "Tom: How was the shelter visit on Saturday? Did you finally name the puppy?",
      "Maya: Pickle! He already chewed through my left sneaker, the little gremlin. Work was chaos again, by the way.",
      "Maya: The bakery asked me to do the early shift all week. I am not a morning person, as you know. Coffee helps.",
      "Tom: My sister got a cat last month. She called it Biscuit, which I think is a dog's name.",
    ];
    const candidates = talk.map((content, i) =>
      makeCandidate({
        id: `t${i + 1}`,
        content,
        type: "message",
        score: [0.6, 0.1, 0.3, 0.4][i] ?? 0.1,
        sessionId: "s-1",
        timestamp: `2024-03-02T18:0${i}:00Z`,
        ...(i === 1 ? { replyTo: "t1", origin: "reply" as const } : {}),
      }),
    );
    const result = runPipeline(
      {
        userId: "maya",
        query: "What did Maya name her puppy?",
        candidates,
        backend: "local",
        turnTime: Date.parse("2024-03-10T12:00:00Z"),
      },
      compiled,
    );
    const ids = result.memories.map((m) => m.id);
    expect(ids.indexOf("t2")).toBe(ids.indexOf("t1") + 1);
    expect(result.memories.find((m) => m.id === "t2")?.content).toMatch(/^Maya: Pickle!/);
    // The budget held: at most 450 tokens and 72 % of what the backend's own top 20
    // (t1, t3, t4: the reply turn t2 was added, not found) cost whole — but never below 150, so this short
    // conversation keeps its room.
    const budget = result.trace.find((t) => t.stage === "token_budget")?.detail ?? {};
    const whole =
      compiled.ctx.tokenizer.count(talk[0] ?? "") +
      compiled.ctx.tokenizer.count(talk[2] ?? "") +
      compiled.ctx.tokenizer.count(talk[3] ?? "");
    const share = Number(budget.relativeShare);
    expect(share).toBe(0.72);
    expect(budget).toMatchObject({
      relativeTokens: whole,
      maxTokens: Math.min(450, Math.max(150, Math.floor(share * whole))),
      policyMaxTokens: 450,
    });
    expect(result.totalTokens).toBeLessThanOrEqual(Math.min(450, Math.max(150, Math.floor(share * whole))));
    expect(result.appliedFilters).toEqual([
      "score_threshold",
      "deduplication",
      "rank",
      "diversity",
      "clip:relevant",
      "token_budget",
    ]);
    expect(result.sufficiency?.verdict).toBe("sufficient");
  });
});
