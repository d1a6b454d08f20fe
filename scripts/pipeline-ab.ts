/**
 * An A/B run of two builds of the shaping pipeline in one process (issue 25): the shipped `policies/default.yaml`
 * on 40 generated candidates × ~500 characters, the two builds' runPipeline called in alternating blocks of 64
 * calls, so both see the same load on a shared host. Prints per build the wall-clock median/p99/mean per call,
 * process CPU per call and the ratio B/A.
 *
 *   npx tsx scripts/pipeline-ab.ts --a=<dist dir> [--b=dist] [--seconds=20] [--fresh]
 *
 * A copy of dist/ made elsewhere needs node_modules beside it (a symlink) to load.
 * `--fresh`: every call gets candidate texts never seen before (see scripts/pipeline-profile.ts).
 */
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { makeCandidateSets, rotatingCandidates } from "../bench/lib/corpus";
import { percentile } from "../bench/lib/stats";
import type { Candidate } from "../src/pipeline/types";

const ROOT = resolve(__dirname, "..");
const arg = (name: string) => process.argv.find((a) => a.startsWith(`--${name}=`))?.split("=")[1];
const seconds = Number(arg("seconds") ?? 20);
const fresh = process.argv.includes("--fresh");
const QUERY = "when is the trip to Lisbon and what did the doctor say about my blood pressure?";

interface Build {
  label: string;
  run: (candidates: Candidate[]) => number;
  wall: number[];
  cpu: number[];
}

function load(label: string, dir: string): Build {
  const dist = <T>(module: string): T => require(resolve(dir, module)) as T;
  const { runPipeline } = dist<typeof import("../src/pipeline")>("pipeline");
  const { compilePolicy } = dist<typeof import("../src/policy/compile")>("policy/compile");
  const { parsePolicyText } = dist<typeof import("../src/policy/load")>("policy/load");
  const { warmTokenizers } = dist<typeof import("../src/pipeline/tokenizers")>("pipeline/tokenizers");
  const file = resolve(ROOT, "policies", "default.yaml");
  const parsed = parsePolicyText(readFileSync(file, "utf8"), file);
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.problems));
  const compiled = compilePolicy(parsed.policy);
  warmTokenizers([compiled.policy.tokenizer]);
  return {
    label: `${label} (${dir})`,
    run: (candidates) =>
      runPipeline({ userId: "u", query: QUERY, candidates, backend: "local" }, compiled).systemPrompt.length,
    wall: [],
    cpu: [],
  };
}

const builds = [load("A", resolve(arg("a") ?? "")), load("B", resolve(arg("b") ?? resolve(ROOT, "dist")))];
const sets = makeCandidateSets({ count: 40, chars: 500, seed: 1001, sets: 64 });
const candidatesFor = rotatingCandidates(sets, fresh);

let sink = 0;
const BLOCK = 64;
for (const b of builds) for (let i = 0; i < 300; i++) sink += b.run(candidatesFor(i));
const until = performance.now() + seconds * 1000;
for (let round = 0; performance.now() < until; round++) {
  for (const b of round % 2 === 0 ? builds : [...builds].reverse()) {
    const inputs = Array.from({ length: BLOCK }, (_, k) => candidatesFor(round * BLOCK + k));
    for (const candidates of inputs) {
      const c0 = process.cpuUsage();
      const t0 = process.hrtime.bigint();
      sink += b.run(candidates);
      const t1 = process.hrtime.bigint();
      const c1 = process.cpuUsage(c0);
      b.wall.push(Number(t1 - t0) / 1000);
      b.cpu.push(c1.user + c1.system);
    }
  }
}
const p = (xs: number[], q: number) => percentile(Float64Array.from(xs).sort(), q);
const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
for (const b of builds) {
  console.log(
    `${b.label}: ${b.wall.length} calls, wall median ${p(b.wall, 0.5).toFixed(0)} µs, p99 ${p(b.wall, 0.99).toFixed(0)} µs, mean ${mean(b.wall).toFixed(0)} µs; CPU median ${p(b.cpu, 0.5).toFixed(0)} µs, mean ${mean(b.cpu).toFixed(0)} µs`,
  );
}
const [a, b] = builds as [Build, Build];
console.log(
  `B/A: wall median ${(p(b.wall, 0.5) / p(a.wall, 0.5)).toFixed(2)}, p99 ${(p(b.wall, 0.99) / p(a.wall, 0.99)).toFixed(2)}, mean ${(mean(b.wall) / mean(a.wall)).toFixed(2)}; CPU mean ${(mean(b.cpu) / mean(a.cpu)).toFixed(2)} (${fresh ? "fresh texts" : "64 lists rotated"})`,
);
if (sink === 0) console.log("WARNING: no prompt produced");
