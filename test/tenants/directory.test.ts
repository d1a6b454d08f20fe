import { createDirectory, DEV_TENANT_ID, devDirectory, isPolicyAllowed } from "../../src/tenants/directory";
import { tenantsFromText } from "../../src/tenants/file";
import { hashKey } from "../../src/tenants/keys";
import { ANY_POLICY, type Tenant } from "../../src/tenants/types";

const CHAT_KEY = "mg_acme_chat_4f1b2c";
const OPS_KEY = "mg_acme_ops_9a8e7d";
const GLOBEX_KEY = "mg_globex_app_55aa11";

const text = `
tenants:
  - id: acme
    keys:
      - { name: chat, sha256: ${hashKey(CHAT_KEY)}, scopes: [retrieve] }
      - { name: ops, sha256: ${hashKey(OPS_KEY)}, scopes: [retrieve, admin] }
    policies: { allowed: [default, strict-pii], default: strict-pii }
    backends:
      zep: { apiKeyEnv: ACME_ZEP }
  - id: globex
    keys:
      - { name: app, sha256: ${hashKey(GLOBEX_KEY)}, scopes: [retrieve, proxy] }
    backends:
      local: { dataFile: data/globex.jsonl }
`;
const env = { ACME_ZEP: "z_acme_backend_secret" };

describe("file directory: authenticate", () => {
  const dir = tenantsFromText(text, "t.yaml", env);

  test("a known key yields its tenant, its scopes and keyId = first 8 hex of its hash", () => {
    const chat = dir.authenticate(CHAT_KEY);
    expect(chat?.tenant.id).toBe("acme");
    expect([...(chat?.scopes ?? [])]).toEqual(["retrieve"]);
    expect(chat?.keyId).toBe(hashKey(CHAT_KEY).slice(0, 8));
    expect(chat?.keyId).toMatch(/^[0-9a-f]{8}$/);

    const ops = dir.authenticate(OPS_KEY);
    expect(ops?.tenant.id).toBe("acme");
    expect(ops?.scopes.has("admin")).toBe(true);
    expect(ops?.keyId).not.toBe(chat?.keyId);

    const globex = dir.authenticate(GLOBEX_KEY);
    expect(globex?.tenant.id).toBe("globex");
    expect(globex?.tenant.backends).toEqual({ local: { dataFile: "data/globex.jsonl" } });
    expect(globex?.tenant.backends.zep).toBeUndefined();
  });

  test("unknown, empty, absent or near-miss keys yield null", () => {
    expect(dir.authenticate("mg_unknown")).toBeNull();
    expect(dir.authenticate(undefined)).toBeNull();
    expect(dir.authenticate("")).toBeNull();
    expect(dir.authenticate(`${CHAT_KEY} `)).toBeNull();
    expect(dir.authenticate(CHAT_KEY.toUpperCase())).toBeNull();
    expect(dir.authenticate(hashKey(CHAT_KEY))).toBeNull(); // the hash itself is not a key
  });

  test("no plaintext key is kept, and backend secrets are redacted when serialized", () => {
    const dump = JSON.stringify({ dir, tenants: dir.tenants(), principal: dir.authenticate(CHAT_KEY) });
    for (const key of [CHAT_KEY, OPS_KEY, GLOBEX_KEY]) expect(dump).not.toContain(key);
    expect(dump).not.toContain("z_acme_backend_secret");
    expect(dump).toContain('"apiKey":"[REDACTED]"');
    // ...while code still reads the credential.
    expect(dir.tenants()[0]?.backends.zep?.apiKey).toBe("z_acme_backend_secret");
  });

  test("tenants are frozen", () => {
    const acme = dir.tenants()[0];
    expect(Object.isFrozen(acme)).toBe(true);
    expect(Object.isFrozen(acme?.backends.zep)).toBe(true);
    expect(Object.isFrozen(acme?.policies.allowed)).toBe(true);
  });

  test("isPolicyAllowed follows policies.allowed, with '*' meaning any", () => {
    const acme = dir.tenants()[0] as Tenant;
    expect(acme.policies.default).toBe("strict-pii");
    expect(isPolicyAllowed(acme, "strict-pii")).toBe(true);
    expect(isPolicyAllowed(acme, "recency-heavy")).toBe(false);
    expect(
      isPolicyAllowed({ ...acme, policies: { allowed: [ANY_POLICY], default: "default" } }, "anything"),
    ).toBe(true);
  });
});

describe("createDirectory guards", () => {
  const tenant: Tenant = {
    id: "t",
    policies: { allowed: ["default"], default: "default" },
    defaultBackend: "local",
    backends: { local: { dataFile: "x" } },
  };

  test("refuses a hash granted twice and a grant for an unknown tenant", () => {
    const sha256 = hashKey("k");
    expect(() =>
      createDirectory(
        [tenant],
        [
          { sha256, scopes: ["retrieve"], tenantId: "t" },
          { sha256, scopes: ["admin"], tenantId: "t" },
        ],
      ),
    ).toThrow("granted twice");
    expect(() => createDirectory([tenant], [{ sha256, scopes: ["retrieve"], tenantId: "u" }])).toThrow(
      'unknown tenant "u"',
    );
  });
});

describe("dev mode", () => {
  const defaults = { backend: "local" as const, localDataFile: "config/demo-memories.jsonl" };

  test("one tenant `dev`, every scope, every policy; any key or none", () => {
    const dir = devDirectory({}, defaults);
    expect(dir.devMode).toBe(true);
    expect(dir.tenants().map((t) => t.id)).toEqual([DEV_TENANT_ID]);
    for (const key of [undefined, "", "anything", "sk-whatever-the-sdk-sends"]) {
      const p = dir.authenticate(key);
      expect(p?.tenant.id).toBe("dev");
      expect(p?.keyId).toBe("dev");
      expect([...(p?.scopes ?? [])].sort()).toEqual(["admin", "proxy", "retrieve"]);
    }
    const dev = dir.tenants()[0] as Tenant;
    expect(dev.policies).toEqual({ allowed: ["*"], default: "default" });
    expect(isPolicyAllowed(dev, "strict-pii")).toBe(true);
    expect(dev.defaultBackend).toBe("local");
    expect(dev.backends).toEqual({ local: { dataFile: "config/demo-memories.jsonl" } });
  });

  test("zep and openmemory come from the environment when set", () => {
    const dir = devDirectory(
      { ZEP_API_KEY: "z_dev", OPENMEMORY_URL: "http://localhost:8080", OPENMEMORY_API_KEY: "om_dev" },
      { ...defaults, backend: "zep" },
    );
    const dev = dir.tenants()[0] as Tenant;
    expect(dev.defaultBackend).toBe("zep");
    expect(dev.backends).toEqual({
      local: { dataFile: "config/demo-memories.jsonl" },
      zep: { apiKey: "z_dev", baseUrl: "https://api.getzep.com/api/v2" },
      openmemory: { baseUrl: "http://localhost:8080", apiKey: "om_dev", userScoping: "user_id" },
    });
    expect(JSON.stringify(dir.tenants())).not.toMatch(/z_dev|om_dev/);

    const custom = devDirectory({ ZEP_API_KEY: "z", ZEP_BASE_URL: "http://zep.local/api/v2" }, defaults);
    expect(custom.tenants()[0]?.backends.zep?.baseUrl).toBe("http://zep.local/api/v2");
  });

  test("blank variables count as unset; a default backend without credentials is an error", () => {
    const dir = devDirectory({ ZEP_API_KEY: " ", OPENMEMORY_URL: "" }, defaults);
    expect(Object.keys(dir.tenants()[0]?.backends ?? {})).toEqual(["local"]);
    expect(() => devDirectory({}, { ...defaults, backend: "zep" })).toThrow(
      'MEMGATE_BACKEND is "zep" but ZEP_API_KEY is not set',
    );
    expect(() => devDirectory({}, { ...defaults, backend: "openmemory" })).toThrow(
      "OPENMEMORY_URL is not set",
    );
  });
});
