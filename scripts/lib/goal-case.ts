/**
 * Issue 25's pipeline goal case, shared by scripts/pipeline-gc.ts, pipeline-profile.ts and pipeline-allocs.ts:
 * the shipped `policies/default.yaml`, compiled from a build (`--dist=<dir>`, default dist/: e.g. a copy from before
 * a change, for an A/B run), on 40 generated candidates × ~500 characters (the bench's sets), the same question.
 * `--fresh`: every call gets candidate texts never seen before (a token of its own before every sentence end), so
 * no cache shared across requests holds a count of any of its sentences or memories: the cold case.
 */
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { makeCandidateSets, rotatingCandidates } from "../../bench/lib/corpus";

const ROOT = resolve(__dirname, "../..");

/** `--name=value` from the command line. */
export const arg = (name: string): string | undefined =>
  process.argv.find((a) => a.startsWith(`--${name}=`))?.split("=")[1];

export const QUERY = "when is the trip to Lisbon and what did the doctor say about my blood pressure?";

export function goalCase() {
  const DIST = resolve(arg("dist") ?? resolve(ROOT, "dist"));
  const dist = <T>(module: string): T => require(resolve(DIST, module)) as T;
  const { runPipeline } = dist<typeof import("../../src/pipeline")>("pipeline");
  const { compilePolicy } = dist<typeof import("../../src/policy/compile")>("policy/compile");
  const { parsePolicyText } = dist<typeof import("../../src/policy/load")>("policy/load");
  const { warmTokenizers } = dist<typeof import("../../src/pipeline/tokenizers")>("pipeline/tokenizers");
  const file = resolve(ROOT, "policies", "default.yaml");
  const parsed = parsePolicyText(readFileSync(file, "utf8"), file);
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.problems));
  const compiled = compilePolicy(parsed.policy);
  warmTokenizers([compiled.policy.tokenizer]);
  const fresh = process.argv.includes("--fresh");
  const sets = makeCandidateSets({ count: 40, chars: 500, seed: 1001, sets: 64 });
  return { runPipeline, compiled, fresh, candidatesFor: rotatingCandidates(sets, fresh) };
}
