/**
 * A canary policy through the gateway (real wiring, the production Prometheus reader): a stable share of users is
 * served the canary — the same user gets the same policy turn after turn, about `percent` of many users get it —
 * and which one answered is in `metadata.policy`, the `x-memgate-policy` header and the retrieval metrics'
 * `policy` label. A request that names a policy gets that one (it wins over the canary).
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import request from "supertest";
import { inCanary } from "../../src/rollout/canary";
import { METRICS } from "../../src/telemetry/catalogue";
import { type Harness, KEYS, makeHarness } from "../helpers/harness";
import { parsePrometheusText } from "../telemetry/prom-parse";
import { installTelemetry, type TestTelemetry } from "../telemetry/setup";
import { ANA_MEMORIES, tenantsWithRollout } from "./fixtures";

const CANARY = tenantsWithRollout("canary: { policy: fast, percent: 30 }");
const memories = ANA_MEMORIES.slice(0, 2);
const USERS = Array.from({ length: 300 }, (_, i) => `user-${i}`);

describe("canary policy on live traffic", () => {
  let tel: TestTelemetry;
  let h: Harness;
  let server: Server;
  let url: string;

  beforeAll(async () => {
    tel = installTelemetry();
    h = await makeHarness({ tenants: CANARY, env: { MEMGATE_KEY_RATE_LIMIT: "100000/60" } });
    for (const u of USERS) h.zep.acme?.setUser(u, memories);
    server = createServer(h.app);
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await new Promise((resolve) => server.close(resolve));
    await h.close();
    await tel.close();
  });

  async function ask(
    userId: string,
    query: string,
    policy?: string,
  ): Promise<{ header: string; meta: string }> {
    const res = await request(url)
      .post("/v1/retrieve")
      .set("x-api-key", KEYS.acmeChat)
      .send({ userId, sessionId: "s-1", query, useMemory: true, ...(policy === undefined ? {} : { policy }) })
      .expect(200);
    const { name, version } = res.body.metadata.policy;
    return { header: String(res.headers["x-memgate-policy"]), meta: `${name}@${version}` };
  }

  test("stable per user, about the configured share of users, visible in metadata, header and metrics", async () => {
    const served = new Map<string, string>();
    for (const u of USERS) {
      const { header, meta } = await ask(u, "what do I drink?");
      expect(header).toBe(meta);
      served.set(u, meta);
    }
    const canaryUsers = USERS.filter((u) => served.get(u) === "fast@1");
    const stableUsers = USERS.filter((u) => served.get(u) === "default@2");
    expect(canaryUsers.length + stableUsers.length).toBe(USERS.length);
    // 30 % of 300 = 90; the split is the keyed hash's, the same on every replica and run.
    expect(canaryUsers.length).toBeGreaterThan(70);
    expect(canaryUsers.length).toBeLessThan(110);
    expect(canaryUsers).toEqual(USERS.filter((u) => inCanary({ policy: "fast", percent: 30 }, "acme", u)));

    // Turn after turn (other questions, so cache misses), a user keeps the policy they got.
    for (const u of [...canaryUsers.slice(0, 3), ...stableUsers.slice(0, 3)]) {
      for (let t = 0; t < 8; t++) expect((await ask(u, `question number ${t}?`)).header).toBe(served.get(u));
    }

    // An explicit policy wins over the canary.
    const inside = canaryUsers[0] ?? "";
    expect((await ask(inside, "what do I drink?", "default")).header).toBe("default@2");

    // A drop-in door (Zep graph.search) serves the same split; its `x-memgate-policy` request header wins.
    const zepSearch = (userId: string, asked?: string) => {
      const r = request(url).post("/api/v2/graph/search").set("x-api-key", KEYS.acmeChat);
      if (asked !== undefined) r.set("x-memgate-policy", asked);
      return r.send({ user_id: userId, query: "what do I drink?" }).expect(200);
    };
    const outside = stableUsers[0] ?? "";
    expect((await zepSearch(inside)).headers["x-memgate-policy"]).toBe("fast@1");
    expect((await zepSearch(outside)).headers["x-memgate-policy"]).toBe("default@2");
    expect((await zepSearch(inside, "default")).headers["x-memgate-policy"]).toBe("default@2");

    // The retrieval metrics split by policy, side by side.
    const families = parsePrometheusText((await request(url).get("/metrics").expect(200)).text);
    const count = (policy: string) =>
      (families.get(METRICS.latency.prometheus)?.samples ?? [])
        .filter((s) => s.name.endsWith("_count") && s.labels.policy === policy)
        .reduce((a, s) => a + s.value, 0);
    expect(count("fast")).toBe(canaryUsers.length + 3 * 8 + 1);
    expect(count("default")).toBe(stableUsers.length + 3 * 8 + 1 + 2);
    const lookups = families.get(METRICS.cacheLookups.prometheus)?.samples ?? [];
    expect(lookups.some((s) => s.labels.policy === "fast" && s.value > 0)).toBe(true);
  });
});
