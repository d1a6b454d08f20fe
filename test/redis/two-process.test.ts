import { cpSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type Redis from "ioredis";
import { hashKey } from "../../src/tenants/keys";
import { OPENMEMORY, ZEP } from "../doors/doors";
import { FakeUpstreams } from "../helpers/fake-upstreams";
import { type Gateway, ROOT, startGateway, stopGateway, waitForRedis } from "./gateway-process";
import { deleteKeys, REDIS_URL, requireRedis, testPrefix } from "./redis-helpers";

/**
 * Two real gateway processes sharing one Redis (docs/configuration.md#several-replicas-redis): they enforce one per-key limit together (not twice
 * the limit), and a cache entry filled by one is a hit on the other. The processes run the current sources
 * through tsx (no stale dist/), with the embedded local backend on a small JSONL file. The drop-in doors share
 * the same: through the real Zep and OpenMemory SDKs, against upstream servers in this test process, an entry
 * filled through one process is a hit on the other and one per-user limit holds for both.
 */
const PREFIX = testPrefix("2proc");
const LIMITED = "mg_test_two_process_limited_0123456789";
const ROOMY = "mg_test_two_process_roomy_0123456789";
const LIMIT = 6;
const DOORS_KEY = "mg_test_two_process_doors_0123456789";
/** The doors tenant's per-user limit (policy `doors2p`). */
const USER_LIMIT = 4;

function memory(id: string, content: string, day: number) {
  return JSON.stringify({
    id,
    userId: "ana",
    type: "fact",
    sessionId: "s-1",
    timestamp: `2026-01-${String(day).padStart(2, "0")}T09:00:00Z`,
    content,
  });
}

async function retrieve(g: Gateway, key: string, query: string) {
  const res = await fetch(`${g.url}/v1/retrieve`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-api-key": key },
    body: JSON.stringify({ userId: "ana", sessionId: "s-1", query, useMemory: true }),
  });
  const json = (await res.json()) as {
    memories?: Array<{ id: string }>;
    metadata?: { cache: string };
  };
  return { status: res.status, body: json, headers: res.headers };
}

describe("two gateway processes sharing one Redis", () => {
  let admin: Redis;
  let dir: string;
  let upstream: FakeUpstreams;
  const gateways: Gateway[] = [];

  beforeAll(async () => {
    admin = await requireRedis();
    dir = mkdtempSync(join(tmpdir(), "memgate-2proc-"));
    upstream = await FakeUpstreams.start();
    for (const user of ["ana", "bea", "cai", "dan"])
      upstream.seed(user, [
        { id: "z1", content: `${user} orders an oat milk flat white.`, at: "2026-03-01T09:00:00Z" },
        { id: "z2", content: `${user} works from the Lisbon office.`, at: "2026-03-02T09:00:00Z" },
      ]);
    const policies = join(dir, "policies");
    cpSync(join(ROOT, "policies"), policies, { recursive: true });
    writeFileSync(
      join(policies, "doors2p.yaml"),
      `name: doors2p\nversion: 1\ntokenizer: approx\nretrieval: { minScore: 0 }\nrateLimit: { perUser: { points: ${USER_LIMIT}, durationSeconds: 60 } }\nfallbacks: { RATE_LIMITED: skip }\n`,
    );
    const data = join(dir, "memories.jsonl");
    writeFileSync(
      data,
      `${[
        memory("m1", "Ana orders an oat milk flat white every morning.", 1),
        memory("m2", "Ana drinks green tea in the afternoon.", 2),
        memory("m3", "Ana works from the Lisbon office on Tuesdays.", 3),
      ].join("\n")}\n`,
    );
    const tenants = join(dir, "tenants.yaml");
    writeFileSync(
      tenants,
      `tenants:
  - id: shop
    keys:
      - { name: limited, sha256: ${hashKey(LIMITED)}, scopes: [retrieve], rateLimit: { points: ${LIMIT}, durationSeconds: 60 } }
      - { name: roomy, sha256: ${hashKey(ROOMY)}, scopes: [retrieve] }
    policies: { allowed: ["*"], default: default }
    backends:
      local: { dataFile: ${JSON.stringify(data)} }
  - id: doors
    keys:
      - { name: app, sha256: ${hashKey(DOORS_KEY)}, scopes: [retrieve] }
    policies: { allowed: ["*"], default: doors2p }
    defaultBackend: zep
    backends:
      zep: { apiKeyEnv: T_ZEP_KEY, baseUrl: "${upstream.zepBaseUrl}" }
      openmemory: { url: "${upstream.origin}", apiKeyEnv: T_OM_KEY, userScoping: user_id }
`,
    );
    const env = {
      HOST: "127.0.0.1",
      PORT: "0",
      LOG_LEVEL: "warn",
      REDIS_URL,
      MEMGATE_REDIS_PREFIX: PREFIX,
      MEMGATE_TENANTS_FILE: tenants,
      MEMGATE_POLICY_DIR: policies,
      T_ZEP_KEY: "zep-tenant-key",
      T_OM_KEY: "om-tenant-key",
      MEMGATE_KEY_RATE_LIMIT: "1000/60",
      // The exact per-key limit (one Redis call per request); the batched default: test/redis/key-limit-sync.test.ts.
      MEMGATE_KEY_LIMIT_SYNC_MS: "0",
    };
    // Started one after the other: two cold tsx compilations at once are slow on a 2-core machine.
    gateways.push(await startGateway({ ...env, LOG_LEVEL: "info" }));
    gateways.push(await startGateway({ ...env, LOG_LEVEL: "info" }));
    for (const g of gateways) await waitForRedis(g);
  }, 60_000);

  afterAll(async () => {
    await Promise.all(gateways.map(stopGateway));
    await upstream?.close();
    await deleteKeys(admin, PREFIX);
    admin.disconnect();
    rmSync(dir, { recursive: true, force: true });
  });

  const pair = (): [Gateway, Gateway] => {
    const [a, b] = gateways;
    if (a === undefined || b === undefined) throw new Error("the gateways did not start");
    return [a, b];
  };

  test(`one per-key limit for both: ${LIMIT} requests in total, not ${2 * LIMIT}`, async () => {
    const [a, b] = pair();
    const statuses: number[] = [];
    for (let i = 0; i < 2 * LIMIT; i++) {
      const res = await retrieve(i % 2 === 0 ? a : b, LIMITED, `question ${i}`);
      statuses.push(res.status);
      if (res.status === 200) expect(res.headers.get("ratelimit-policy")).toBe(`"key";q=${LIMIT};w=60`);
      else expect(Number(res.headers.get("retry-after"))).toBeGreaterThan(0);
    }
    expect(statuses).toEqual([...Array(LIMIT).fill(200), ...Array(LIMIT).fill(429)]);
  });

  test("an entry filled by one process is a hit on the other (both ways)", async () => {
    const [a, b] = pair();
    const filled = await retrieve(a, ROOMY, "what coffee does Ana order?");
    expect(filled.status).toBe(200);
    expect(filled.body.metadata?.cache).toBe("miss");
    expect(filled.body.memories?.length).toBeGreaterThan(0);
    const other = await retrieve(b, ROOMY, "what coffee does Ana order?");
    expect(other.body.metadata?.cache).toBe("hit");
    expect(other.body.memories).toEqual(filled.body.memories);

    expect((await retrieve(b, ROOMY, "where does Ana work?")).body.metadata?.cache).toBe("miss");
    expect((await retrieve(a, ROOMY, "where does Ana work?")).body.metadata?.cache).toBe("hit");
  });

  describe.each([
    [ZEP.name, ZEP, "ana", "bea"],
    [OPENMEMORY.name, OPENMEMORY, "cai", "dan"],
  ] as const)("door %s", (_name, door, cacheUser, limitUser) => {
    test("an entry filled through one process is a hit on the other", async () => {
      const [a, b] = pair();
      const filled = await door.ask(a.url, DOORS_KEY, cacheUser, "what does the user order?");
      expect(filled).toMatchObject({ cache: "miss", fallback: null });
      expect(filled.texts.length).toBeGreaterThan(0);
      const searches = upstream.searches[door.wire];
      const other = await door.ask(b.url, DOORS_KEY, cacheUser, "what does the user order?");
      expect(other).toMatchObject({ cache: "hit", fallback: null, texts: filled.texts });
      expect(upstream.searches[door.wire]).toBe(searches);
    });

    test(`one per-user limit for both processes: ${USER_LIMIT} retrievals in total`, async () => {
      const [a, b] = pair();
      const fallbacks: Array<string | null> = [];
      for (let i = 0; i < 2 * USER_LIMIT; i++) {
        const answer = await door.ask(i % 2 === 0 ? a.url : b.url, DOORS_KEY, limitUser, `question ${i}`);
        fallbacks.push(answer.fallback);
      }
      expect(fallbacks).toEqual([...Array(USER_LIMIT).fill(null), ...Array(USER_LIMIT).fill("RATE_LIMITED")]);
    });
  });
});
