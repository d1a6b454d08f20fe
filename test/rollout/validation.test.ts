/**
 * The rollout settings are checked before anything serves (docs/rollouts.md): the tenants file's
 * `policies.shadow` and `policies.canary` (file:line: path: message, like every tenants-file problem), the dev-mode
 * variables MEMGATE_SHADOW_POLICY / MEMGATE_SHADOW_SAMPLE, and at boot that the named policies are loaded.
 */
import { parseEnv } from "../../src/config/env";
import { TenantsFileError, tenantsFromText } from "../../src/tenants/file";
import { hashKey } from "../../src/tenants/keys";
import { makeHarness } from "../helpers/harness";

const FILE = "config/tenants.yaml";

/** One tenant whose `policies` line is `policies`. */
const file = (policies: string) =>
  [
    "tenants:",
    "  - id: acme",
    "    keys:",
    `      - { name: chat, sha256: ${hashKey("key-one")}, scopes: [retrieve] }`,
    `    ${policies}`,
    "    backends:",
    "      local: { dataFile: config/demo-memories.jsonl }",
  ].join("\n");

function problems(text: string): string[] {
  try {
    tenantsFromText(text, FILE, {});
  } catch (err) {
    if (err instanceof TenantsFileError) return err.message.split("\n");
    throw err;
  }
  throw new Error("expected a TenantsFileError");
}

describe("tenants file: policies.shadow and policies.canary", () => {
  test("valid rules resolve onto the tenant; sample defaults to 1", () => {
    const dir = tenantsFromText(
      file(
        "policies: { allowed: [default, fast, strict-pii], default: default, shadow: { policy: fast }, canary: { policy: strict-pii, percent: 12.5, salt: v2 } }",
      ),
      FILE,
      {},
    );
    expect(dir.tenants()[0]?.policies).toEqual({
      allowed: ["default", "fast", "strict-pii"],
      default: "default",
      shadow: { policy: "fast", sample: 1 },
      canary: { policy: "strict-pii", percent: 12.5, salt: "v2" },
    });
    expect(Object.isFrozen(dir.tenants()[0]?.policies.canary)).toBe(true);
  });

  test.each([
    [
      "shadow: { policy: fast, sample: 1.5 }",
      "config/tenants.yaml:5: tenants[0].policies.shadow.sample: must be a number from 0 to 1",
    ],
    [
      "shadow: { policy: fast, sample: -0.1 }",
      "config/tenants.yaml:5: tenants[0].policies.shadow.sample: must be a number from 0 to 1",
    ],
    [
      'shadow: { policy: "Fast Policy" }',
      "config/tenants.yaml:5: tenants[0].policies.shadow.policy: a policy name (1–64 of a-z, 0-9, _ . -)",
    ],
    ["shadow: { sample: 0.5 }", "config/tenants.yaml:5: tenants[0].policies.shadow.policy:"],
    [
      "shadow: { policy: fast, rate: 0.5 }",
      "config/tenants.yaml:5: tenants[0].policies.shadow.rate: unknown key",
    ],
    [
      "canary: { policy: fast, percent: 101 }",
      "config/tenants.yaml:5: tenants[0].policies.canary.percent: must be a number from 0 to 100",
    ],
    [
      'canary: { policy: fast, percent: "10%" }',
      "config/tenants.yaml:5: tenants[0].policies.canary.percent: must be a number from 0 to 100",
    ],
    [
      'canary: { policy: fast, percent: 10, salt: "a b" }',
      "config/tenants.yaml:5: tenants[0].policies.canary.salt: 1–64 of A-Z, a-z, 0-9, _ . : -",
    ],
  ])("%s → %s", (rule, message) => {
    const lines = problems(file(`policies: { allowed: ["*"], default: default, ${rule} }`));
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain(message);
  });

  test("a rule must name another policy than the default, one the tenant may use", () => {
    expect(
      problems(
        file(
          "policies: { allowed: [default, fast], default: default, shadow: { policy: default }, canary: { policy: strict-pii, percent: 5 } }",
        ),
      ),
    ).toEqual([
      'config/tenants.yaml:5: tenants[0].policies.shadow.policy: "default" is the default policy: a shadow names another policy',
      'config/tenants.yaml:5: tenants[0].policies.canary.policy: "strict-pii" must be one of policies.allowed (default, fast)',
    ]);
  });
});

describe("dev mode: MEMGATE_SHADOW_POLICY and MEMGATE_SHADOW_SAMPLE", () => {
  test("parsed: a policy name and a share from 0 to 1 (unset: no sample given)", () => {
    const env = parseEnv({ MEMGATE_SHADOW_POLICY: "fast", MEMGATE_SHADOW_SAMPLE: "0.25" });
    expect(env.MEMGATE_SHADOW_POLICY).toBe("fast");
    expect(env.MEMGATE_SHADOW_SAMPLE).toBe(0.25);
    expect(parseEnv({}).MEMGATE_SHADOW_POLICY).toBeUndefined();
  });

  test.each([
    [
      { MEMGATE_SHADOW_POLICY: "fast", MEMGATE_SHADOW_SAMPLE: "1.5" },
      /^MEMGATE_SHADOW_SAMPLE: must be a share from 0 to 1, e\.g\. 0\.1 \(got "1\.5"\)$/,
    ],
    [
      { MEMGATE_SHADOW_POLICY: "fast", MEMGATE_SHADOW_SAMPLE: "50%" },
      /^MEMGATE_SHADOW_SAMPLE: must be a share from 0 to 1/,
    ],
    [
      { MEMGATE_SHADOW_POLICY: "fast", MEMGATE_SHADOW_SAMPLE: "1e-1" },
      /^MEMGATE_SHADOW_SAMPLE: must be a share/,
    ],
    [{ MEMGATE_SHADOW_POLICY: "../etc/passwd" }, /^MEMGATE_SHADOW_POLICY: must be a policy name/],
    [{ MEMGATE_SHADOW_SAMPLE: "0.5" }, /^MEMGATE_SHADOW_SAMPLE: only applies with MEMGATE_SHADOW_POLICY/],
  ])("%j is refused naming the variable", (env, message) => {
    expect(() => parseEnv(env)).toThrow(message);
  });

  test("dev mode: the shadow rule lands on the dev tenant, sample default 1", async () => {
    const h = await makeHarness({ tenants: null, env: { MEMGATE_SHADOW_POLICY: "fast" } });
    try {
      expect(h.services.tenants.tenants()[0]?.policies.shadow).toEqual({ policy: "fast", sample: 1 });
    } finally {
      await h.close();
    }
  });
});

describe("boot: the named policies must be loaded", () => {
  test("a dev-mode shadow policy that is not in the policy directory stops the boot", async () => {
    await expect(makeHarness({ tenants: null, env: { MEMGATE_SHADOW_POLICY: "nope" } })).rejects.toThrow(
      /^MEMGATE_SHADOW_POLICY: no policy named "nope" in /,
    );
  });

  test("a tenant's canary policy that is not loaded stops the boot, naming tenant and field", async () => {
    const tenants = file(
      'policies: { allowed: ["*"], default: default, canary: { policy: missing, percent: 10 } }',
    ).replace("config/demo-memories.jsonl", "globex.jsonl");
    await expect(makeHarness({ tenants })).rejects.toThrow(
      /^tenant "acme": policies\.canary\.policy: no policy named "missing" in /,
    );
  });

  test("MEMGATE_SHADOW_POLICY with a tenants file is refused (the file's policies.shadow says it per tenant)", async () => {
    await expect(makeHarness({ env: { MEMGATE_SHADOW_POLICY: "fast" } })).rejects.toThrow(
      /^MEMGATE_SHADOW_POLICY: only applies in dev mode .* set policies\.shadow for each tenant$/,
    );
  });
});
