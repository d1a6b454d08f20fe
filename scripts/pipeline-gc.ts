/**
 * Is the pipeline's p99 its garbage collections? (issue 25's goal case: the shipped `policies/default.yaml` on
 * 40 generated candidates × ~500 characters, the bench's `sets40`, on the build in dist/.) Times runPipeline
 * call by call with a GC observer on, and splits the calls a collection started in from the others: p50/p99 of
 * each, the share of calls a GC ran in, scavenges and their pauses, and the bytes allocated per call (`heapUsed`
 * growth between collections). Runs under whatever V8 flags it is given, so the young generation's size can be
 * compared:
 *
 *   npx tsx scripts/pipeline-gc.ts [--seconds=10] [--fresh] [--dist=<dir>]
 *   node --max-semi-space-size=32 -r tsx/cjs scripts/pipeline-gc.ts
 *
 * `--fresh`: every call gets candidate texts never seen before (see scripts/pipeline-profile.ts).
 */
import { getHeapStatistics } from "node:v8";
import { gcCounter, gcSplit, heapPerCall, sampleWithCpu, summarize } from "../bench/lib/stats";
import { arg, goalCase, QUERY } from "./lib/goal-case";

const seconds = Number(arg("seconds") ?? 10);

const { runPipeline, compiled, fresh, candidatesFor } = goalCase();

let sink = 0;
const call = (i: number) => {
  sink += runPipeline({ userId: "u", query: QUERY, candidates: candidatesFor(i), backend: "local" }, compiled)
    .systemPrompt.length;
};

const msOf = (ns: number) => (ns / 1e6).toFixed(3);

void (async () => {
  for (let i = 0; i < 500; i++) call(i);
  const wall: number[] = [];
  const cpu: number[] = [];
  const hits: boolean[] = [];
  let scavenges = 0;
  let scavengeMs = 0;
  let scavengeMax = 0;
  let others = 0;
  let othersMs = 0;
  const until = performance.now() + seconds * 1000;
  let i = 0;
  while (performance.now() < until) {
    const gc = gcCounter();
    const s = sampleWithCpu(256, (k) => call(i + k));
    i += 256;
    const g = await gc.stop();
    for (const e of g.entries) {
      if (e.minor) {
        scavenges++;
        scavengeMs += e.duration;
        scavengeMax = Math.max(scavengeMax, e.duration);
      } else {
        others++;
        othersMs += e.duration;
      }
    }
    const hit = gcSplit(s.startedAt, s.wall, g.entries);
    for (let k = 0; k < s.wall.length; k++) {
      wall.push(s.wall[k] ?? 0);
      cpu.push(s.cpu[k] ?? 0);
      hits.push(hit[k] === true);
    }
  }
  const all = summarize(wall);
  const without = summarize(wall.filter((_, k) => !hits[k]));
  const withGc = summarize(wall.filter((_, k) => hits[k]));
  const cpuWithout = summarize(cpu.filter((_, k) => !hits[k]));
  const cpuWith = summarize(cpu.filter((_, k) => hits[k]));
  const cpuAll = summarize(cpu);
  const perCall = heapPerCall(call, 10, 30);
  const semi = getHeapStatistics();
  const flags = process.execArgv.filter((a) => a.startsWith("--max-semi") || a.startsWith("--semi"));
  console.log(
    `${fresh ? "fresh texts" : "64 lists rotated"}, ${flags.join(" ") || "default young generation"}: ` +
      `${all.n} calls in ${seconds} s, ~${((perCall ?? Number.NaN) / 1024).toFixed(1)} KB allocated per call`,
  );
  console.log(
    `all calls:        median ${msOf(all.median)} ms, p99 ${msOf(all.p99)} ms, p99.9 ${msOf(all.p999)} ms; ` +
      `CPU median ${msOf(cpuAll.median)} ms, p99 ${msOf(cpuAll.p99)} ms`,
  );
  console.log(
    `no GC in the call: ${without.n} calls, median ${msOf(without.median)} ms, p99 ${msOf(without.p99)} ms; ` +
      `CPU median ${msOf(cpuWithout.median)} ms, p99 ${msOf(cpuWithout.p99)} ms`,
  );
  console.log(
    `a GC in the call:  ${withGc.n} calls (${((withGc.n / all.n) * 100).toFixed(2)} %), ` +
      `median ${msOf(withGc.median)} ms, p99 ${msOf(withGc.p99)} ms; CPU median ${msOf(cpuWith.median)} ms`,
  );
  console.log(
    `scavenges ${scavenges} (every ${(all.n / Math.max(1, scavenges)).toFixed(0)} calls; mean pause ` +
      `${(scavengeMs / Math.max(1, scavenges)).toFixed(2)} ms, max ${scavengeMax.toFixed(2)} ms); ` +
      `other GC events ${others} (${othersMs.toFixed(1)} ms in all); heap total ` +
      `${(semi.total_heap_size / 1024 / 1024).toFixed(1)} MB`,
  );
  if (sink === 0) console.log("WARNING: no prompt produced");
})();
