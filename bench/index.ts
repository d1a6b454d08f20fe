/**
 * Runs every `bench/*.bench.ts` in name order, each in its own Node process (same tsx loader), so one bench's
 * JIT state, heap and caches never colour the next one's figures.
 *
 *   npx tsx bench/index.ts                 every bench
 *   npx tsx bench/index.ts pipeline        only benches whose file name contains "pipeline"
 *   npx tsx bench/index.ts -- --quick      options after `--` (or any `--flag`) go to every bench
 *
 * Exits 0 when every bench ran to the end, whatever its figures say (benches report, they do not assert),
 * and 1 when one failed to run (a crash, or a bench that exits non-zero because a service it needs is down).
 * A failing bench does not stop the ones after it.
 */
import { spawnSync } from "node:child_process";
import { readdirSync } from "node:fs";
import { join, relative } from "node:path";

const BENCH_DIR = __dirname;

function main(): number {
  const args = process.argv.slice(2).filter((a) => a !== "--");
  const filters = args.filter((a) => !a.startsWith("-"));
  const passOn = args.filter((a) => a.startsWith("-"));
  const files = readdirSync(BENCH_DIR)
    .filter((f) => f.endsWith(".bench.ts"))
    .filter((f) => filters.length === 0 || filters.some((x) => f.includes(x)))
    .sort();
  if (files.length === 0) {
    console.error(`no bench file in ${BENCH_DIR} matches ${filters.join(", ") || "*.bench.ts"}`);
    return 1;
  }
  const failed: string[] = [];
  console.log(`benches: ${files.join(", ")}`);
  const started = process.hrtime.bigint();
  for (const file of files) {
    const path = join(BENCH_DIR, file);
    console.log(`\n>>> ${relative(process.cwd(), path)} ${passOn.join(" ")}`.trimEnd());
    // process.execArgv carries tsx's loader flags (`--require …preflight.cjs --import …loader.mjs`).
    const run = spawnSync(process.execPath, [...process.execArgv, path, ...passOn], { stdio: "inherit" });
    if (run.error !== undefined || run.status !== 0) {
      failed.push(
        `${file} (${run.error?.message ?? (run.signal ? `signal ${run.signal}` : `exit ${run.status}`)})`,
      );
    }
  }
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  console.log(
    `\n${files.length} bench file(s) in ${seconds.toFixed(1)} s${failed.length ? `; FAILED: ${failed.join(", ")}` : ""}`,
  );
  return failed.length > 0 ? 1 : 0;
}

process.exitCode = main();
