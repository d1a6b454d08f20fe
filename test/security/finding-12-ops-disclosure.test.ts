/**
 * Finding 12 (issue 26) — the operations endpoints said too much: the unauthenticated `/readyz` named the
 * tenants whose circuits were open; `GET /v1/policies` showed any tenant's admin key every tenant's policies,
 * the rejected files and the server's file paths; `target_info` on the unauthenticated `/metrics` carried the
 * process's command line, executable path, owner and the host name. Driven as a stranger and as another
 * tenant's admin would: real requests to the app.
 */

import { writeFileSync } from "node:fs";
import { hostname } from "node:os";
import { join } from "node:path";
import { metrics } from "@opentelemetry/api";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { MeterProvider } from "@opentelemetry/sdk-metrics";
import request from "supertest";
import { createPrometheusReader, releasePrometheusReader } from "../../src/telemetry/prometheus";
import { hashKey } from "../../src/tenants/keys";
import { type Harness, KEYS, makeHarness } from "../helpers/harness";
import { makeCandidate } from "../helpers/items";
import { parsePrometheusText } from "../telemetry/prom-parse";

const body = (query: string) => ({ userId: "u-123", sessionId: "s-9", query, useMemory: true });

describe("finding 12 — /readyz names no tenant", () => {
  let h: Harness;
  afterEach(() => h.close());

  test("with acme's Zep circuit open, the unauthenticated probe says degraded without a tenant id", async () => {
    h = await makeHarness({ env: { MEMGATE_BREAKER_HALF_OPEN_MS: "60000" } });
    h.zep.acme
      ?.setUser("u-123", [makeCandidate({ id: "f1", content: "Ana orders tea.", score: 0.9 })])
      .fail("unavailable", { status: 503 });
    for (let i = 0; i < 5; i++)
      await request(h.app)
        .post("/v1/retrieve")
        .set("x-api-key", KEYS.acmeChat)
        .send(body(`q${i}`))
        .expect(200);
    const res = await request(h.app).get("/readyz").expect(200);
    expect(res.body.status).toBe("degraded");
    for (const tenant of ["acme", "globex"]) expect(res.text).not.toContain(tenant);
    expect(res.body.checks).toContainEqual({
      name: "backend:zep",
      ok: false,
      degraded: true,
      detail: "1 of 2 zep circuits open",
    });
  });
});

const ADMIN_A = "mg_test_f12_admin_a_0123456789";
const ADMIN_B = "mg_test_f12_admin_b_0123456789";
const ADMIN_OPS = "mg_test_f12_admin_ops_0123456789";
const TENANTS = `tenants:
  - id: alpha
    keys: [{ name: admin, sha256: ${hashKey(ADMIN_A)}, scopes: [retrieve, admin] }]
    policies: { allowed: [default], default: default }
    backends: { zep: { apiKeyEnv: ACME_ZEP_KEY } }
  - id: bravo
    keys: [{ name: admin, sha256: ${hashKey(ADMIN_B)}, scopes: [retrieve, admin] }]
    policies: { allowed: [bravo-private, fast], default: bravo-private }
    backends: { zep: { apiKeyEnv: ACME_ZEP_KEY } }
  - id: ops
    keys: [{ name: admin, sha256: ${hashKey(ADMIN_OPS)}, scopes: [admin] }]
    policies: { allowed: ["*"], default: default }
    backends: { zep: { apiKeyEnv: ACME_ZEP_KEY } }
`;

describe("finding 12 — GET /v1/policies is scoped to the caller's tenant", () => {
  let h: Harness;
  beforeEach(async () => {
    h = await makeHarness({
      tenants: TENANTS,
      policies: { "bravo-private": "name: bravo-private\nversion: 7\nretrieval: { minScore: 0.5 }\n" },
    });
    writeFileSync(join(h.dir, "policies", "broken.yaml"), "name: broken\nversion: nope\n");
    await h.services.policies.reload();
  });
  afterEach(() => h.close());

  const list = (key: string) => request(h.app).get("/v1/policies").set("x-api-key", key).expect(200);
  const names = (res: request.Response) =>
    (res.body.policies as Array<{ name: string }>).map((p) => p.name).sort();

  test("alpha's admin sees alpha's policies only: not bravo's, not the rejected files, no server path", async () => {
    const res = await list(ADMIN_A);
    expect(names(res)).toEqual(["default"]);
    expect(res.body.rejected).toEqual([]);
    expect(res.text).not.toContain("bravo");
    expect(res.text).not.toContain(h.dir);
    expect(res.body.policies[0].file).toBe("default.yaml");
  });

  test("bravo's admin sees bravo's; a tenant allowed every policy sees all and the rejected files, by name", async () => {
    expect(names(await list(ADMIN_B))).toEqual(["bravo-private", "fast"]);
    const ops = await list(ADMIN_OPS);
    expect(names(ops)).toContain("bravo-private");
    expect(ops.body.rejected).toEqual([expect.objectContaining({ file: "broken.yaml" })]);
    expect(ops.text).not.toContain(h.dir);
  });
});

describe("finding 12 — target_info on /metrics carries no command line, path, owner or host", () => {
  let h: Harness;
  let provider: MeterProvider;
  let reader: ReturnType<typeof createPrometheusReader>;
  beforeAll(() => {
    reader = createPrometheusReader();
    provider = new MeterProvider({
      readers: [reader],
      // What the SDK's default detectors put in the resource (process, host, OS, service).
      resource: resourceFromAttributes({
        "service.name": "memgate",
        "service.instance.id": "b7c0a9c4-1d1e-4a57-9d0f-1f2e3d4c5b6a",
        "telemetry.sdk.language": "nodejs",
        "host.name": hostname(),
        "host.id": "4c4c4544-0042-3510-8052-b4c04f4e3232",
        "host.arch": "amd64",
        "os.type": "linux",
        "process.pid": 4242,
        "process.executable.path": "/usr/local/bin/node",
        "process.command": "/srv/memgate/bin/memgate.js",
        "process.command_args": [
          "/usr/local/bin/node",
          "/srv/memgate/bin/memgate.js",
          "serve",
          "--secret-flag",
        ],
        "process.command_line": "/usr/local/bin/node /srv/memgate/bin/memgate.js serve --secret-flag",
        "process.owner": "memgate-svc",
        "process.runtime.version": "20.19.0",
      }),
    });
    metrics.setGlobalMeterProvider(provider);
  });
  afterAll(async () => {
    releasePrometheusReader(reader);
    await provider.shutdown();
    metrics.disable();
  });
  beforeEach(async () => {
    h = await makeHarness();
  });
  afterEach(() => h.close());

  test("only the service's identity is labelled", async () => {
    const res = await request(h.app).get("/metrics").expect(200);
    const info = parsePrometheusText(res.text).get("target_info")?.samples[0];
    expect(info?.labels.service_name).toBe("memgate");
    expect(Object.keys(info?.labels ?? {}).sort()).toEqual([
      "service_instance_id",
      "service_name",
      "telemetry_sdk_language",
    ]);
    for (const s of ["/srv/memgate", "--secret-flag", "memgate-svc", "/usr/local/bin/node", "4c4c4544"])
      expect(res.text).not.toContain(s);
    expect(res.text).not.toMatch(
      new RegExp(`host_name="${hostname().replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}"`),
    );
  });
});
