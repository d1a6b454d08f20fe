/**
 * The CLI of issue 28 (items 3, 4, 8), driven through `main(argv, io)` as bin/memgate.js calls it, plus the real
 * binary for what only it shows (`--version`, `--help` without loading the gateway): `policy validate <dir> --json`,
 * `policy diff`, `tenants validate`, did-you-mean for commands and policy keys, `serve --help`'s environment
 * variables, and a description on every property of `memgate policy schema`.
 */
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { envSchema } from "../../src/config/env";
import { ENV_HELP } from "../../src/config/env-help";
import { hashKey } from "../../src/tenants/keys";
import { cliLines, scratchFiles } from "../helpers/cli";

const ROOT = resolve(__dirname, "../..");
const BIN = join(ROOT, "bin/memgate.js");
const VERSION = (JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { version: string }).version;

const cli = cliLines;

const scratch = scratchFiles("memgate-cli28-");
const file = scratch.file;

beforeAll(() => {
  if (!existsSync(join(ROOT, "dist/cli/main.js"))) {
    const r = spawnSync("npm", ["run", "build"], { cwd: ROOT, encoding: "utf8" });
    if (r.status !== 0) throw new Error(`npm run build failed: ${r.stderr}`);
  }
});

const bin = (...args: string[]) =>
  spawnSync(process.execPath, [BIN, ...args], {
    cwd: ROOT,
    encoding: "utf8",
    env: { PATH: process.env.PATH ?? "" },
  });

describe("memgate policy validate <dir>", () => {
  test("a directory: every policy file in it, one line each; --json reports each file", async () => {
    const d = scratch.path("pols");
    file("pols/a.yaml", "name: a\nversion: 1\n");
    file("pols/b.yaml", "name: b\nversion: 2\nretrieval:\n  topK: 50\n");
    file("pols/notes.txt", "not a policy");
    file("pols/c.json", '{"name": "c", "version": 1, "budgt": {}}');

    const text = await cli("policy", "validate", d);
    expect(text.code).toBe(2);
    expect(text.out).toEqual([expect.stringMatching(/^.*pols\/a\.yaml: ok \(a v1, hash [0-9a-f]{12}\)$/)]);
    expect(text.err).toEqual([
      `${join(d, "b.yaml")}:4: retrieval.topK: must be an integer from 1 to 20 (got 50)`,
      `${join(d, "c.json")}:1: unknown key(s) "budgt"; did you mean "budget"?`,
    ]);

    const json = await cli("policy", "validate", d, "--json");
    expect(json.code).toBe(2);
    expect(json.err).toEqual([]);
    const report = JSON.parse(json.out.join("\n"));
    expect(report.ok).toBe(false);
    expect(report.files).toEqual([
      {
        file: join(d, "a.yaml"),
        ok: true,
        policy: { name: "a", version: 1, hash: expect.stringMatching(/^[0-9a-f]{64}$/) },
      },
      {
        file: join(d, "b.yaml"),
        ok: false,
        problems: [{ line: 4, path: "retrieval.topK", message: "must be an integer from 1 to 20 (got 50)" }],
      },
      {
        file: join(d, "c.json"),
        ok: false,
        problems: [{ line: 1, path: "", message: 'unknown key(s) "budgt"; did you mean "budget"?' }],
      },
    ]);
  });

  test("the shipped policies directory is valid (exit 0, --json ok); an empty directory is a problem", async () => {
    const shipped = await cli("policy", "validate", join(ROOT, "policies"), "--json");
    expect(shipped.code).toBe(0);
    const report = JSON.parse(shipped.out.join("\n"));
    expect(report.ok).toBe(true);
    expect(report.files.length).toBeGreaterThan(0);
    mkdirSync(scratch.path("empty"));
    const empty = await cli("policy", "validate", scratch.path("empty"));
    expect(empty.code).toBe(2);
    expect(empty.err).toEqual([
      `${scratch.path("empty")}: no policy files (*.yaml, *.yml, *.json) in this directory`,
    ]);
  });
});

describe("memgate policy diff", () => {
  test("the effective difference, dotted paths old → new; exit 1 when different, 0 when the same", async () => {
    const a = file("d/a.yaml", "name: p\nversion: 1\n");
    const b = file(
      "d/b.yaml",
      "name: p\nversion: 2\nretrieval: { topK: 6, maxTokens: 1500 }\nbudget: { sections: { fact: 0.5 } }\nredaction: { detectors: [email] }\n",
    );
    const run = await cli("policy", "diff", a, b);
    expect(run.code).toBe(1);
    expect(run.out[0]).toMatch(/^--- .*d\/a\.yaml \(p v1, hash [0-9a-f]{12}\)$/);
    expect(run.out[1]).toMatch(/^\+\+\+ .*d\/b\.yaml \(p v2, hash [0-9a-f]{12}\)$/);
    // maxTokens 1500 is the default: the same effective value, so no line.
    expect(run.out.slice(2)).toEqual([
      "budget.sections.fact: (absent) → 0.5",
      'redaction.detectors: ["email","ssn","credit_card"] → ["email"]',
      "retrieval.topK: 8 → 6",
      "version: 1 → 2",
    ]);

    // Written differently, the same policy once defaults are filled in.
    const c = file("d/c.yaml", "name: p\nversion: 1\nretrieval: { topK: 8 }\ntokenizer: o200k_base\n");
    const same = await cli("policy", "diff", a, c);
    expect(same).toEqual({
      code: 0,
      out: [expect.stringMatching(/^same effective policy \(hash [0-9a-f]{12}\)$/)],
      err: [],
    });

    const bad = file("d/bad.yaml", "name: p\nversion: 1\nretrieval: { topK: 0 }\n");
    const invalid = await cli("policy", "diff", a, bad);
    expect(invalid.code).toBe(2);
    expect(invalid.err).toEqual([`${bad}:3: retrieval.topK: must be an integer from 1 to 20 (got 0)`]);
  });

  test("--json: the same difference as one document (values as JSON, a missing side has no key); exit codes kept", async () => {
    const a = file("dj/a.yaml", "name: p\nversion: 1\n");
    const b = file(
      "dj/b.yaml",
      "name: p\nversion: 2\nretrieval: { topK: 6 }\nbudget: { sections: { fact: 0.5 } }\n",
    );
    const run = await cli("policy", "diff", a, b, "--json");
    expect({ code: run.code, err: run.err }).toEqual({ code: 1, err: [] });
    const doc = JSON.parse(run.out.join("\n"));
    expect(doc).toEqual({
      same: false,
      a: { file: a, name: "p", version: 1, hash: expect.stringMatching(/^[0-9a-f]{64}$/) },
      b: { file: b, name: "p", version: 2, hash: expect.stringMatching(/^[0-9a-f]{64}$/) },
      changes: [
        { path: "budget.sections.fact", new: 0.5 },
        { path: "retrieval.topK", old: 8, new: 6 },
        { path: "version", old: 1, new: 2 },
      ],
    });
    expect(doc.a.hash).not.toBe(doc.b.hash);

    const same = await cli("policy", "diff", a, a, "--json");
    expect(same.code).toBe(0);
    expect(JSON.parse(same.out.join("\n"))).toMatchObject({ same: true, changes: [] });

    const bad = file("dj/bad.yaml", "name: p\nversion: 1\nretrieval: { topK: 0 }\n");
    const invalid = await cli("policy", "diff", a, bad, "--json");
    expect({ code: invalid.code, err: invalid.err }).toEqual({ code: 2, err: [] });
    expect(JSON.parse(invalid.out.join("\n"))).toEqual({
      ok: false,
      problems: [
        { file: bad, line: 3, path: "retrieval.topK", message: "must be an integer from 1 to 20 (got 0)" },
      ],
    });
  });
});

describe("memgate tenants validate", () => {
  const tenants = (extra = "") => `tenants:
  - id: acme
    keys:
      - { name: app, sha256: ${hashKey("mg_cli28_key_0123456789")}, scopes: [retrieve] }
    policies: { allowed: [default, fast], default: default }
    backends:
      zep: { apiKeyEnv: CLI28_ZEP_KEY }
${extra}`;

  test("a valid file: exit 0 and one ok line (through the real binary, with the variable it names set)", () => {
    const f = file("t/ok.yaml", tenants());
    const r = spawnSync(process.execPath, [BIN, "tenants", "validate", f], {
      cwd: ROOT,
      encoding: "utf8",
      env: { PATH: process.env.PATH ?? "", CLI28_ZEP_KEY: "zep-secret" },
    });
    expect({ status: r.status, stdout: r.stdout, stderr: r.stderr }).toEqual({
      status: 0,
      stdout: `${f}: ok (1 tenant: acme)\n`,
      stderr: "",
    });
  });

  test("problems: exit 2, one file:line: path: message each, like the boot check (unset variable, typo)", async () => {
    const f = file(
      "t/bad.yaml",
      tenants().replace("scopes: [retrieve]", "scopes: [retrieve], scopess: [admin]"),
    );
    const run = await cli("tenants", "validate", f);
    expect(run.code).toBe(2);
    expect(run.err).toEqual([`${f}:4: tenants[0].keys[0].scopess: unknown key; did you mean "scopes"?`]);
    const unset = await cli("tenants", "validate", file("t/env.yaml", tenants()));
    expect(unset.code).toBe(2);
    expect(unset.err).toEqual([
      `${scratch.path("t/env.yaml")}:7: tenants[0].backends.zep.apiKeyEnv: tenant "acme": environment variable CLI28_ZEP_KEY is not set`,
    ]);
    const missing = await cli("tenants", "validate", scratch.path("t/nope.yaml"));
    expect(missing).toEqual({
      code: 2,
      out: [],
      err: [`${scratch.path("t/nope.yaml")}: cannot read the file (ENOENT)`],
    });
  });

  test("--json: one document on stdout, ok with the tenant ids or the problems with their lines; exit codes kept", async () => {
    const bad = file(
      "t/badj.yaml",
      tenants().replace("scopes: [retrieve]", "scopes: [retrieve], scopess: [admin]"),
    );
    const run = await cli("tenants", "validate", bad, "--json");
    expect({ code: run.code, err: run.err }).toEqual({ code: 2, err: [] });
    expect(JSON.parse(run.out.join("\n"))).toEqual({
      ok: false,
      file: bad,
      tenants: [],
      problems: [
        { line: 4, path: "tenants[0].keys[0].scopess", message: 'unknown key; did you mean "scopes"?' },
      ],
    });
    process.env.CLI28_ZEP_KEY = "zep-secret";
    try {
      const good = file("t/okj.yaml", tenants());
      const ok = await cli("tenants", "validate", good, "--json");
      expect({ code: ok.code, err: ok.err }).toEqual({ code: 0, err: [] });
      expect(JSON.parse(ok.out.join("\n"))).toEqual({
        ok: true,
        file: good,
        tenants: ["acme"],
        problems: [],
      });
    } finally {
      delete process.env.CLI28_ZEP_KEY;
    }
  });

  test("--policy-dir: every tenant's default and allowed policies must be in it", async () => {
    process.env.CLI28_ZEP_KEY = "zep-secret";
    try {
      const f = file("t/pol.yaml", tenants());
      const pols = scratch.path("t-pols");
      file("t-pols/default.yaml", "name: default\nversion: 1\n");
      const run = await cli("tenants", "validate", f, "--policy-dir", pols);
      expect(run.code).toBe(2);
      expect(run.err).toEqual([`${f}:5: tenants[0].policies.allowed[1]: policy "fast" is not in ${pols}`]);
      file("t-pols/fast.yaml", "name: fast\nversion: 1\n");
      expect((await cli("tenants", "validate", f, "--policy-dir", pols)).code).toBe(0);
    } finally {
      delete process.env.CLI28_ZEP_KEY;
    }
  });
});

describe("version, help and suggestions", () => {
  test("memgate --version prints package.json's version (the real binary)", () => {
    const r = bin("--version");
    expect({ status: r.status, stdout: r.stdout }).toEqual({ status: 0, stdout: `${VERSION}\n` });
  });

  test("an unknown command: exit 2 with a did-you-mean", async () => {
    const run = await cli("polcy", "validate", "x.yaml");
    expect(run.code).toBe(2);
    expect(run.err.join("\n")).toContain("unknown command 'polcy'");
    expect(run.err.join("\n")).toContain("(Did you mean policy?)");
    const sub = await cli("policy", "valdate", "x.yaml");
    expect(sub.err.join("\n")).toContain("(Did you mean validate?)");
  });

  test("serve --help lists every variable envSchema reads, with its line, and no other (the real binary)", () => {
    expect(Object.keys(ENV_HELP).sort()).toEqual(Object.keys(envSchema.shape).sort());
    const r = bin("serve", "--help");
    expect(r.status).toBe(0);
    expect(r.stdout).toContain("Usage: memgate serve [options]");
    expect(r.stdout).toContain("-h, --help");
    const listed = r.stdout
      .split("\n")
      .map((l) => /^ {2}([A-Z][A-Z0-9_]+\*?) {2,}(.+)$/.exec(l))
      .filter((m): m is RegExpExecArray => m !== null)
      .map((m) => [m[1], m[2]]);
    expect(listed).toEqual([...Object.entries(ENV_HELP), ["OTEL_*", expect.any(String)]]);
  });
});

describe("memgate policy schema: hover help", () => {
  test("every property of the emitted JSON Schema has a description", async () => {
    const run = await cli("policy", "schema");
    const schema = JSON.parse(run.out.join("\n")) as unknown;
    const missing: string[] = [];
    let properties = 0;
    const walk = (node: unknown, at: string): void => {
      if (Array.isArray(node)) {
        for (const [i, n] of node.entries()) walk(n, `${at}[${i}]`);
        return;
      }
      if (node === null || typeof node !== "object") return;
      const o = node as Record<string, unknown>;
      if (o.properties !== null && typeof o.properties === "object") {
        for (const [key, prop] of Object.entries(o.properties as Record<string, unknown>)) {
          properties++;
          const d = (prop as { description?: unknown }).description;
          if (typeof d !== "string" || d.trim() === "") missing.push(`${at}.${key}`);
          walk(prop, `${at}.${key}`);
        }
      }
      for (const k of ["items", "anyOf", "oneOf", "allOf", "$defs", "additionalProperties", "prefixItems"])
        if (k in o) walk(o[k], `${at}/${k}`);
    };
    walk(schema, "");
    expect(missing).toEqual([]);
    expect(properties).toBeGreaterThan(90);
  });
});
