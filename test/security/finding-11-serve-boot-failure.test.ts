/**
 * Finding 11 (issue 26): `memgate serve` hung — no port, no exit — when a local data file was missing or bad. The
 * boot failed after the policy watcher had started, nothing closed it, and it kept the process alive: the reason
 * was printed, the exit code never came. A supervisor saw a process that neither listened nor exited.
 *
 * Runs the real binary (bin/memgate.js over dist/, rebuilt when older than the boot code) as an operator would:
 * every boot failure exits 1 promptly with one line on stderr naming the cause.
 */
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { hashKey } from "../../src/tenants/keys";

const ROOT = join(__dirname, "../..");
const BIN = join(ROOT, "bin/memgate.js");
/** The boot code this test is about: dist/ must not be older than these. */
const BOOT_SOURCES = ["src/server/services.ts", "src/server/serve.ts", "src/cli/main.ts"];
/** A hung process is killed after this long (spawnSync reports the signal instead of an exit code). */
const HANG_MS = 15_000;

function ensureBuilt(): void {
  const built = join(ROOT, "dist/cli/main.js");
  const stale =
    !existsSync(built) ||
    BOOT_SOURCES.some(
      (s) => statSync(join(ROOT, s)).mtimeMs > statSync(join(ROOT, "dist/server/serve.js")).mtimeMs,
    );
  if (stale) {
    const r = spawnSync("npm", ["run", "build"], { cwd: ROOT, encoding: "utf8" });
    if (r.status !== 0) throw new Error(`npm run build failed: ${r.stderr}`);
  }
}

function serve(env: Record<string, string>) {
  const started = Date.now();
  const r = spawnSync(process.execPath, [BIN, "serve"], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? "", PORT: "0", LOG_LEVEL: "warn", ...env },
    encoding: "utf8",
    timeout: HANG_MS,
    killSignal: "SIGKILL",
  });
  return { status: r.status, signal: r.signal, stderr: r.stderr, ms: Date.now() - started };
}

describe("Finding 11 — memgate serve exits 1 with a one-line reason when the boot fails", () => {
  let dir: string;

  beforeAll(ensureBuilt, 180_000);
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "memgate-f11-"));
  });

  const expectOneLineExit = (r: ReturnType<typeof serve>, reason: RegExp) => {
    expect({ status: r.status, signal: r.signal }).toEqual({ status: 1, signal: null });
    const lines = r.stderr.trim().split("\n");
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(reason);
    expect(r.ms).toBeLessThan(HANG_MS);
  };

  test("dev mode: MEMGATE_LOCAL_DATA names a file that does not exist", () => {
    const file = join(dir, "missing.jsonl");
    const r = serve({ MEMGATE_LOCAL_DATA: file });
    expectOneLineExit(r, new RegExp(`^memgate: ${file}: cannot read the local memory file \\(ENOENT\\)$`));
  }, 30_000);

  test("dev mode: a line of the local data file is not JSON", () => {
    const file = join(dir, "bad.jsonl");
    writeFileSync(file, '{"id": "m1", "bad json\n');
    const r = serve({ MEMGATE_LOCAL_DATA: file });
    expectOneLineExit(r, new RegExp(`^memgate: ${file}:1: `));
  }, 30_000);

  test("dev mode: a record of the local data file has the wrong shape", () => {
    const file = join(dir, "shape.jsonl");
    writeFileSync(file, `${JSON.stringify({ id: "m1", userId: "ana" })}\n`);
    const r = serve({ MEMGATE_LOCAL_DATA: file });
    expectOneLineExit(r, new RegExp(`^memgate: ${file}:1`));
  }, 30_000);

  test("a tenants file whose tenant's local dataFile does not exist", () => {
    const tenants = join(dir, "tenants.yaml");
    const data = join(dir, "nope.jsonl");
    writeFileSync(
      tenants,
      `tenants:
  - id: t
    keys:
      - { name: app, sha256: ${hashKey("mg_test_finding11_0123456789")}, scopes: [retrieve] }
    policies: { allowed: ["*"], default: default }
    defaultBackend: local
    backends:
      local: { dataFile: ${data} }
`,
    );
    const r = serve({ MEMGATE_TENANTS_FILE: tenants });
    expectOneLineExit(r, new RegExp(`^memgate: .*${data}.*ENOENT`));
  }, 30_000);

  test("a failed boot leaves nothing running: the CLI's serve ends by itself, without the binary's exit", () => {
    const file = join(dir, "missing.jsonl");
    const started = Date.now();
    const r = spawnSync(
      process.execPath,
      ["-e", "require('./dist/cli/main.js').main(['serve']).then((c) => { process.exitCode = c; })"],
      {
        cwd: ROOT,
        env: { PATH: process.env.PATH ?? "", PORT: "0", LOG_LEVEL: "warn", MEMGATE_LOCAL_DATA: file },
        encoding: "utf8",
        timeout: HANG_MS,
        killSignal: "SIGKILL",
      },
    );
    expect({ status: r.status, signal: r.signal }).toEqual({ status: 1, signal: null });
    expect(Date.now() - started).toBeLessThan(HANG_MS);
  }, 30_000);

  test("a tenant's default policy that does not load (the boot failure that already exited)", () => {
    const tenants = join(dir, "tenants.yaml");
    const data = join(dir, "ok.jsonl");
    writeFileSync(data, "");
    writeFileSync(
      tenants,
      `tenants:
  - id: t
    keys:
      - { name: app, sha256: ${hashKey("mg_test_finding11_0123456789")}, scopes: [retrieve] }
    policies: { allowed: ["*"], default: no-such-policy }
    defaultBackend: local
    backends:
      local: { dataFile: ${data} }
`,
    );
    const r = serve({ MEMGATE_TENANTS_FILE: tenants });
    expectOneLineExit(r, /^memgate: default policy not loaded from .*: no-such-policy/);
  }, 30_000);
});
