import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadTenantsFile, TenantsFileError, tenantsFromText } from "../../src/tenants/file";
import { EXAMPLE_KEYS, hashKey } from "../../src/tenants/keys";

const FILE = "config/tenants.yaml";
const H1 = hashKey("key-one");
const H2 = hashKey("key-two");
const ENV = {
  ACME_ZEP_API_KEY: "z_secret",
  GLOBEX_OM_URL: "http://om.local:8080",
  GLOBEX_OM_KEY: "om_secret",
};

/** A valid two-tenant file, with `patch` lines replacing the lines that start the same way (by index). */
const valid = [
  "tenants:", // 1
  "  - id: acme", // 2
  "    keys:", // 3
  "      - name: chat", // 4
  `        sha256: ${H1}`, // 5
  "        scopes: [retrieve]", // 6
  "    policies: { allowed: [default, strict-pii], default: default }", // 7
  "    defaultBackend: zep", // 8
  "    backends:", // 9
  "      zep: { apiKeyEnv: ACME_ZEP_API_KEY }", // 10
  "      local: { dataFile: config/demo-memories.jsonl }", // 11
  "  - id: globex", // 12
  "    keys:", // 13
  "      - name: app", // 14
  `        sha256: ${H2}`, // 15
  "        scopes: [retrieve, admin]", // 16
  "    backends:", // 17
  "      openmemory: { urlEnv: GLOBEX_OM_URL, apiKeyEnv: GLOBEX_OM_KEY, userScoping: user_id }", // 18
];

function withLines(patch: Record<number, string | null>): string {
  return valid
    .map((line, i) => (Object.hasOwn(patch, i + 1) ? patch[i + 1] : line))
    .filter((l): l is string => l !== null && l !== undefined)
    .join("\n");
}

function problems(text: string, env: NodeJS.ProcessEnv = ENV): string[] {
  try {
    tenantsFromText(text, FILE, env);
  } catch (err) {
    if (err instanceof TenantsFileError) return err.message.split("\n");
    throw err;
  }
  throw new Error("expected a TenantsFileError");
}

describe("tenants file: valid", () => {
  test("resolves env vars into each tenant's BackendConfig", () => {
    const dir = tenantsFromText(valid.join("\n"), FILE, ENV);
    expect(dir.devMode).toBe(false);
    const [acme, globex] = dir.tenants();
    expect(acme).toEqual({
      id: "acme",
      policies: { allowed: ["default", "strict-pii"], default: "default" },
      defaultBackend: "zep",
      backends: {
        zep: { apiKey: "z_secret", baseUrl: "https://api.getzep.com/api/v2" },
        local: { dataFile: "config/demo-memories.jsonl" },
      },
    });
    expect(globex).toEqual({
      id: "globex",
      policies: { allowed: ["default"], default: "default" },
      defaultBackend: "openmemory", // its only backend
      backends: {
        openmemory: { baseUrl: "http://om.local:8080", apiKey: "om_secret", userScoping: "user_id" },
      },
    });
  });

  test("a literal url and a custom Zep baseUrl are kept; an optional apiKeyEnv may be left out", () => {
    const dir = tenantsFromText(
      withLines({
        10: '      zep: { apiKeyEnv: ACME_ZEP_API_KEY, baseUrl: "http://zep.internal:8000/api/v2/" }',
        18: '      openmemory: { url: "https://om.example.com", userScoping: user_id }',
      }),
      FILE,
      ENV,
    );
    const [acme, globex] = dir.tenants();
    expect(acme?.backends.zep?.baseUrl).toBe("http://zep.internal:8000/api/v2/");
    expect(globex?.backends.openmemory).toEqual({
      baseUrl: "https://om.example.com",
      userScoping: "user_id",
    });
  });

  test('policies.allowed may be ["*"] (any policy)', () => {
    const dir = tenantsFromText(
      withLines({ 7: "    policies: { allowed: ['*'], default: anything }" }),
      FILE,
      ENV,
    );
    expect(dir.tenants()[0]?.policies.allowed).toEqual(["*"]);
  });

  test("loadTenantsFile reads from disk; a missing file is one problem naming it", async () => {
    const dir = mkdtempSync(join(tmpdir(), "memgate-tenants-"));
    const file = join(dir, "tenants.yaml");
    writeFileSync(file, valid.join("\n"));
    const loaded = await loadTenantsFile(file, ENV);
    expect(loaded.tenants().map((t) => t.id)).toEqual(["acme", "globex"]);
    await expect(loadTenantsFile(join(dir, "nope.yaml"), ENV)).rejects.toThrow(
      `${join(dir, "nope.yaml")}: cannot read the file (ENOENT)`,
    );
  });
});

describe("tenants file: errors name the file, line and field path", () => {
  test("bad hash (and the value is not echoed: it may be a plaintext key)", () => {
    const lines = problems(withLines({ 15: "        sha256: mg_live_plaintext_key" }));
    expect(lines).toEqual([
      "config/tenants.yaml:15: tenants[1].keys[0].sha256: must be 64 lowercase hex characters (`memgate keys hash` prints it)",
    ]);
    expect(lines.join()).not.toContain("mg_live_plaintext_key");
  });

  test("uppercase hex is refused", () => {
    expect(problems(withLines({ 5: `        sha256: ${H1.toUpperCase()}` }))[0]).toContain(
      "tenants[0].keys[0].sha256: must be 64 lowercase hex characters",
    );
  });

  test("the same key hash twice, across tenants or within one", () => {
    expect(problems(withLines({ 15: `        sha256: ${H1}` }))).toEqual([
      "config/tenants.yaml:15: tenants[1].keys[0].sha256: the same key hash is also used by tenants[0].keys[0] (acme/chat): every key must be unique",
    ]);
    const twice = withLines({
      6: `        scopes: [retrieve]\n      - name: chat2\n        sha256: ${H1}\n        scopes: [admin]`,
    });
    expect(problems(twice)).toEqual([
      "config/tenants.yaml:8: tenants[0].keys[1].sha256: the same key hash is also used by tenants[0].keys[0] (acme/chat): every key must be unique",
    ]);
  });

  test("two keys whose key ids (first 8 hex) collide", () => {
    const lookalike = `${H1.slice(0, 8)}${"0".repeat(56)}`;
    expect(problems(withLines({ 15: `        sha256: ${lookalike}` }))[0]).toContain(
      `tenants[1].keys[0].sha256: starts like tenants[0].keys[0] (acme/chat) (key id ${H1.slice(0, 8)}`,
    );
  });

  test("duplicate tenant id and duplicate key name", () => {
    expect(problems(withLines({ 12: "  - id: acme" }))).toEqual([
      'config/tenants.yaml:12: tenants[1].id: tenant "acme" is already defined at tenants[0]',
    ]);
    const sameName = withLines({
      6: `        scopes: [retrieve]\n      - name: chat\n        sha256: ${H2.replace(/^./, "f")}\n        scopes: [admin]`,
    });
    expect(problems(sameName)).toEqual([
      'config/tenants.yaml:7: tenants[0].keys[1].name: key name "chat" is used twice in tenant "acme"',
    ]);
  });

  test("policies.default must be in policies.allowed", () => {
    expect(problems(withLines({ 7: "    policies: { allowed: [strict-pii], default: default }" }))).toEqual([
      'config/tenants.yaml:7: tenants[0].policies.default: "default" must be one of policies.allowed (strict-pii)',
    ]);
  });

  test("defaultBackend must be configured, and is required with several backends", () => {
    expect(problems(withLines({ 8: "    defaultBackend: openmemory" }))).toEqual([
      'config/tenants.yaml:8: tenants[0].defaultBackend: "openmemory" is not configured in backends (tenant "acme" has local, zep)',
    ]);
    expect(problems(withLines({ 8: null }))).toEqual([
      "config/tenants.yaml:2: tenants[0].defaultBackend: is required when a tenant has several backends (local, zep)",
    ]);
    expect(problems(withLines({ 8: "    defaultBackend: mem0" }))[0]).toMatch(
      /^config\/tenants\.yaml:8: tenants\[0\]\.defaultBackend: Invalid option/,
    );
  });

  test("an inline apiKey is refused with a pointer to apiKeyEnv, without echoing the secret", () => {
    const lines = problems(withLines({ 10: "      zep: { apiKey: z_live_123 }" }));
    expect(lines).toContain(
      'config/tenants.yaml:10: tenants[0].backends.zep.apiKey: unknown key; inline secrets are not allowed: name an environment variable with "apiKeyEnv"',
    );
    expect(lines.join("\n")).not.toContain("z_live_123");
  });

  test("a plaintext key in a key entry is refused with a pointer to sha256", () => {
    const lines = problems(withLines({ 5: "        key: mg_live_abc" }));
    expect(lines).toContain(
      'config/tenants.yaml:5: tenants[0].keys[0].key: unknown key; plaintext keys are never stored: write the key\'s SHA-256 in "sha256" (memgate keys hash)',
    );
    expect(lines).toContain("config/tenants.yaml:4: tenants[0].keys[0].sha256: is required");
    expect(lines.join("\n")).not.toContain("mg_live_abc");
  });

  test("unknown keys and unknown backends", () => {
    expect(problems(withLines({ 2: "  - id: acme\n    colour: blue" }))).toEqual([
      "config/tenants.yaml:3: tenants[0].colour: unknown key",
    ]);
    expect(problems(withLines({ 11: "      mem0: { dataFile: x }" }))).toEqual([
      "config/tenants.yaml:11: tenants[0].backends.mem0: unknown backend (expected local, zep, openmemory)",
    ]);
  });

  test("bad baseUrl: must end with /api/v2 and carry no credentials", () => {
    expect(
      problems(
        withLines({ 10: '      zep: { apiKeyEnv: ACME_ZEP_API_KEY, baseUrl: "https://api.getzep.com" }' }),
      ),
    ).toEqual(["config/tenants.yaml:10: tenants[0].backends.zep.baseUrl: must end with /api/v2"]);
    expect(
      problems(withLines({ 10: "      zep: { apiKeyEnv: ACME_ZEP_API_KEY, baseUrl: not a url }" })),
    ).toEqual(["config/tenants.yaml:10: tenants[0].backends.zep.baseUrl: must be an http(s) URL"]);
    const creds = problems(
      withLines({ 18: '      openmemory: { url: "https://u:hunter2@om.local", userScoping: user_id }' }),
    );
    expect(creds).toEqual([
      "config/tenants.yaml:18: tenants[1].backends.openmemory.url: must not contain credentials (name an env var instead)",
    ]);
    expect(creds.join()).not.toContain("hunter2");
  });

  test("openmemory: exactly one of url and urlEnv; api_key scoping needs apiKeyEnv", () => {
    expect(problems(withLines({ 18: "      openmemory: { userScoping: user_id }" }))).toEqual([
      "config/tenants.yaml:18: tenants[1].backends.openmemory: give exactly one of url and urlEnv",
    ]);
    expect(
      problems(withLines({ 18: "      openmemory: { urlEnv: GLOBEX_OM_URL, userScoping: api_key }" })),
    ).toEqual([
      "config/tenants.yaml:18: tenants[1].backends.openmemory.apiKeyEnv: is required with userScoping api_key",
    ]);
  });

  test("an env var that is unset or empty names the tenant and the variable", () => {
    expect(problems(valid.join("\n"), { ...ENV, ACME_ZEP_API_KEY: undefined, GLOBEX_OM_KEY: "  " })).toEqual([
      'config/tenants.yaml:10: tenants[0].backends.zep.apiKeyEnv: tenant "acme": environment variable ACME_ZEP_API_KEY is not set',
      'config/tenants.yaml:18: tenants[1].backends.openmemory.apiKeyEnv: tenant "globex": environment variable GLOBEX_OM_KEY is empty',
    ]);
    expect(problems(valid.join("\n"), { ...ENV, GLOBEX_OM_URL: "om.local" })).toEqual([
      'config/tenants.yaml:18: tenants[1].backends.openmemory.urlEnv: tenant "globex": environment variable GLOBEX_OM_URL must be an http(s) URL',
    ]);
  });

  test("an env var name must look like one (a pasted secret is not echoed)", () => {
    const lines = problems(withLines({ 10: "      zep: { apiKeyEnv: z_live.abc-123 }" }));
    expect(lines).toEqual([
      "config/tenants.yaml:10: tenants[0].backends.zep.apiKeyEnv: must be the NAME of an environment variable, e.g. ACME_ZEP_API_KEY",
    ]);
  });

  test("bad ids, scopes, empty lists, missing fields, not YAML", () => {
    expect(problems(withLines({ 2: "  - id: Acme Corp" }))[0]).toBe(
      "config/tenants.yaml:2: tenants[0].id: 1–64 of a-z, 0-9, _ - (starting with a letter or digit)",
    );
    expect(problems(withLines({ 6: "        scopes: [retrieve, root]" }))[0]).toMatch(
      /^config\/tenants\.yaml:6: tenants\[0\]\.keys\[0\]\.scopes\[1\]: Invalid option/,
    );
    expect(problems(withLines({ 6: "        scopes: []" }))).toEqual([
      "config/tenants.yaml:6: tenants[0].keys[0].scopes: at least one of retrieve, admin, proxy",
    ]);
    expect(problems("tenants: []")).toEqual([
      "config/tenants.yaml:1: tenants: at least one tenant (without a file, memgate runs in dev mode)",
    ]);
    expect(problems("")).toEqual(["config/tenants.yaml: tenants: is required"]);
    expect(problems("tenants: [\n")[0]).toMatch(/^config\/tenants\.yaml:\d+: not valid YAML/);
  });

  test("an alias without its anchor, or an alias bomb, is a file problem (not an exception from the parser)", () => {
    expect(problems("tenants: *nowhere\n")).toEqual([
      expect.stringMatching(/^config\/tenants\.yaml:1: not valid YAML: Unresolved alias/),
    ]);
    const bomb = [
      "a: &a [x, x, x, x, x, x, x, x, x]",
      "b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]",
      "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]",
      "tenants: [*c, *c, *c, *c, *c, *c, *c, *c, *c]",
    ].join("\n");
    expect(problems(bomb)).toEqual([expect.stringMatching(/^config\/tenants\.yaml:1: not valid YAML: /)]);
  });

  test("every problem is reported, in file order", () => {
    const lines = problems(
      withLines({ 5: "        sha256: nope", 8: "    defaultBackend: nope", 15: "        sha256: x" }),
    );
    expect(lines.map((l) => l.split(":")[1])).toEqual(["5", "8", "15"]);
  });
});

describe("config/tenants.example.yaml", () => {
  const env = {
    ACME_ZEP_API_KEY: "z_example",
    GLOBEX_OPENMEMORY_URL: "http://localhost:8080",
    GLOBEX_OPENMEMORY_API_KEY: "om_example",
  };

  test("loads with its env vars set, and its documented example keys authenticate", async () => {
    const dir = await loadTenantsFile("config/tenants.example.yaml", env, { allowExampleKeys: true });
    expect(dir.tenants().map((t) => t.id)).toEqual(["acme", "globex"]);
    const chat = dir.authenticate(EXAMPLE_KEYS.acmeChat);
    const ops = dir.authenticate(EXAMPLE_KEYS.acmeOps);
    const app = dir.authenticate(EXAMPLE_KEYS.globexApp);
    expect(chat?.tenant.id).toBe("acme");
    expect([...(ops?.scopes ?? [])].sort()).toEqual(["admin", "retrieve"]);
    expect(app?.tenant.id).toBe("globex");
    expect(app?.tenant.backends.openmemory?.baseUrl).toBe("http://localhost:8080");
    expect(dir.tenants()[0]?.backends.zep?.apiKey).toBe("z_example");
  });

  test("documents each example key in a comment", async () => {
    const { readFile } = await import("node:fs/promises");
    const text = await readFile("config/tenants.example.yaml", "utf8");
    for (const key of Object.values(EXAMPLE_KEYS)) expect(text).toContain(key);
  });

  test("a tenants file still holding the public example keys is refused", async () => {
    await expect(loadTenantsFile("config/tenants.example.yaml", env)).rejects.toThrow(
      /tenants\[0\]\.keys\[0\]\.sha256: is a documented example key that anyone can read/,
    );
  });

  test("names the missing variables when they are not set", async () => {
    await expect(
      loadTenantsFile("config/tenants.example.yaml", {}, { allowExampleKeys: true }),
    ).rejects.toThrow('tenant "acme": environment variable ACME_ZEP_API_KEY is not set');
  });
});
