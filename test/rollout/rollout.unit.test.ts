/** The canary's user split (src/rollout/canary.ts) and the shadow runner's bounds and comparison (src/rollout/shadow.ts). */
import { Writable } from "node:stream";
import { createLogger } from "../../src/logging/logger";
import { compilePolicy } from "../../src/policy/compile";
import type { PolicyRegistry } from "../../src/policy/registry-types";
import { canaryPoint, inCanary } from "../../src/rollout/canary";
import { type ShadowOffer, ShadowRunner } from "../../src/rollout/shadow";
import { makeCandidate, makePolicy } from "../helpers/items";

describe("canary split", () => {
  const users = Array.from({ length: 20_000 }, (_, i) => `u${i}`);
  const share = (percent: number, salt?: string) =>
    users.filter((u) =>
      inCanary({ policy: "c", percent, ...(salt === undefined ? {} : { salt }) }, "acme", u),
    ).length / users.length;

  test("about `percent` of users; 0 none, 100 all", () => {
    expect(share(10)).toBeGreaterThan(0.09);
    expect(share(10)).toBeLessThan(0.11);
    expect(share(0)).toBe(0);
    expect(share(100)).toBe(1);
  });

  test("raising percent only adds users; another salt or tenant draws others", () => {
    const at5 = users.filter((u) => inCanary({ policy: "c", percent: 5 }, "acme", u));
    const at20 = new Set(users.filter((u) => inCanary({ policy: "c", percent: 20 }, "acme", u)));
    expect(at5.every((u) => at20.has(u))).toBe(true);
    const salted = new Set(users.filter((u) => inCanary({ policy: "c", percent: 5, salt: "v2" }, "acme", u)));
    const same = at5.filter((u) => salted.has(u)).length;
    expect(same / at5.length).toBeLessThan(0.2); // independent draws overlap ~5 %
    expect(canaryPoint("acme", "u1")).not.toBe(canaryPoint("globex", "u1"));
    expect(canaryPoint("acme", "u1")).toBe(canaryPoint("acme", "u1"));
  });
});

describe("shadow runner", () => {
  const served = compilePolicy(
    makePolicy({ name: "served", tokenizer: "approx", retrieval: { minScore: 0.5 } }),
  );
  const wide = compilePolicy(makePolicy({ name: "wide", tokenizer: "approx", retrieval: { minScore: 0 } }));
  const registry = (names: Record<string, typeof served>): PolicyRegistry => ({
    get: (n) => names[n],
    retired: () => undefined,
    list: () => ({ policies: [], rejected: [] }),
    reload: async () => undefined,
    close: () => undefined,
  });
  const candidates = [
    makeCandidate({ id: "a", content: "Ana likes tea.", score: 0.9 }),
    makeCandidate({ id: "b", content: "Ana lives in Porto.", score: 0.3 }),
  ];
  const offer = (sample = 1): ShadowOffer => ({
    tenant: "acme",
    rule: { policy: "wide", sample },
    served,
    input: { userId: "ana", query: "tea?", candidates, backend: "local", turnTime: 0 },
    answer: { ids: ["a"], tokens: 4 },
  });
  const logs: string[] = [];
  const logger = createLogger(
    "info",
    new Writable({
      write(c: Buffer, _e, cb) {
        logs.push(c.toString());
        cb();
      },
    }),
  );

  test("compares on the same candidates; why the served policy dropped what only the shadow kept", async () => {
    const runner = new ShadowRunner({ policies: registry({ wide }), logger });
    runner.offer(offer());
    await runner.idle();
    const report = runner.report("acme", { policy: "wide", sample: 1 });
    expect(report.runs).toBe(1);
    expect(report.overlap?.median).toBe(0.5); // {a} vs {a, b}
    expect(report.tokens?.deltaMean).toBeGreaterThan(0);
    expect(report.drops.primary).toEqual([{ reason: "below_min_score", count: 1 }]);
    expect(report.drops.shadow).toEqual([]);
  });

  test("bounded: beyond maxPending queued runs an offer is dropped and counted; a missing policy is an error", async () => {
    const runner = new ShadowRunner({ policies: registry({ wide }), logger, maxPending: 2 });
    for (let i = 0; i < 5; i++) runner.offer(offer());
    await runner.idle();
    expect(runner.report("acme", undefined).counts).toEqual({ ran: 2, dropped: 3, error: 0 });
    const missing = new ShadowRunner({ policies: registry({}), logger });
    missing.offer(offer());
    await missing.idle();
    expect(missing.report("acme", undefined).counts).toEqual({ ran: 0, dropped: 0, error: 1 });
  });

  test("sampled: `sample` of the offers run; the shadow that served is not run", async () => {
    let draw = 0;
    const draws = [0.05, 0.5, 0.95, 0.2];
    const runner = new ShadowRunner({
      policies: registry({ wide }),
      logger,
      random: () => draws[draw++] ?? 1,
    });
    for (let i = 0; i < 4; i++) runner.offer(offer(0.25));
    runner.offer({ ...offer(), served: wide });
    await runner.idle();
    expect(runner.report("acme", undefined).counts.ran).toBe(2); // 0.05 and 0.2 < 0.25
  });

  test("the answer path is not blocked: an offer returns before the run", () => {
    const runner = new ShadowRunner({ policies: registry({ wide }), logger });
    runner.offer(offer());
    expect(runner.report("acme", undefined).runs).toBe(0);
    return runner.idle();
  });
});
