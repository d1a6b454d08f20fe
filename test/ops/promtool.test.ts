/**
 * `promtool` — Prometheus's own checker, from the Debian package `prometheus` (.ci/run installs it) — on the
 * alert rules: `check rules` loads deploy/prometheus/alerts.yml as Prometheus would (PromQL, templates,
 * durations), and `test rules` runs the unit tests of deploy/prometheus/alerts.test.yml: healthy traffic (first-time
 * users, callers switching memory off) pages nobody; a backend down, a replica gone, Redis lost, a replica not
 * ready each fire their alert with the expected labels and annotations.
 */
import { spawnSync } from "node:child_process";
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ROOT } from "./monitoring-files";

const RULES = join(ROOT, "deploy/prometheus/alerts.yml");
const TESTS = join(ROOT, "deploy/prometheus/alerts.test.yml");

function promtool(...args: string[]): { status: number | null; output: string } {
  const r = spawnSync("promtool", args, { encoding: "utf8", timeout: 60_000 });
  if (r.error !== undefined)
    throw new Error(
      `promtool: ${r.error.message} (install it: apt-get install --no-install-recommends prometheus)`,
    );
  return { status: r.status, output: `${r.stdout}${r.stderr}` };
}

describe("promtool on deploy/prometheus/alerts.yml", () => {
  test("check rules: the file loads", () => {
    const r = promtool("check", "rules", RULES);
    expect(r.output).toMatch(/SUCCESS: \d+ rules found/);
    expect(r.status).toBe(0);
  });

  test("test rules: healthy traffic does not page, each failure does", () => {
    const r = promtool("test", "rules", TESTS);
    expect(r.output).toContain("SUCCESS");
    expect(r.status).toBe(0);
  });

  test("the unit tests fail on a fallback alert that counts first-time users", () => {
    const dir = mkdtempSync(join(tmpdir(), "memgate-promtool-"));
    try {
      const rules = readFileSync(RULES, "utf8");
      const counting = rules.replace('|COLLECTION_NOT_FOUND"', '"');
      expect(counting).not.toBe(rules);
      writeFileSync(join(dir, "alerts.yml"), counting);
      copyFileSync(TESTS, join(dir, "alerts.test.yml"));
      const r = promtool("test", "rules", join(dir, "alerts.test.yml"));
      expect(r.status).not.toBe(0);
      expect(r.output).toMatch(/FAILED[\s\S]*alertname: MemgateFallbackRateHigh, time: 25m/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
