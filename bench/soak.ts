/**
 * `npm run soak` — load and faults (bench/soak/*): drives the compiled gateway (`node bin/memgate.js serve`, run
 * `npm run build` first) at a fixed rate against a fake OpenMemory while injecting backend 5xx bursts, latency
 * spikes beyond the policy timeout and a Redis that is killed and restarted; prints requests sent and answered,
 * statuses (5xx must be 0), fallbacks by code, cache results, p50/p99 and the gateway's heap after a forced GC
 * at the end of the warm-up and at the end (must stay flat). Exits 1 when any of that fails.
 *
 *   npx tsx bench/soak.ts                      45 s at 200 req/s (the CI form)
 *   npx tsx bench/soak.ts --duration 300       the long run docs/benchmarks.md quotes
 *   npx tsx bench/soak.ts --rate 100 --json    also print one JSON line (last line of the output)
 *   --heap-bound-mb N                          allowed heap growth (default 16)
 *   --node-flags "--max-semi-space-size=32"    Node/V8 flags for the gateway process (space-separated)
 *
 * Everything listens on 127.0.0.1; needs `redis-server` on the PATH.
 */
import { bytes } from "./lib/stats";
import { formatReport, jsonReport, verdict } from "./soak/report";
import { runSoak } from "./soak/run";

function numberArg(args: string[], name: string, fallback: number): number {
  const i = args.indexOf(`--${name}`);
  if (i < 0) return fallback;
  const v = Number(args[i + 1]);
  if (!Number.isFinite(v) || v <= 0) throw new Error(`--${name} needs a positive number`);
  return v;
}

function stringArg(args: string[], name: string): string | undefined {
  const i = args.indexOf(`--${name}`);
  return i < 0 ? undefined : args[i + 1];
}

async function main(): Promise<number> {
  const args = process.argv.slice(2).filter((a) => a !== "--");
  const options = {
    durationS: numberArg(args, "duration", 45),
    rate: numberArg(args, "rate", 200),
    heapBoundBytes: numberArg(args, "heap-bound-mb", 16) * 1024 * 1024,
    nodeFlags:
      stringArg(args, "node-flags")
        ?.split(/\s+/)
        .filter((f) => f !== "") ?? [],
    log: (line: string) => process.stdout.write(`  ${line}\n`),
  };
  process.stdout.write(
    `soak: ${options.durationS} s at ${options.rate} req/s, heap bound +${bytes(options.heapBoundBytes)}` +
      `${options.nodeFlags.length > 0 ? `, gateway node flags ${options.nodeFlags.join(" ")}` : ""}\n`,
  );
  const result = await runSoak(options);
  const v = verdict(result);
  process.stdout.write(`\n${formatReport(result, v)}\n`);
  if (args.includes("--json")) process.stdout.write(`${jsonReport(result, v)}\n`);
  return v.pass ? 0 : 1;
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    process.stderr.write(`soak: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exitCode = 2;
  },
);
