import type request from "supertest";
import { BackendError } from "../../src/backends/types";
import { makeHarness } from "../helpers/harness";
import { body, fakeZep, MEMORIES, post, redisGatewaySuite, redisHarness } from "./gateway-helpers";
import { testPrefix } from "./redis-helpers";

const PREFIX = testPrefix("flight");
const N = 20;

function ids(res: request.Response): string[] {
  return res.body.memories.map((m: { id: string }) => m.id);
}

describe("single-flight: identical concurrent requests make one backend call", () => {
  const { open } = redisGatewaySuite(PREFIX);

  test(`within one gateway on Redis: ${N} identical requests → 1 backend call, the same memories for all`, async () => {
    const h = await redisHarness(PREFIX);
    open.push(h);
    fakeZep(h).script = { kind: "delay", ms: 150 };
    const answers = await Promise.all(Array.from({ length: N }, () => post(h, body())));
    expect(answers.map((r) => r.status)).toEqual(Array(N).fill(200));
    expect(fakeZep(h).searchCalls).toBe(1);
    expect(fakeZep(h).existsCalls).toBe(1);
    const first = answers[0];
    if (first === undefined) throw new Error("no answer");
    expect(ids(first).sort()).toEqual(MEMORIES.map((m) => m.id).sort());
    for (const r of answers) {
      expect(r.body.memories).toEqual(first.body.memories);
      expect(r.body.systemPrompt).toBe(first.body.systemPrompt);
      expect(r.body.metadata.fallback).toBeNull();
    }
    // Then it is a plain cache hit.
    const later = await post(h, body()).expect(200);
    expect(later.body.metadata.cache).toBe("hit");
    expect(fakeZep(h).searchCalls).toBe(1);
  });

  test("different queries are different keys: one call each", async () => {
    const h = await redisHarness(PREFIX);
    open.push(h);
    fakeZep(h).script = { kind: "delay", ms: 100 };
    const queries = ["coffee", "office", "coffee", "weekend", "office", "coffee"];
    const answers = await Promise.all(queries.map((query) => post(h, body({ query }))));
    expect(answers.every((r) => r.status === 200)).toBe(true);
    expect(fakeZep(h).searchCalls).toBe(3);
  });

  test(`across two gateways sharing Redis: ${N} identical requests split between them → 1 backend call`, async () => {
    const a = await redisHarness(PREFIX);
    const b = await redisHarness(PREFIX);
    open.push(a, b);
    fakeZep(a).script = { kind: "delay", ms: 200 };
    fakeZep(b).script = { kind: "delay", ms: 200 };
    const answers = await Promise.all(Array.from({ length: N }, (_, i) => post(i % 2 === 0 ? a : b, body())));
    expect(answers.map((r) => r.status)).toEqual(Array(N).fill(200));
    expect(fakeZep(a).searchCalls + fakeZep(b).searchCalls).toBe(1);
    const first = answers[0];
    if (first === undefined) throw new Error("no answer");
    for (const r of answers) expect(r.body.memories).toEqual(first.body.memories);
    // The replica that did not call its backend read the other's result from Redis: a hit.
    const waiting =
      fakeZep(a).searchCalls === 1
        ? answers.filter((_, i) => i % 2 === 1)
        : answers.filter((_, i) => i % 2 === 0);
    expect(waiting.every((r) => r.body.metadata.cache === "hit")).toBe(true);
  });

  test("a failing leader does not strand the others: each answers its own fallback", async () => {
    // Retries off: this counts the leader's calls, not the resilience layer's retry (test/resilience).
    const h = await redisHarness(PREFIX, { env: { MEMGATE_RETRY_MAX: "0" } });
    open.push(h);
    let calls = 0;
    fakeZep(h).search = async () => {
      calls++;
      await new Promise((r) => setTimeout(r, 150));
      throw new BackendError({ kind: "unavailable", backend: "zep", status: 503, message: "Zep: HTTP 503" });
    };
    const answers = await Promise.all(Array.from({ length: 5 }, () => post(h, body({ query: "boom" }))));
    for (const r of answers) {
      expect(r.status).toBe(200);
      expect(r.body.metadata.fallback).toMatchObject({ code: "ZEP_UNAVAILABLE", action: "skip" });
    }
    expect(calls).toBe(1);
  });

  test("in-process cache (no REDIS_URL): still one backend call for identical concurrent requests", async () => {
    const h = await makeHarness();
    open.push(h);
    fakeZep(h).setUser("u-123", MEMORIES).script = { kind: "delay", ms: 100 };
    const answers = await Promise.all(Array.from({ length: N }, () => post(h, body())));
    expect(answers.every((r) => r.status === 200)).toBe(true);
    expect(fakeZep(h).searchCalls).toBe(1);
    expect(h.services.cache.kind).toBe("memory");
  });
});
