/**
 * The multi-replica suite every shared Redis topology must pass (run by cluster.test.ts and sentinel.test.ts, the
 * way test/doors/common.case.test.ts runs one suite for every door): three real `memgate serve` processes on one
 * topology the test started itself, two tenants each with its own fake Zep (slow enough for requests to overlap).
 * Covered: a cache entry filled by one process is a hit on the other two; one per-user limit for the three; one
 * upstream call for identical concurrent requests across the three (single-flight); and a Redis master killed
 * under load — every answer a 200 (declared degradations while Redis fails over), every memory the asking tenant's
 * and user's own, and the cache shared again afterwards without a restart.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { hashKey } from "../../src/tenants/keys";
import { FakeUpstreams } from "../helpers/fake-upstreams";
import { type Gateway, startGateway, stopGateway, waitForRedis } from "./gateway-process";
import { waitFor } from "./redis-helpers";

/** A started topology, as the suite needs it. */
export interface SharedRedis {
  /** The gateway's environment for this topology (REDIS_CLUSTER_NODES, REDIS_SENTINELS + master, …). */
  env: Record<string, string>;
  /**
   * Kills the Redis master that holds `tenant`'s `user` (their keys' slot) and resolves once a replica has taken
   * over (the topology is healthy again).
   */
  killMasterOf(tenant: string, user: string): Promise<{ killed: number; promoted: number }>;
  stop(): Promise<void>;
}

const TENANTS = ["red", "blue"] as const;
type Tenant = (typeof TENANTS)[number];
const KEY: Record<Tenant, string> = {
  red: "mg_test_replicas_red_0123456789abcdef",
  blue: "mg_test_replicas_blue_0123456789abcdef",
};
const USERS = Array.from({ length: 24 }, (_, i) => `u-${i}`);
const TIGHT = 4;
const SEARCH_MS = 300;

export interface Answer {
  status: number;
  cache?: string;
  fallback?: string | null;
  contents: string[];
}

/** Every memory of `tenant`'s `user` starts with this: an answer holding another's is caught by its prefix. */
const owner = (tenant: string, user: string) => `[${tenant}/${user}]`;

async function ask(
  g: Gateway,
  tenant: Tenant,
  user: string,
  query: string,
  policy = "replicas",
): Promise<Answer> {
  const res = await fetch(`${g.url}/v1/retrieve`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-api-key": KEY[tenant] },
    body: JSON.stringify({ userId: user, sessionId: "s-1", query, useMemory: true, policy }),
    signal: AbortSignal.timeout(15_000),
  });
  const text = await res.text();
  if (res.status !== 200) return { status: res.status, contents: [text] };
  const body = JSON.parse(text) as {
    memories: Array<{ content: string }>;
    metadata: { cache: string; fallback: { code: string } | null };
  };
  return {
    status: res.status,
    cache: body.metadata.cache,
    fallback: body.metadata.fallback?.code ?? null,
    contents: body.memories.map((m) => m.content),
  };
}

/** What a topology's own tests get from the suite: the three running gateways and how to ask them. */
export interface SuiteContext {
  three(): [Gateway, Gateway, Gateway];
  ask: typeof ask;
  owner: typeof owner;
}

/** `more`: the topology's own tests, run inside the suite while its servers and gateways are up. */
export function replicaSuite(
  name: string,
  start: () => Promise<SharedRedis>,
  more?: (ctx: SuiteContext) => void,
): void {
  describe(`three gateway processes on ${name}`, () => {
    let redis: SharedRedis | undefined;
    let dir: string;
    const upstreams = new Map<Tenant, FakeUpstreams>();
    const gateways: Gateway[] = [];
    const searches = () => [...upstreams.values()].reduce((n, u) => n + u.searches.zep, 0);
    const three = (): [Gateway, Gateway, Gateway] => {
      const [a, b, c] = gateways;
      if (a === undefined || b === undefined || c === undefined)
        throw new Error("the gateways did not start");
      return [a, b, c];
    };

    beforeAll(async () => {
      dir = mkdtempSync(join(tmpdir(), "memgate-replicas-"));
      redis = await start();
      for (const tenant of TENANTS) {
        const upstream = await FakeUpstreams.start();
        upstream.searchDelayMs = SEARCH_MS;
        for (const user of USERS)
          upstream.seed(user, [
            {
              id: "m1",
              content: `${owner(tenant, user)} orders an oat milk flat white.`,
              at: "2026-03-01T09:00:00Z",
            },
            {
              id: "m2",
              content: `${owner(tenant, user)} works from the Lisbon office.`,
              at: "2026-03-02T09:00:00Z",
            },
          ]);
        upstreams.set(tenant, upstream);
      }
      const policies = join(dir, "policies");
      const policy = (id: string, points: number) =>
        `name: ${id}\nversion: 1\ntokenizer: approx\nretrieval: { minScore: 0 }\n` +
        `rateLimit: { perUser: { points: ${points}, durationSeconds: 60 } }\nfallbacks: { RATE_LIMITED: skip }\n` +
        "timeouts: { backendMs: 5000 }\nzep: { scopes: [edges] }\n";
      await import("node:fs/promises").then((fs) => fs.mkdir(policies));
      writeFileSync(join(policies, "replicas.yaml"), policy("replicas", 100_000));
      writeFileSync(join(policies, "tight.yaml"), policy("tight", TIGHT));
      const tenants = join(dir, "tenants.yaml");
      writeFileSync(
        tenants,
        `tenants:\n${TENANTS.map(
          (t) => `  - id: ${t}
    keys:
      - { name: app, sha256: ${hashKey(KEY[t])}, scopes: [retrieve] }
    policies: { allowed: ["*"], default: replicas }
    defaultBackend: zep
    backends:
      zep: { apiKeyEnv: T_ZEP_KEY, baseUrl: "${upstreams.get(t)?.zepBaseUrl}" }
`,
        ).join("")}`,
      );
      const env = {
        HOST: "127.0.0.1",
        PORT: "0",
        LOG_LEVEL: "info",
        MEMGATE_REDIS_PREFIX: "memgate-test:",
        MEMGATE_TENANTS_FILE: tenants,
        MEMGATE_POLICY_DIR: policies,
        MEMGATE_KEY_RATE_LIMIT: "1000000/60",
        T_ZEP_KEY: "zep-tenant-key",
        ...redis.env,
      };
      // One after the other: cold tsx compilations at once are slow on a 2-core machine.
      for (let i = 0; i < 3; i++) gateways.push(await startGateway(env));
      for (const g of gateways) await waitForRedis(g);
    }, 120_000);

    afterAll(async () => {
      await Promise.all(gateways.map(stopGateway));
      await Promise.all([...upstreams.values()].map((u) => u.close()));
      await redis?.stop();
      rmSync(dir, { recursive: true, force: true });
    }, 60_000);

    test("an entry filled by one process is a hit on the other two", async () => {
      const [a, b, c] = three();
      const before = searches();
      const filled = await ask(a, "red", "u-1", "what does the user order?");
      expect(filled).toMatchObject({ status: 200, cache: "miss", fallback: null });
      expect(filled.contents.length).toBeGreaterThan(0);
      for (const other of [b, c]) {
        expect(await ask(other, "red", "u-1", "what does the user order?")).toEqual({
          ...filled,
          cache: "hit",
        });
      }
      expect(searches() - before).toBe(1);
      // The same user and question in the other tenant is its own entry.
      const blue = await ask(b, "blue", "u-1", "what does the user order?");
      expect(blue).toMatchObject({ status: 200, cache: "miss" });
      expect(blue.contents.every((m) => m.startsWith(owner("blue", "u-1")))).toBe(true);
    });

    test(`one per-user limit for the three: ${TIGHT} retrievals in total`, async () => {
      const fallbacks: Array<string | null | undefined> = [];
      for (let i = 0; i < 3 * TIGHT; i++) {
        const answer = await ask(gateways[i % 3] as Gateway, "red", "u-2", `question ${i}`, "tight");
        expect(answer.status).toBe(200);
        fallbacks.push(answer.fallback);
      }
      expect(fallbacks).toEqual([...Array(TIGHT).fill(null), ...Array(2 * TIGHT).fill("RATE_LIMITED")]);
      // Another user of the tenant has a count of their own.
      expect((await ask(gateways[0] as Gateway, "red", "u-3", "question", "tight")).fallback).toBeNull();
    });

    test("identical concurrent requests to the three make one upstream call", async () => {
      const before = searches();
      const answers = await Promise.all(
        Array.from({ length: 9 }, (_, i) =>
          ask(gateways[i % 3] as Gateway, "blue", "u-4", "where does the user work?"),
        ),
      );
      expect(searches() - before).toBe(1);
      expect(new Set(answers.map((x) => JSON.stringify([x.status, x.fallback, x.contents])))).toEqual(
        new Set([JSON.stringify([200, null, answers[0]?.contents])]),
      );
      expect(answers[0]?.contents.length).toBeGreaterThan(0);
    });

    test("a master killed under load: no 5xx, nothing of another tenant or user, the cache shared again after", async () => {
      if (redis === undefined) throw new Error("no Redis topology");
      const target = { tenant: "red" as Tenant, user: "u-5" };
      const answers: Array<{ tenant: Tenant; user: string; answer: Answer }> = [];
      let stop = false;
      let n = 0;
      const worker = async () => {
        while (!stop) {
          const i = n++;
          const tenant = TENANTS[i % 2] as Tenant;
          const user = i % 5 === 0 ? target.user : (USERS[(i * 7) % USERS.length] as string);
          const answer = await ask(gateways[i % 3] as Gateway, tenant, user, `load question ${i % 4}`).catch(
            (err: unknown) => ({ status: -1, contents: [String(err)] }),
          );
          answers.push({ tenant, user, answer });
        }
      };
      const workers = Array.from({ length: 6 }, worker);
      await new Promise((r) => setTimeout(r, 1000));
      const beforeKill = answers.length;
      const { killed, promoted } = await redis.killMasterOf(target.tenant, target.user);
      expect(promoted).not.toBe(killed);
      await new Promise((r) => setTimeout(r, 1500));
      stop = true;
      await Promise.all(workers);

      expect(beforeKill).toBeGreaterThan(0);
      expect(answers.length).toBeGreaterThan(beforeKill);
      const statuses = new Map<number, number>();
      for (const { answer } of answers) statuses.set(answer.status, (statuses.get(answer.status) ?? 0) + 1);
      expect([...statuses.keys()]).toEqual([200]);
      for (const { tenant, user, answer } of answers) {
        for (const content of answer.contents) expect(content.startsWith(owner(tenant, user))).toBe(true);
      }

      // Without a restart: every process uses Redis again, and an entry of the failed-over slot is shared.
      for (const g of gateways) await waitForRedis(g, 20_000);
      const [a, b, c] = three();
      await waitFor(
        "an entry filled by one process to be a hit on the others",
        async () => {
          const q = `after the failover ${Date.now()}`;
          const filled = await ask(a, target.tenant, target.user, q);
          if (filled.cache !== "miss") return false;
          return (
            (await ask(b, target.tenant, target.user, q)).cache === "hit" &&
            (await ask(c, target.tenant, target.user, q)).cache === "hit"
          );
        },
        20_000,
      );
    }, 90_000);

    more?.({ three, ask, owner });
  });
}
