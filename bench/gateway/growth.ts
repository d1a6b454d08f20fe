/**
 * How the pipeline's cost grows with its input: median CPU time of one `runPipeline` call vs candidate count
 * (16, 40, 100) and content length (200, 2,000, 20,000 chars), for the shipped default policy and for
 * strict-pii.yaml (redaction on). The short form of bench/pipeline.bench.ts's scaling table, so the gateway bench
 * shows it in the same run; "µs per 1k chars" staying flat (or falling) is linear growth.
 */
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { runPipeline } from "../../src/pipeline";
import { warmTokenizers } from "../../src/pipeline/tokenizers";
import { type CompiledPolicy, compilePolicy } from "../../src/policy/compile";
import { parsePolicyText } from "../../src/policy/load";
import { describeCorpus, makeCandidateSets } from "../lib/corpus";
import { callsFor, int, ratio, sampleWithCpu, summarize, table, us, warmUp } from "../lib/stats";

const ROOT = resolve(__dirname, "../..");
const SIZES = [
  { count: 16, chars: 500 },
  { count: 40, chars: 500 },
  { count: 100, chars: 500 },
  { count: 16, chars: 200 },
  { count: 16, chars: 2000 },
  { count: 16, chars: 20_000 },
] as const;

function load(name: string): CompiledPolicy {
  const file = resolve(ROOT, "policies", `${name}.yaml`);
  const parsed = parsePolicyText(readFileSync(file, "utf8"), file);
  if (!parsed.ok) throw new Error(`${file}: ${JSON.stringify(parsed.problems)}`);
  return compilePolicy(parsed.policy);
}

/** The growth table; `budgetMs` of sampling per cell. */
export function growthTable(budgetMs: number): string {
  const policies = [
    { label: "default.yaml (o200k)", compiled: load("default") },
    { label: "strict-pii.yaml (redaction)", compiled: load("strict-pii") },
  ];
  warmTokenizers(policies.map((p) => p.compiled.policy.tokenizer));
  const cells = SIZES.map((size) => {
    const setCount = Math.max(4, Math.min(32, Math.floor(1_000_000 / (size.count * size.chars))));
    const sets = makeCandidateSets({ ...size, seed: 11, sets: setCount });
    const fns = policies.map(
      ({ compiled }) =>
        (i: number) =>
          runPipeline(
            { userId: "u", query: "", candidates: sets[i % sets.length] ?? [], backend: "local" },
            compiled,
          ),
    );
    return { size, chars: describeCorpus(sets).meanChars * size.count, fns };
  });
  // Every cell warmed (JIT, tokenizer caches) before any is timed, then timed in two interleaved rounds.
  const plans = cells.flatMap((c) =>
    c.fns.map((fn) => ({
      fn,
      n: callsFor(budgetMs / 2, warmUp(budgetMs / 3, fn, 5), 10, 1000),
      cpu: [] as number[],
    })),
  );
  for (let round = 0; round < 2; round++) {
    for (const p of plans) p.cpu.push(...sampleWithCpu(p.n, p.fn).cpu);
  }
  const rows = cells.map((c, i) => ({
    size: c.size,
    chars: c.chars,
    medians: policies.map((_, k) => summarize(plans[i * policies.length + k]?.cpu ?? []).median),
  }));
  const base = rows[0];
  return table(
    [
      "candidates × chars",
      "input chars",
      "input ×",
      ...policies.flatMap((p) => [`${p.label} µs`, "time ×", "µs/1k chars"]),
    ],
    rows.map((r) => [
      `${r.size.count} × ${int(r.size.chars)}`,
      int(r.chars),
      ratio(r.chars / (base?.chars ?? 1), 1),
      ...r.medians.flatMap((m, c) => [
        us(m),
        ratio(m / (base?.medians[c] ?? 1), 1),
        (m / 1000 / (r.chars / 1000)).toFixed(2),
      ]),
    ]),
    ["left"],
  );
}
