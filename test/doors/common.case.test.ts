/**
 * One suite, every door (as hono's `common.case.test.ts` runs one suite against every router): the same cases
 * through `/v1/retrieve`, the Zep search route driven by `@getzep/zep-cloud` and the OpenMemory query route
 * driven by `openmemory-js`, against one real gateway (production wiring, real adapters) and real upstream HTTP
 * servers on 127.0.0.1. What the retrieval core does (cache, fallbacks, cooldown, per-user limits, breaker,
 * spans, metrics) must hold for every door alike; only the wire shape differs.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { BACKEND_FACTORIES } from "../../src/server/services";
import { hashKey } from "../../src/tenants/keys";
import { FakeUpstreams } from "../helpers/fake-upstreams";
import { type Harness, makeHarness } from "../helpers/harness";
import { installTelemetry, type TestTelemetry } from "../telemetry/setup";
import { DOORS, type Door } from "./doors";

const KEY = "mg_test_doors_app_0123456789";
const TIGHT_KEY = "mg_test_doors_tight_0123456789";
const BRIEF_KEY = "mg_test_doors_brief_0123456789";

/**
 * Every score kept; entries fresh for a minute (a loaded CI machine can take over a second between two calls), then
 * stale for an hour; an unavailable backend serves the cache.
 */
const DOORS_POLICY = `name: doors
version: 1
tokenizer: approx
retrieval: { minScore: 0, topK: 5 }
cache: { ttlSeconds: 60, staleSeconds: 3600 }
timeouts: { backendMs: 2000 }
fallbacks: { ZEP_UNAVAILABLE: cache, OPENMEMORY_UNAVAILABLE: cache, RATE_LIMITED: cache }
`;
/** The same with entries fresh for 1 s only: the test that needs a stale entry waits it out. */
const BRIEF_POLICY = DOORS_POLICY.replace("name: doors", "name: brief").replace(
  "ttlSeconds: 60",
  "ttlSeconds: 1",
);
/** Two retrievals per user per minute. */
const TIGHT_POLICY = `name: tight
version: 1
tokenizer: approx
retrieval: { minScore: 0, topK: 5 }
rateLimit: { perUser: { points: 2, durationSeconds: 60 } }
fallbacks: { RATE_LIMITED: skip }
`;

function tenants(upstream: FakeUpstreams): string {
  const backends = `    defaultBackend: zep
    backends:
      zep: { apiKeyEnv: T_ZEP_KEY, baseUrl: "${upstream.zepBaseUrl}" }
      openmemory: { url: "${upstream.origin}", apiKeyEnv: T_OM_KEY, userScoping: user_id }`;
  return `tenants:
  - id: t
    keys:
      - { name: app, sha256: ${hashKey(KEY)}, scopes: [retrieve] }
    policies: { allowed: ["*"], default: doors }
${backends}
  - id: tight
    keys:
      - { name: app, sha256: ${hashKey(TIGHT_KEY)}, scopes: [retrieve] }
    policies: { allowed: ["*"], default: tight }
${backends}
  - id: brief
    keys:
      - { name: app, sha256: ${hashKey(BRIEF_KEY)}, scopes: [retrieve] }
    policies: { allowed: ["*"], default: brief }
${backends}
`;
}

const MEMORIES = [
  { id: "m1", content: "Ana orders an oat milk flat white every morning.", at: "2026-03-01T09:00:00Z" },
  { id: "m2", content: "Ana works from the Lisbon office on Tuesdays.", at: "2026-03-02T09:00:00Z" },
  { id: "m3", content: "Ana's favourite cafe is on Rua Augusta.", at: "2026-03-03T09:00:00Z" },
];

interface Running {
  upstream: FakeUpstreams;
  h: Harness;
  server: Server;
  origin: string;
}

async function start(env: Record<string, string> = {}): Promise<Running> {
  const upstream = await FakeUpstreams.start();
  for (const user of ["ana", "bea", "cai", "dan", "eve"]) upstream.seed(user, MEMORIES);
  const h = await makeHarness({
    policies: { doors: DOORS_POLICY, tight: TIGHT_POLICY, brief: BRIEF_POLICY },
    factories: BACKEND_FACTORIES,
    tenants: tenants(upstream),
    env: { T_ZEP_KEY: "zep-tenant-key", T_OM_KEY: "om-tenant-key", MEMGATE_RETRY_MAX: "0", ...env },
  });
  const server = await new Promise<Server>((resolve, reject) => {
    const s = createServer(h.app).listen(0, "127.0.0.1", (err?: Error) => (err ? reject(err) : resolve(s)));
  });
  return { upstream, h, server, origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

async function stop(r: Running | undefined): Promise<void> {
  if (r === undefined) return;
  r.server.closeAllConnections();
  await new Promise<void>((resolve) => r.server.close(() => resolve()));
  await r.h.close();
  await r.upstream.close();
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe.each(DOORS.map((door) => [door.name, door] as const))("door: %s", (_name, door: Door) => {
  let r: Running | undefined;
  afterEach(async () => {
    await stop(r);
    r = undefined;
  });

  test("a second identical call is a cache hit: same answer, no upstream call", async () => {
    r = await start();
    const first = await door.ask(r.origin, KEY, "ana", "what does Ana order?");
    expect(first).toMatchObject({ cache: "miss", fallback: null });
    expect(first.texts).toContain(MEMORIES[0]?.content);
    const searches = r.upstream.searches[door.wire];
    const second = await door.ask(r.origin, KEY, "ana", "what does Ana order?");
    expect(second).toMatchObject({ cache: "hit", fallback: null, texts: first.texts });
    expect(r.upstream.searches[door.wire]).toBe(searches);
  });

  test("an upstream 500 is the declared fallback in the door's shape, never a 5xx", async () => {
    r = await start();
    r.upstream.fail(500);
    const answer = await door.ask(r.origin, KEY, "bea", "where does Bea work?");
    // `cache` declared, nothing cached yet: served as skip (no memories).
    expect(answer).toMatchObject({
      texts: [],
      fallback: door.wire === "zep" ? "ZEP_UNAVAILABLE" : "OPENMEMORY_UNAVAILABLE",
      action: "skip",
    });
  });

  test("an upstream 429 with Retry-After: the cooldown is honoured and the cache fallback serves the stale entry", async () => {
    r = await start();
    const fresh = await door.ask(r.origin, BRIEF_KEY, "cai", "what does Cai order?");
    expect(fresh.texts.length).toBeGreaterThan(0);
    await sleep(1100); // past ttlSeconds: the entry is stale now
    r.upstream.fail(429, 30);
    const limited = await door.ask(r.origin, BRIEF_KEY, "cai", "what does Cai order?");
    expect(limited).toMatchObject({
      fallback: "RATE_LIMITED",
      action: "cache",
      cache: "stale",
      texts: fresh.texts,
    });
    // The upstream asked for 30 s: the next call does not reach it, and is served the stale entry again.
    const searches = r.upstream.searches[door.wire];
    const cooling = await door.ask(r.origin, BRIEF_KEY, "cai", "what does Cai order?");
    expect(cooling).toMatchObject({
      fallback: "RATE_LIMITED",
      action: "cache",
      cache: "stale",
      texts: fresh.texts,
    });
    expect(r.upstream.searches[door.wire]).toBe(searches);
  });

  test("the per-user limit answers its fallback", async () => {
    r = await start();
    expect((await door.ask(r.origin, TIGHT_KEY, "dan", "first question")).fallback).toBeNull();
    expect((await door.ask(r.origin, TIGHT_KEY, "dan", "second question")).fallback).toBeNull();
    const searches = r.upstream.searches[door.wire];
    const third = await door.ask(r.origin, TIGHT_KEY, "dan", "third question");
    expect(third).toMatchObject({ texts: [], fallback: "RATE_LIMITED", action: "skip" });
    expect(r.upstream.searches[door.wire]).toBe(searches);
  });

  test("the breaker opens on failures (calls refused without reaching the upstream) and recovers", async () => {
    r = await start({ MEMGATE_BREAKER_CONSECUTIVE: "3", MEMGATE_BREAKER_HALF_OPEN_MS: "300" });
    const unavailable = door.wire === "zep" ? "ZEP_UNAVAILABLE" : "OPENMEMORY_UNAVAILABLE";
    expect((await door.ask(r.origin, KEY, "eve", "warm up")).fallback).toBeNull();
    r.upstream.fail(500);
    for (const q of ["one", "two", "three"])
      expect((await door.ask(r.origin, KEY, "eve", q)).fallback).toBe(unavailable);
    const searches = r.upstream.searches[door.wire];
    expect((await door.ask(r.origin, KEY, "eve", "four")).fallback).toBe(unavailable);
    expect(r.upstream.searches[door.wire]).toBe(searches); // open: refused at once
    r.upstream.heal();
    await sleep(350);
    const recovered = await door.ask(r.origin, KEY, "eve", "five");
    expect(recovered).toMatchObject({ fallback: null, cache: "miss" });
    expect(recovered.texts.length).toBeGreaterThan(0);
  });
});

describe("every door: spans and metrics identical in kind", () => {
  let telemetry: TestTelemetry;
  let r: Running | undefined;
  beforeAll(() => {
    telemetry = installTelemetry();
  });
  afterAll(async () => {
    await stop(r);
    await telemetry.close();
  });

  test("one miss per door: the same memgate.* span tree and the same retrieval metrics", async () => {
    r = await start();
    const running = r;
    const kinds = new Map<string, string[]>();
    for (const [i, door] of DOORS.entries()) {
      telemetry.reset();
      // A user of its own per door: each makes its own existence check, as a first request does.
      await door.ask(running.origin, KEY, ["ana", "bea", "cai"][i] ?? "dan", `question ${i}`);
      const names = telemetry
        .spans()
        .map((s) => s.name)
        .filter((n) => n.startsWith("memgate."));
      kinds.set(door.name, [...new Set(names)].sort());
      const retrieve = telemetry.spans().find((s) => s.name === "memgate.retrieve");
      expect(retrieve?.attributes).toMatchObject({ "memgate.tenant": "t", "memgate.cache": "miss" });
    }
    const [first, ...rest] = [...kinds.values()];
    expect(first).toEqual(
      expect.arrayContaining(["memgate.retrieve", "memgate.backend.search", "memgate.pipeline"]),
    );
    for (const other of rest) expect(other).toEqual(first);
    const metrics = await (await fetch(`${running.origin}/metrics`)).text();
    const misses = [
      ...metrics.matchAll(/memgate_retrieval_cache_lookups_total\{[^}]*cache="miss"[^}]*\} (\d+)/g),
    ];
    expect(misses.reduce((sum, m) => sum + Number(m[1]), 0)).toBe(DOORS.length);
    expect(metrics).toMatch(/memgate_retrieval_latency_milliseconds_count\{[^}]*\} [1-9]/);
  });
});
