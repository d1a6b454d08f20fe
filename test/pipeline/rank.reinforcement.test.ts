import { runPipeline } from "../../src/pipeline";
import { analyzeQuery } from "../../src/pipeline/query/analyze";
import { rankStage, reinforcementSignal } from "../../src/pipeline/stages/rank";
import { compilePolicy } from "../../src/policy/compile";
import { policySchema } from "../../src/policy/schema";
import { makeCandidate, makeItem, makePolicy } from "../helpers/items";

const TURN = Date.parse("2024-06-19T12:00:00Z");
const weights = makePolicy().ranking.weights;
const msg = (id: string, content: string) => makeItem({ id, content, type: "message", score: 0.5 });
const items = () => [
  msg("a", "Maya: I drink green tea in the morning."),
  msg("b", "Maya: I drink green tea at night."),
];
const analysis = analyzeQuery("When do I drink green tea?", TURN);

describe("rank stage: the reinforcement signal", () => {
  test("min(1, ln(1 + n) / ln(1 + saturation)): 0 never kept, 1 at saturation and beyond", () => {
    expect(reinforcementSignal(0, 8)).toBe(0);
    expect(reinforcementSignal(3, 3)).toBe(1);
    expect(reinforcementSignal(30, 3)).toBe(1);
    expect(reinforcementSignal(1, 3)).toBe(0.5);
  });

  test("counts lift a memory; the same counts give the same order and values", () => {
    const plain = rankStage(items(), analysis, weights);
    const r = { counts: new Map([["b", 8]]), available: true, weight: 0.5, saturation: 8 };
    const once = rankStage(items(), analysis, weights, r);
    const again = rankStage(items(), analysis, weights, r);
    expect(plain.ranking.map((x) => x.signals.reinforcement)).toEqual([undefined, undefined]);
    expect(once.ranking[0]?.id).toBe("b");
    expect(once.ranking[0]?.signals.reinforcement).toBe(1);
    expect(JSON.stringify(again.ranking)).toBe(JSON.stringify(once.ranking));
    expect(once.trace.detail?.reinforcement).toBe("available");
  });

  test("counts unavailable (store down): 0 for every memory, the order of the run without it", () => {
    const plain = rankStage(items(), analysis, weights);
    const down = rankStage(items(), analysis, weights, {
      counts: new Map([["b", 8]]),
      available: false,
      weight: 0.5,
      saturation: 8,
    });
    expect(down.ranking.map((x) => x.id)).toEqual(plain.ranking.map((x) => x.id));
    for (const x of down.ranking) expect(x.signals.reinforcement).toBe(0);
    expect(down.trace.detail?.reinforcement).toBe("unavailable");
  });

  test("the pipeline reports availability; without counts given (offline) it is unavailable", () => {
    const compiled = compilePolicy(
      makePolicy({ ranking: { enabled: true, reinforcement: { enabled: true } } }),
    );
    const candidates = [makeCandidate({ id: "a", content: "green tea in the morning" })];
    const offline = runPipeline({ userId: "u", query: "green tea", candidates, backend: "local" }, compiled);
    expect(offline.reinforcement).toEqual({ available: false });
    const online = runPipeline(
      {
        userId: "u",
        query: "green tea",
        candidates,
        backend: "local",
        reinforcement: { counts: new Map(), available: true },
      },
      compiled,
    );
    expect(online.reinforcement).toEqual({ available: true });
    const off = runPipeline(
      { userId: "u", query: "green tea", candidates, backend: "local" },
      compilePolicy(makePolicy({ ranking: { enabled: true } })),
    );
    expect(off.reinforcement).toBeUndefined();
  });

  test("policy validation names the field", () => {
    const bad = (reinforcement: unknown) =>
      policySchema.safeParse({ name: "p", version: 1, ranking: { enabled: true, reinforcement } });
    for (const value of [
      { weight: 2 },
      { saturation: 0 },
      { ttlDays: 0 },
      { enabled: "yes" },
      { halfLife: 3 },
    ]) {
      const result = bad(value);
      expect(result.success).toBe(false);
      expect(result.error?.issues[0]?.path.slice(0, 2)).toEqual(["ranking", "reinforcement"]);
    }
    const ok = policySchema.parse({ name: "p", version: 1, ranking: { reinforcement: { enabled: true } } });
    expect(ok.ranking.reinforcement).toEqual({ enabled: true, weight: 0.15, saturation: 8, ttlDays: 90 });
    expect(policySchema.parse({ name: "p", version: 1 }).ranking.reinforcement).toBeUndefined();
  });
});
