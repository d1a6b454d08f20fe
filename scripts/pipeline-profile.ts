/**
 * A small driver for profiling the shaping pipeline (issue 25's goal case): the shipped `policies/default.yaml`
 * on 40 generated candidates × ~500 characters (the bench's `sets40`), runPipeline called over and over on the
 * built code in dist/ (run `npx tsc -p tsconfig.build.json` first). Prints the wall-clock median/p99 of the
 * whole call and each stage's median as the pipeline's observer sees it.
 *
 *   npx tsx scripts/pipeline-profile.ts [--seconds=5] [--fresh] [--dist=<dir>]
 *   node --cpu-prof --cpu-prof-dir=/tmp/prof -r tsx/cjs scripts/pipeline-profile.ts   (then bench/lib/cpuprofile.ts)
 *
 * `--fresh`: every call gets candidate texts never seen before (a token of its own before every sentence end),
 * so no cache shared across requests holds a count of any of its sentences or memories: the cold case.
 */
import { stageTimes } from "../bench/lib/stage-times";
import { percentile } from "../bench/lib/stats";
import { arg, goalCase, QUERY } from "./lib/goal-case";

const seconds = Number(arg("seconds") ?? 5);

const { runPipeline, compiled, fresh, candidatesFor } = goalCase();

const { byStage, observer } = stageTimes(1000);
let sink = 0;
const cpu: number[] = [];
const call = (i: number) => {
  const candidates = candidatesFor(i);
  const c0 = process.cpuUsage();
  const t0 = process.hrtime.bigint();
  const r = runPipeline({ userId: "u", query: QUERY, candidates, backend: "local" }, compiled, observer);
  const t1 = process.hrtime.bigint();
  const c1 = process.cpuUsage(c0);
  sink += r.systemPrompt.length;
  cpu.push(c1.user + c1.system);
  return Number(t1 - t0) / 1000;
};
for (let i = 0; i < 300; i++) call(i);
byStage.clear();
cpu.length = 0;
const whole: number[] = [];
/** Mean wall µs per call of each batch of 32 calls: the fastest batch is the least disturbed by other load. */
const batches: number[] = [];
const until = performance.now() + seconds * 1000;
for (let i = 0; performance.now() < until; i++) {
  whole.push(call(i));
  if (whole.length % 32 === 0) batches.push(whole.slice(-32).reduce((a, b) => a + b, 0) / 32);
}
const p = (xs: number[], q: number) => percentile(Float64Array.from(xs).sort(), q);
console.log(
  `${fresh ? "fresh texts" : "64 lists rotated"}: ${whole.length} calls, whole call median ${p(whole, 0.5).toFixed(0)} µs, p99 ${p(whole, 0.99).toFixed(0)} µs; process CPU per call median ${p(cpu, 0.5).toFixed(0)} µs, p99 ${p(cpu, 0.99).toFixed(0)} µs; fastest batch of 32: ${Math.min(...batches).toFixed(0)} µs a call`,
);
for (const [stage, xs] of byStage) {
  console.log(
    `  ${stage.padEnd(16)} median ${p(xs, 0.5).toFixed(1).padStart(7)} µs  p99 ${p(xs, 0.99).toFixed(1)} µs`,
  );
}
if (sink === 0) console.log("WARNING: no prompt produced");
