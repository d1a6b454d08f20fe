/**
 * Where the shaping pipeline allocates (issue 25): the shipped `policies/default.yaml` on 40 generated
 * candidates × ~500 characters (the bench's `sets40`), runPipeline called over and over on the build in dist/
 * under V8's sampling heap profiler, counting garbage too (objects collected by minor and major GCs). Prints
 * the bytes allocated per call by stage (the nearest stage function up the stack) and by function (self).
 *
 *   npm run build && npx tsx scripts/pipeline-allocs.ts [--calls=2000] [--fresh] [--top=30] [--dist=<dir>]
 *
 * Sampled (one sample per `--interval` bytes, 4 KB by default): figures are estimates, good to ±5 % at 2,000 calls.
 * `--fresh`: every call gets candidate texts never seen before (see scripts/pipeline-profile.ts), the cold case.
 */
import { Session } from "node:inspector";
import { arg, goalCase, QUERY } from "./lib/goal-case";

const calls = Number(arg("calls") ?? 2000);
const interval = Number(arg("interval") ?? 4096);
const top = Number(arg("top") ?? 30);

/** Functions that stand for a stage: a sample is charged to the nearest one up its stack. */
const STAGES = [
  "toWorkItem",
  "boundWork",
  "measureRelative",
  "analyzeQuery",
  "thresholdStage",
  "dedupStage",
  "rankStage",
  "selectStage",
  "clipStage",
  "redactRewritten",
  "budgetStage",
  "certify",
  "answerSlot",
  "toEntry",
  "formatSystemPrompt",
];

const { runPipeline, compiled, fresh, candidatesFor } = goalCase();
let sink = 0;
const call = (i: number) => {
  const r = runPipeline(
    { userId: "u", query: QUERY, candidates: candidatesFor(i), backend: "local" },
    compiled,
  );
  sink += r.systemPrompt.length;
};
// Fresh candidates are made before the profiled loop, so their own allocation is not charged to the pipeline.
const inputs = fresh ? Array.from({ length: calls }, (_, i) => candidatesFor(i)) : undefined;
for (let i = 0; i < 500; i++) call(i);

interface Node {
  callFrame: { functionName: string; url: string; lineNumber: number };
  selfSize: number;
  children: Node[];
}

const session = new Session();
session.connect();
const post = <T>(method: string, params?: object) =>
  new Promise<T>((ok, fail) =>
    session.post(method, params ?? {}, (err, res) => (err ? fail(err) : ok(res as T))),
  );

void (async () => {
  await post("HeapProfiler.enable");
  await post("HeapProfiler.startSampling", {
    samplingInterval: interval,
    includeObjectsCollectedByMajorGC: true,
    includeObjectsCollectedByMinorGC: true,
  });
  for (let i = 0; i < calls; i++) {
    if (inputs === undefined) call(i);
    else {
      const r = runPipeline(
        { userId: "u", query: QUERY, candidates: inputs[i] ?? [], backend: "local" },
        compiled,
      );
      sink += r.systemPrompt.length;
    }
  }
  const { profile } = await post<{ profile: { head: Node } }>("HeapProfiler.stopSampling");
  const byStage = new Map<string, number>();
  const byFunction = new Map<string, { bytes: number; stage: string }>();
  let total = 0;
  const walk = (node: Node, stage: string) => {
    const name = node.callFrame.functionName;
    const here = STAGES.includes(name) ? name : stage;
    if (node.selfSize > 0) {
      total += node.selfSize;
      byStage.set(here, (byStage.get(here) ?? 0) + node.selfSize);
      const where = `${name || "(anonymous)"} ${node.callFrame.url.replace(/^.*\/(dist|node_modules)\//, "$1/")}:${node.callFrame.lineNumber + 1}`;
      const f = byFunction.get(`${here}|${where}`) ?? { bytes: 0, stage: here };
      f.bytes += node.selfSize;
      byFunction.set(`${here}|${where}`, f);
    }
    for (const c of node.children) walk(c, here);
  };
  walk(profile.head, "(outside a stage)");
  const kb = (b: number) => `${(b / calls / 1024).toFixed(1)} KB`;
  console.log(
    `${fresh ? "fresh texts" : "64 lists rotated"}: ${calls} calls, ~${kb(total)} allocated per call (sampled every ${interval} B)`,
  );
  console.log("\nby stage (per call):");
  for (const [s, b] of [...byStage].sort((a, b) => b[1] - a[1])) console.log(`  ${kb(b).padStart(10)}  ${s}`);
  console.log(`\ntop ${top} functions (self, per call, within their stage):`);
  for (const [key, f] of [...byFunction].sort((a, b) => b[1].bytes - a[1].bytes).slice(0, top)) {
    console.log(`  ${kb(f.bytes).padStart(10)}  ${f.stage.padEnd(18)} ${key.split("|")[1]}`);
  }
  if (sink === 0) console.log("WARNING: no prompt produced");
  session.disconnect();
})();
