/**
 * The README is a tour, not a diary (issue 28, point 7): at most 400 lines, and its quick-start examples are what
 * the gateway answers. Each `curl … /v1/retrieve … -d '{…}'` of the "Quick start" section is sent to the real
 * server as `npm start` runs it (dev mode, the shipped policies, the demo memories); the `jsonc` answer shown after
 * it must hold: every memory shown with an id and a content is in the answer with that content, `wasRedacted`
 * where shown, and the metadata figures shown (`totalResults`, `includedResults`, `totalTokens`,
 * `appliedFilters`) are the answer's.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { silentLogger } from "../../src/logging/logger";
import { type Running, startServer } from "../../src/server/serve";

const ROOT = join(__dirname, "..", "..");
const README = readFileSync(join(ROOT, "README.md"), "utf8");

/** The text of the `## <title>` section (up to the next `## `). */
function section(title: string): string {
  const start = README.indexOf(`\n## ${title}\n`);
  if (start < 0) throw new Error(`README has no "## ${title}" section`);
  const end = README.indexOf("\n## ", start + 1);
  return README.slice(start, end < 0 ? undefined : end);
}

interface Example {
  body: Record<string, unknown>;
  shown: string;
}

/** Each curl to /v1/retrieve in `text` with the first jsonc block after it. */
function examples(text: string): Example[] {
  const out: Example[] = [];
  const curl = /```bash\ncurl -s http:\/\/127\.0\.0\.1:8787\/v1\/retrieve[^\n]*-d '(\{[\s\S]*?\})'\n```/g;
  for (const m of text.matchAll(curl)) {
    const after = text.slice((m.index ?? 0) + m[0].length);
    const shown = /```jsonc\n([\s\S]*?)\n```/.exec(after)?.[1];
    if (shown === undefined) throw new Error("a curl example without a jsonc answer after it");
    out.push({ body: JSON.parse(m[1] ?? "") as Record<string, unknown>, shown });
  }
  return out;
}

interface Memory {
  id: string;
  content: string;
  provenance: { wasRedacted: boolean };
}
interface Answer {
  memories: Memory[];
  metadata: Record<string, unknown>;
}

describe("README.md", () => {
  test("is a tour: at most 400 lines", () => {
    const lines = README.split("\n").length - (README.endsWith("\n") ? 1 : 0);
    expect(lines).toBeLessThanOrEqual(400);
    expect(lines).toBeGreaterThan(100); // still a tour, not an empty page
  });

  test("the quick start states the prerequisites of npm test (Redis, Chromium)", () => {
    const quick = section("Quick start");
    expect(quick).toMatch(/npm test/);
    expect(quick).toMatch(/Redis/);
    expect(quick).toMatch(/redis:\/\/127\.0\.0\.1:6379/);
    expect(quick).toMatch(/Chromium/);
    expect(quick).toMatch(/\/usr\/bin\/chromium/);
  });

  test("the docker run line mounts a tenants file the repository has", () => {
    const mounts = [...README.matchAll(/-v "?\$PWD\/([^:"]+):/g)].map((m) => m[1] ?? "");
    expect(mounts.length).toBeGreaterThan(0);
    for (const file of mounts) expect(() => readFileSync(join(ROOT, file))).not.toThrow();
  });

  describe("the quick start's answers are the real server's", () => {
    let running: Running;
    beforeAll(async () => {
      running = await startServer(
        {
          PORT: "0",
          MEMGATE_POLICY_DIR: join(ROOT, "policies"),
          MEMGATE_LOCAL_DATA: join(ROOT, "config/demo-memories.jsonl"),
        },
        { logger: silentLogger() },
      );
    });
    afterAll(() => running.stop());

    const found = examples(section("Quick start"));

    test("both examples are found (the default policy, and strict-pii with a redaction)", () => {
      expect(found).toHaveLength(2);
      expect(found[1]?.body.policy).toBe("strict-pii");
      expect(found[1]?.shown).toContain("[REDACTED]");
    });

    test.each(found.map((e, i) => [i + 1, e] as const))("example %i", async (_i, example) => {
      const res = await fetch(`${running.url}/v1/retrieve`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(example.body),
      });
      expect(res.status).toBe(200);
      const answer = (await res.json()) as Answer;
      const byId = new Map(answer.memories.map((m) => [m.id, m]));
      // Every memory shown with its content: there, with that content (and redacted where it says so).
      const shownMemories = [
        ...example.shown.matchAll(/\{ "id": "([^"]+)", "content": "((?:[^"\\]|\\.)*)"([^\n]*\n?[^\n]*)/g),
      ];
      expect(shownMemories.length).toBeGreaterThan(0);
      for (const [, id = "", content = "", rest = ""] of shownMemories) {
        const memory = byId.get(id);
        expect({ id, content: memory?.content }).toEqual({ id, content: JSON.parse(`"${content}"`) });
        const redacted = /"wasRedacted": (true|false)/.exec(rest)?.[1];
        if (redacted !== undefined) expect(memory?.provenance.wasRedacted).toBe(redacted === "true");
      }
      for (const key of ["totalResults", "includedResults", "totalTokens"]) {
        const shown = new RegExp(`"${key}": (\\d+)`).exec(example.shown)?.[1];
        expect({ key, value: answer.metadata[key] }).toEqual({ key, value: Number(shown) });
      }
      const filters = /"appliedFilters": (\[[^\]]*\])/.exec(example.shown)?.[1];
      expect(answer.metadata.appliedFilters).toEqual(JSON.parse(filters ?? "null"));
    });
  });
});
