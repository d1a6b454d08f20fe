/**
 * Finding 09 (issue 26): the circuit breaker never opened when existence checks for new users succeeded between
 * failing searches. Each request for a user not yet known made a `GET /users/{id}` (fine) and a failing search;
 * the lookup's success reset the consecutive count and held the failure ratio at 50 %, so 20 requests cost 68
 * failing upstream searches with the circuit closed. Search failures are now counted on their own: a lookup's
 * success says nothing about search and is not counted for the breaker (its failure still is).
 *
 * Driven over HTTP with the real Zep adapter against a fake Zep whose searches fail (500) and lookups succeed.
 */
import request from "supertest";
import { ResilientBackend } from "../../src/resilience";
import { BACKEND_FACTORIES } from "../../src/server/services";
import { hashKey } from "../../src/tenants/keys";
import { FakeUpstreams } from "../helpers/fake-upstreams";
import { type Harness, makeHarness } from "../helpers/harness";

const KEY = "mg_test_finding09_0123456789";
const USERS = Array.from({ length: 20 }, (_, i) => `new-user-${i}`);

describe("Finding 09 — the breaker opens on failing searches between succeeding existence checks", () => {
  let upstream: FakeUpstreams;
  let h: Harness;

  beforeEach(async () => {
    upstream = await FakeUpstreams.start();
    for (const user of USERS) upstream.seed(user, []);
    h = await makeHarness({
      tenants: `tenants:
  - id: t9
    keys:
      - { name: app, sha256: ${hashKey(KEY)}, scopes: [retrieve] }
    policies: { allowed: ["*"], default: default }
    backends:
      zep: { apiKeyEnv: T9_ZEP_KEY, baseUrl: "${upstream.zepBaseUrl}" }
`,
      factories: BACKEND_FACTORIES,
      env: { T9_ZEP_KEY: "zep-secret-t9" },
    });
  });

  afterEach(async () => {
    await h.close();
    await upstream.close();
  });

  function circuit(): string | undefined {
    const tenant = h.services.tenants.tenants()[0];
    const zep = tenant === undefined ? undefined : h.services.backends.built(tenant, "zep");
    return zep instanceof ResilientBackend ? zep.circuit() : undefined;
  }

  test("20 requests for 20 new users: the circuit opens and the failing searches stop", async () => {
    upstream.fail(500);
    const codes: string[] = [];
    const after: number[] = [];
    for (const userId of USERS) {
      const res = await request(h.app)
        .post("/v1/retrieve")
        .set("x-api-key", KEY)
        .send({
          userId,
          sessionId: "s-9",
          query: "what do I usually order?",
          useMemory: true,
          policy: "fast",
        })
        .expect(200);
      codes.push(res.body.metadata.fallback?.code);
      after.push(upstream.searches.zep);
    }
    expect(codes.every((c) => c === "ZEP_UNAVAILABLE")).toBe(true);
    const searches = upstream.searches.zep;
    expect({ circuit: circuit(), searches }).toMatchObject({ circuit: "open" });
    // Five failing searches in a row open it: what reached Zep is the first five requests' (each search is two Zep
    // calls — edges and episodes — with one retry), and nothing after them (before the fix: 80, all 20 requests').
    const perRequest = after[0] ?? 0;
    expect(searches).toBeLessThanOrEqual(5 * perRequest);
    expect(after[19]).toBe(after[9]);
  });

  test("succeeding searches keep it closed whatever the lookups do", async () => {
    for (const userId of USERS.slice(0, 8)) {
      await request(h.app)
        .post("/v1/retrieve")
        .set("x-api-key", KEY)
        .send({
          userId,
          sessionId: "s-9",
          query: "what do I usually order?",
          useMemory: true,
          policy: "fast",
        })
        .expect(200);
    }
    expect(circuit()).toBe("closed");
  });
});
