/**
 * The tenants file hot-reloads (issue 28, item 3), proven on the real binary (`node bin/memgate.js serve`) with the
 * file edited on disk while it runs: a key added works, a revoked key gets 401, a key's limit changes, all without
 * a restart; a bad edit is refused (the old file keeps serving), logged, and shown by /readyz as degraded.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { hashKey } from "../../src/tenants/keys";
import { ensureBuilt, type Gateway, ROOT, startGateway, stopGateway } from "../redis/gateway-process";

const KEY_A = "mg_test_reload_a_0123456789";
const KEY_B = "mg_test_reload_b_0123456789";

let dir = "";
let gateway: Gateway | undefined;
let url = "";

const tenantsFile = () => join(dir, "tenants.yaml");

/** One tenant on the demo store with the given keys (`name: rateLimit points` or none). */
function writeTenants(keys: Array<{ name: string; key: string; points?: number }>): void {
  const lines = keys.map(
    (k) =>
      `      - { name: ${k.name}, sha256: ${hashKey(k.key)}, scopes: [retrieve]${
        k.points === undefined ? "" : `, rateLimit: { points: ${k.points}, durationSeconds: 60 }`
      } }`,
  );
  writeFileSync(
    tenantsFile(),
    `tenants:
  - id: acme
    keys:
${lines.join("\n")}
    backends:
      local: { dataFile: ${join(ROOT, "config/demo-memories.jsonl")} }
`,
  );
}

const readyz = async (): Promise<{ status: string; checks: Array<{ name: string; detail?: string }> }> =>
  (await fetch(`${url}/readyz`)).json() as Promise<{
    status: string;
    checks: Array<{ name: string; detail?: string }>;
  }>;

const retrieve = (key: string) =>
  fetch(`${url}/v1/retrieve`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${key}` },
    body: JSON.stringify({ userId: "ana", sessionId: "s-1", query: "coffee", useMemory: true }),
  });

async function waitFor(what: string, check: () => Promise<boolean>, timeoutMs = 8000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`timed out waiting for ${what}; logs:\n${gateway?.output() ?? ""}`);
}

beforeAll(async () => {
  ensureBuilt();
  dir = mkdtempSync(join(tmpdir(), "memgate-tenants-reload-"));
  writeTenants([{ name: "a", key: KEY_A }]);
  gateway = await startGateway(
    {
      PORT: "0",
      LOG_LEVEL: "info",
      MEMGATE_TENANTS_FILE: tenantsFile(),
      MEMGATE_POLICY_DIR: join(ROOT, "policies"),
    },
    "dist",
  );
  url = gateway.url;
}, 40_000);

afterAll(async () => {
  if (gateway) await stopGateway(gateway);
  if (dir !== "") rmSync(dir, { recursive: true, force: true });
});

test("a key added works and a revoked key gets 401, without a restart", async () => {
  expect((await retrieve(KEY_A)).status).toBe(200);
  expect((await retrieve(KEY_B)).status).toBe(401);

  writeTenants([{ name: "b", key: KEY_B }]); // b added, a revoked
  await waitFor("key b accepted", async () => (await retrieve(KEY_B)).status === 200);
  expect((await retrieve(KEY_A)).status).toBe(401);
  expect(gateway?.output()).toContain('"event":"tenants.reloaded"');
  expect(gateway?.child.exitCode).toBeNull();
}, 20_000);

test("a key's limit changes without a restart", async () => {
  writeTenants([{ name: "b", key: KEY_B, points: 2 }]);
  await waitFor(
    "the new limit",
    async () => (await retrieve(KEY_B)).headers.get("ratelimit-policy") === '"key";q=2;w=60',
  );
  let status = 200;
  for (let i = 0; i < 3 && status === 200; i++) status = (await retrieve(KEY_B)).status;
  expect(status).toBe(429);
}, 20_000);

test("a bad edit is refused: the old file keeps serving, the error is logged and /readyz says degraded", async () => {
  writeTenants([{ name: "b", key: KEY_B }]);
  await waitFor("limit lifted", async () => (await retrieve(KEY_B)).status === 200);
  expect((await readyz()).status).toBe("ready");

  writeFileSync(
    tenantsFile(),
    `tenants:\n  - id: acme\n    keys:\n      - { name: a, sha256: ${hashKey(KEY_A)}, scopess: [retrieve] }\n    backends: { local: { dataFile: x.jsonl } }\n`,
  );
  await waitFor("the refusal", async () => (await readyz()).status === "degraded");
  const ready = await readyz();
  const check = ready.checks.find((c) => c.name === "tenants");
  expect(check?.detail).toContain("change rejected");
  expect(check?.detail).toContain("tenants.yaml:4: tenants[0].keys[0].scopess: unknown key");
  expect(check?.detail).not.toContain(dir); // the server's path stays out of an open probe
  expect(gateway?.output()).toContain('"event":"tenants.rejected"');
  expect(gateway?.output()).toContain("tenants file change rejected; the previous file keeps serving");
  // The old file keeps serving: b still works, a is still revoked.
  expect((await retrieve(KEY_B)).status).toBe(200);
  expect((await retrieve(KEY_A)).status).toBe(401);

  // Fixed: accepted, ready again.
  writeTenants([
    { name: "a", key: KEY_A },
    { name: "b", key: KEY_B },
  ]);
  await waitFor("ready again", async () => (await readyz()).status === "ready");
  expect((await retrieve(KEY_A)).status).toBe(200);
}, 20_000);

test("a tenant added without a restart is served, its local store already loaded (the OpenMemory routes)", async () => {
  const keyC = "mg_test_reload_c_0123456789";
  const base = `tenants:
  - id: acme
    keys:
      - { name: a, sha256: ${hashKey(KEY_A)}, scopes: [retrieve] }
    backends:
      local: { dataFile: ${join(ROOT, "config/demo-memories.jsonl")} }
`;
  writeFileSync(
    tenantsFile(),
    `${base}  - id: globex
    keys:
      - { name: c, sha256: ${hashKey(keyC)}, scopes: [retrieve, proxy] }
    backends:
      local: { dataFile: ${join(ROOT, "config/demo-memories.jsonl")} }
`,
  );
  const all = () => fetch(`${url}/memory/all`, { headers: { authorization: `Bearer ${keyC}` } });
  await waitFor("globex's key accepted", async () => (await all()).status === 200);
  const body = (await (await all()).json()) as { items?: unknown[] };
  expect(Array.isArray(body.items) && body.items.length > 0).toBe(true);
  expect((await retrieve(keyC)).status).toBe(200);
}, 20_000);

test("a change naming a default policy that is not loaded is refused, naming the tenant", async () => {
  writeTenants([{ name: "a", key: KEY_A }]);
  await waitFor("ready", async () => (await readyz()).status === "ready");
  writeFileSync(
    tenantsFile(),
    readFileSync(tenantsFile(), "utf8").replace(
      "    backends:",
      '    policies: { allowed: ["*"], default: nosuch }\n    backends:',
    ),
  );
  await waitFor("the refusal", async () => (await readyz()).status === "degraded");
  const check = (await readyz()).checks.find((c) => c.name === "tenants");
  expect(check?.detail).toContain(
    'tenants.yaml: tenant "acme": policies.default: "nosuch" is not loaded from',
  );
  expect((await retrieve(KEY_A)).status).toBe(200);
}, 20_000);
