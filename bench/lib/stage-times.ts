/**
 * A pipeline observer (`PipelineObserver`, src/pipeline/index.ts) that collects each stage's durations by stage
 * name, in the unit `perMs` converts milliseconds to (1e3: µs, 1e6: ns). Shared by bench/pipeline.bench.ts and
 * scripts/pipeline-profile.ts.
 */
export function stageTimes(perMs: number): {
  byStage: Map<string, number[]>;
  observer: { now: () => number; stage(trace: { stage: string }, startedAt: number, endedAt: number): void };
} {
  const byStage = new Map<string, number[]>();
  const observer = {
    now: () => performance.now(),
    stage(trace: { stage: string }, startedAt: number, endedAt: number) {
      let list = byStage.get(trace.stage);
      if (list === undefined) {
        list = [];
        byStage.set(trace.stage, list);
      }
      list.push((endedAt - startedAt) * perMs);
    },
  };
  return { byStage, observer };
}
