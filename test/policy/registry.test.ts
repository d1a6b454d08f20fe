import * as fsp from "node:fs/promises";
import { mkdtemp, rename, rm, unlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import { createLogger, silentLogger } from "../../src/logging/logger";
import { policyHash } from "../../src/policy/compile";
import { createPolicyRegistry, type RegistryEvent } from "../../src/policy/registry";
import type { PolicyRegistry } from "../../src/policy/registry-types";

// readFile stays the real one unless a test makes one call slow (see the serialization test).
jest.mock("node:fs/promises", () => {
  const actual = jest.requireActual<typeof fsp>("node:fs/promises");
  return { ...actual, readFile: jest.fn(actual.readFile) };
});

let dir: string;
let registry: PolicyRegistry | undefined;
let events: RegistryEvent[];

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "memgate-registry-"));
  events = [];
  registry = undefined;
});

afterEach(async () => {
  registry?.close();
  await rm(dir, { recursive: true, force: true });
});

/** A valid policy whose fields all derive from `version`, so a torn read would show. */
const policy = (name: string, version: number, extra = ""): string =>
  `name: ${name}\nversion: ${version}\ndescription: v${version}\nretrieval:\n  topK: ${(version % 20) + 1}\n${extra}`;

const put = (file: string, text: string): Promise<void> => writeFile(join(dir, file), text);

/** Writes a temp file, then renames it over `file`, as most editors and config tools do. */
async function putAtomic(file: string, text: string): Promise<void> {
  await put(`.${file}.tmp`, text);
  await rename(join(dir, `.${file}.tmp`), join(dir, file));
}

async function open(opts: { watch?: boolean } = {}): Promise<PolicyRegistry> {
  registry = await createPolicyRegistry({
    dir,
    logger: silentLogger(),
    watch: opts.watch ?? false,
    debounceMs: 20,
    onEvent: (e) => events.push(e),
  });
  return registry;
}

/** Polls `check` until it returns true; fails with `what` after `timeoutMs`. */
async function waitFor(what: string, check: () => boolean, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

const status = (r: PolicyRegistry, name: string) => r.list().policies.find((p) => p.name === name);
const types = (): string[] => events.map((e) => `${e.type}:${e.name ?? "-"}`);

describe("policy registry: start-up", () => {
  test("loads valid files, lists invalid ones as rejected and ignores temp files and other extensions", async () => {
    await put("b.json", JSON.stringify({ name: "beta", version: 3 }));
    await put("a.yaml", policy("alpha", 1));
    await put("c.yml", "name: gamma\nversion: 1\nretrieval:\n  topK: 50\n");
    await put(".hidden.yaml", policy("hidden", 1));
    await put("a.yaml~", policy("backup", 1));
    await put(".#a.yaml", policy("lock", 1));
    await put("notes.txt", "not a policy");
    const r = await open();

    expect(r.get("alpha")?.policy.version).toBe(1);
    expect(r.get("beta")?.policy.version).toBe(3);
    expect(r.get("gamma")).toBeUndefined();
    const { policies, rejected } = r.list();
    expect(policies.map((p) => [p.name, p.file, p.status, p.lastError])).toEqual([
      ["alpha", join(dir, "a.yaml"), "active", null],
      ["beta", join(dir, "b.json"), "active", null],
    ]);
    expect(policies[0]?.hash).toBe(r.get("alpha")?.hash);
    expect(rejected).toHaveLength(1);
    expect(rejected[0]?.file).toBe(join(dir, "c.yml"));
    expect(rejected[0]?.error).toBe(
      `${join(dir, "c.yml")}:4: retrieval.topK: must be an integer from 1 to 20 (got 50)`,
    );
    expect(types()).toEqual(["loaded:alpha", "loaded:beta", "rejected:-"]);
  });

  test("an empty directory gives an empty registry; a missing one fails start-up", async () => {
    const r = await open();
    expect(r.list()).toEqual({ policies: [], rejected: [] });
    await expect(
      createPolicyRegistry({ dir: join(dir, "missing"), logger: silentLogger(), watch: true }),
    ).rejects.toThrow(/policy directory ".*missing" cannot be (read|watched) \(ENOENT\)/);
  });

  test("two files with the same name: the first by file name wins, the other is rejected naming both", async () => {
    await put("b.yaml", policy("shared", 2));
    await put("a.yaml", policy("shared", 1));
    const r = await open();
    expect(r.get("shared")?.policy.version).toBe(1);
    const { rejected } = r.list();
    expect(rejected.map((x) => x.file)).toEqual([join(dir, "b.yaml")]);
    expect(rejected[0]?.error).toContain(`policy "shared" is already defined by ${join(dir, "a.yaml")}`);
    expect(rejected[0]?.error).toContain(join(dir, "b.yaml"));

    // The winner goes away: the other file takes over.
    await unlink(join(dir, "a.yaml"));
    await r.reload();
    expect(r.get("shared")?.policy.version).toBe(2);
    expect(status(r, "shared")).toMatchObject({ file: join(dir, "b.yaml"), status: "active" });
    expect(r.list().rejected).toEqual([]);
  });

  test("a custom pattern RE2 cannot compile is rejected with its field path and line", async () => {
    const bad = 'redaction:\n  enabled: true\n  patterns:\n    - name: backref\n      pattern: "(a)\\\\1"\n';
    await put("p.yaml", policy("p", 1, bad));
    const r = await open();
    expect(r.get("p")).toBeUndefined();
    const error = r.list().rejected[0]?.error ?? "";
    expect(error).toMatch(new RegExp(`^${join(dir, "p.yaml")}:\\d+: redaction\\.patterns\\[0\\]`));
    expect(error).toContain("not a valid RE2 pattern");
  });
});

describe("policy registry: reload", () => {
  test("an invalid edit keeps the old version serving with lastError; a later valid edit recovers", async () => {
    await put("p.yaml", policy("p", 1));
    const r = await open();
    const v1 = r.get("p");

    await put("p.yaml", policy("p", 2, "tokenizer: gpt5\n"));
    await r.reload();
    expect(r.get("p")).toBe(v1);
    const s = status(r, "p");
    expect(s).toMatchObject({ version: 1, status: "active", rejectedChanges: 1 });
    expect(s?.lastError).toContain(`${join(dir, "p.yaml")}:6: tokenizer:`);
    expect(r.list().rejected).toEqual([]);
    expect(events.at(-1)).toMatchObject({ type: "rejected", name: "p", file: join(dir, "p.yaml") });

    // The same bad bytes again are no news; a bad RE2 pattern is a second rejected change.
    await r.reload();
    expect(status(r, "p")?.rejectedChanges).toBe(1);
    await put("p.yaml", policy("p", 2, 'redaction:\n  patterns: [{ name: x, pattern: "(?=a)" }]\n'));
    await r.reload();
    expect(status(r, "p")?.rejectedChanges).toBe(2);
    expect(status(r, "p")?.lastError).toContain("redaction.patterns[0]");

    await put("p.yaml", policy("p", 3));
    await r.reload();
    expect(r.get("p")?.policy.version).toBe(3);
    expect(status(r, "p")).toMatchObject({ version: 3, lastError: null, rejectedChanges: 2 });
    expect(types()).toEqual(["loaded:p", "rejected:p", "rejected:p", "reloaded:p"]);
  });

  test("an unchanged file, or a comment-only change, is a no-op", async () => {
    await put("p.yaml", policy("p", 1));
    const r = await open();
    const before = r.get("p");
    await put("p.yaml", policy("p", 1));
    await r.reload();
    await put("p.yaml", `# a comment\n${policy("p", 1)}`);
    await r.reload();
    expect(r.get("p")).toBe(before);
    expect(types()).toEqual(["loaded:p"]);
  });

  test("a file that now defines another name retires the old name and loads the new one", async () => {
    await put("p.yaml", policy("old", 1));
    const r = await open();
    const old = r.get("old");
    await put("p.yaml", policy("new", 1));
    await r.reload();
    expect(r.get("new")?.policy.version).toBe(1);
    expect(status(r, "old")).toMatchObject({ status: "retired" });
    expect(status(r, "old")?.lastError).toContain("no longer defines");
    expect(r.get("old")).toBeUndefined();
    expect(r.retired("old")).toBe(old);
  });

  test("a changed policy with the same or a lower version is refused; the old one keeps serving", async () => {
    await put("p.yaml", policy("p", 3));
    const r = await open();
    const v3 = r.get("p");

    // Same version, different content.
    await put("p.yaml", policy("p", 3, "tokenizer: approx\n"));
    await r.reload();
    expect(r.get("p")).toBe(v3);
    expect(status(r, "p")).toMatchObject({ version: 3, status: "active", rejectedChanges: 1 });
    expect(status(r, "p")?.lastError).toBe(
      `${join(dir, "p.yaml")}:2: version: 3 is not above the serving version 3: a changed policy must raise its version (version 3 keeps serving)`,
    );
    expect(events.at(-1)).toMatchObject({ type: "rejected", name: "p", version: 3 });
    // Reading the same bytes again is no news.
    await r.reload();
    expect(status(r, "p")?.rejectedChanges).toBe(1);

    // A lower version is refused too.
    await put("p.yaml", policy("p", 2, "tokenizer: approx\n"));
    await r.reload();
    expect(r.get("p")).toBe(v3);
    expect(status(r, "p")?.rejectedChanges).toBe(2);
    expect(status(r, "p")?.lastError).toContain("version: 2 is not above the serving version 3");

    // Only formatting changed (same hash) with the same version: no change, no refusal.
    await put("p.yaml", `# reformatted\n${policy("p", 3)}`);
    await r.reload();
    expect(r.get("p")).toBe(v3);
    expect(status(r, "p")).toMatchObject({ lastError: null, rejectedChanges: 2 });

    // A raised version is published.
    await put("p.yaml", policy("p", 4, "tokenizer: approx\n"));
    await r.reload();
    expect(r.get("p")?.policy).toMatchObject({ version: 4, tokenizer: "approx" });
    expect(status(r, "p")).toMatchObject({ version: 4, lastError: null });
    expect(types()).toEqual(["loaded:p", "rejected:p", "rejected:p", "reloaded:p", "reloaded:p"]);
  });

  test("concurrent reload() calls are serialized: a slow earlier reload never overwrites a later one", async () => {
    await put("p.yaml", policy("p", 1));
    const r = await open();
    // The next read of the file is slow and returns what was on disk before the delay.
    const realReadFile = jest.requireActual<typeof fsp>("node:fs/promises").readFile;
    let slowStarted = false;
    jest.mocked(fsp.readFile).mockImplementationOnce((async (...args: Parameters<typeof realReadFile>) => {
      const data = await realReadFile(...args);
      // Only once the read is done: a write the test makes after this must not reach it (on a loaded machine the
      // read itself could run after that write).
      slowStarted = true;
      await new Promise((resolve) => setTimeout(resolve, 150));
      return data;
    }) as typeof realReadFile);
    await put("p.yaml", policy("p", 2));
    const first = r.reload();
    await waitFor("the slow read to start", () => slowStarted);
    await put("p.yaml", policy("p", 3));
    const second = r.reload();
    await Promise.all([first, second]);
    expect(r.get("p")?.policy.version).toBe(3);
    expect(events.filter((e) => e.type === "reloaded").map((e) => e.version)).toEqual([2, 3]);

    // Calls made together while none has started share one reload: one event, not three.
    await put("p.yaml", policy("p", 4));
    await Promise.all([r.reload(), r.reload(), r.reload()]);
    expect(events.filter((e) => e.type === "reloaded").map((e) => e.version)).toEqual([2, 3, 4]);
  });

  test("readers never see a mix of two versions while many reloads run", async () => {
    await put("p.yaml", policy("p", 1));
    const r = await open();
    let reads = 0;
    let lastVersion = 0;
    const problems: string[] = [];
    let stop = false;
    const reader = (async () => {
      while (!stop) {
        const c = r.get("p");
        if (!c) problems.push("missing");
        else {
          const v = c.policy.version;
          if (c.hash !== policyHash(c.policy)) problems.push(`hash mismatch at v${v}`);
          if (c.policy.description !== `v${v}` || c.policy.retrieval.topK !== (v % 20) + 1) {
            problems.push(`torn policy at v${v}`);
          }
          if (v < lastVersion) problems.push(`went back from v${lastVersion} to v${v}`);
          lastVersion = v;
        }
        reads++;
        await new Promise((resolve) => setImmediate(resolve));
      }
    })();
    for (let v = 2; v <= 40; v++) {
      await put("p.yaml", policy("p", v));
      await r.reload();
    }
    stop = true;
    await reader;
    expect(problems).toEqual([]);
    expect(reads).toBeGreaterThan(40);
    expect(lastVersion).toBeGreaterThan(1);
    expect(r.get("p")?.policy.version).toBe(40);
  });

  test("logs say what happened without the file's contents", async () => {
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _enc, done) {
        lines.push(chunk.toString());
        done();
      },
    });
    await put("p.yaml", policy("p", 1, "description: SECRET-MARKER\n").replace("description: v1\n", ""));
    await put("q.yaml", "name: q\nversion: 0\ndescription: SECRET-MARKER\n");
    registry = await createPolicyRegistry({ dir, logger: createLogger("info", sink) });
    const logged = lines.map((l) => JSON.parse(l) as { level: number; event: string; file: string });
    expect(logged.map((l) => [l.event, l.level])).toEqual([
      ["policy.loaded", 30],
      ["policy.rejected", 40],
    ]);
    expect(lines.join("")).not.toContain("SECRET-MARKER");
  });
});

describe("policy registry: watching the directory", () => {
  test("an edit on disk swaps the policy", async () => {
    await put("p.yaml", policy("p", 1));
    const r = await open({ watch: true });
    await put("p.yaml", policy("p", 2));
    await waitFor("version 2", () => r.get("p")?.policy.version === 2);
    expect(events.at(-1)).toMatchObject({ type: "reloaded", name: "p", version: 2, hash: r.get("p")?.hash });
  });

  test("an invalid edit is rejected while watching, and a valid one recovers", async () => {
    await put("p.yaml", policy("p", 1));
    const r = await open({ watch: true });
    await putAtomic("p.yaml", "name: p\nversion: 2\nretrieval: { topK: 0 }\n");
    await waitFor("lastError", () => status(r, "p")?.lastError != null);
    expect(r.get("p")?.policy.version).toBe(1);
    expect(status(r, "p")?.rejectedChanges).toBe(1);
    await putAtomic("p.yaml", policy("p", 3));
    await waitFor("version 3", () => r.get("p")?.policy.version === 3);
    expect(status(r, "p")?.lastError).toBeNull();
  });

  test("a write-temp-then-rename edit is picked up and the temp file is never loaded", async () => {
    await put("p.yaml", policy("p", 1));
    const r = await open({ watch: true });
    await putAtomic("p.yaml", policy("p", 2));
    await waitFor("version 2", () => r.get("p")?.policy.version === 2);
    expect(types()).toEqual(["loaded:p", "reloaded:p"]);
    expect(r.list().rejected).toEqual([]);
  });

  test("a deleted file retires its policy (only retired() keeps it) until a file defines it again", async () => {
    await put("default.yaml", policy("default", 1));
    const r = await open({ watch: true });
    const v1 = r.get("default");
    await unlink(join(dir, "default.yaml"));
    await waitFor("retired", () => status(r, "default")?.status === "retired");
    expect(r.get("default")).toBeUndefined();
    expect(r.retired("default")).toBe(v1);
    expect(status(r, "default")?.lastError).toContain("was deleted");
    expect(events.at(-1)).toMatchObject({ type: "retired", name: "default", version: 1 });

    await put("other-name.yaml", policy("default", 2));
    await waitFor("active again", () => status(r, "default")?.status === "active");
    expect(r.get("default")?.policy.version).toBe(2);
    expect(status(r, "default")).toMatchObject({ file: join(dir, "other-name.yaml"), lastError: null });
  });

  test("a new valid file adds a policy; close() stops watching", async () => {
    const r = await open({ watch: true });
    await put("n.yaml", policy("n", 1));
    await waitFor("new policy", () => r.get("n") !== undefined);
    r.close();
    await put("m.yaml", policy("m", 1));
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(r.get("m")).toBeUndefined();
  });
});
