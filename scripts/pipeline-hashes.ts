/**
 * Byte-equivalence check for pipeline refactors: every shipped policy (policies/*.yaml), every eval policy
 * (eval/policies/*.yaml) and a few variants (other tokenizers, redaction on) run over recorded golden-set
 * candidates, at the policy's own candidate count and at the expansion round's; each whole result
 * (memories, systemPrompt, trace with explain, query analysis, sufficiency) is hashed.
 *
 *   node bin/memgate.js eval --golden eval/golden/long --backend local --data eval/golden/long \
 *     --policy policies/default.yaml --limit 200 --record /tmp/long.candidates.jsonl
 *   npm run build
 *   npx tsx scripts/pipeline-hashes.ts --candidates /tmp/long.candidates.jsonl --write /tmp/before.json
 *   … change the code, npm run build …
 *   npx tsx scripts/pipeline-hashes.ts --candidates /tmp/long.candidates.jsonl --check /tmp/before.json
 *
 * `--dist <dir>` runs another build (e.g. a copy of dist/ taken after building, so the check can run while you
 * go on changing and building). `--check` exits 1 and names the first differing runs when any hash differs. Runs the build in dist/ (as
 * bench/pipeline.bench.ts does), so build first.
 */
import { createHash } from "node:crypto";
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { resolve } from "node:path";
import type { Candidate } from "../src/pipeline/types";
import type { Policy } from "../src/policy/schema";

const ROOT = resolve(__dirname, "..");
/** `--dist <dir>`: another build to check (a copy of dist/, so that building again meanwhile changes nothing). */
const DIST = resolve(process.argv[process.argv.indexOf("--dist") + 1] ?? "", "");
const dist = <T>(module: string): T =>
  require(resolve(process.argv.includes("--dist") ? DIST : resolve(ROOT, "dist"), module)) as T;
const { runPipeline } = dist<typeof import("../src/pipeline")>("pipeline");
const { firstCandidates } = dist<typeof import("../src/pipeline/candidate")>("pipeline/candidate");
const { parseTimestamp } = dist<typeof import("../src/pipeline/text/time")>("pipeline/text/time");
const { compilePolicy } = dist<typeof import("../src/policy/compile")>("policy/compile");
const { parsePolicyText } = dist<typeof import("../src/policy/load")>("policy/load");
const { policySchema } = dist<typeof import("../src/policy/schema")>("policy/schema");

function arg(name: string): string | undefined {
  const i = process.argv.indexOf(name);
  return i < 0 ? undefined : process.argv[i + 1];
}

function loadPolicy(file: string): Policy {
  const parsed = parsePolicyText(readFileSync(file, "utf8"), file);
  if (!parsed.ok) throw new Error(`${file}: ${JSON.stringify(parsed.problems)}`);
  return parsed.policy;
}

function policies(): Array<{ label: string; policy: Policy }> {
  const out: Array<{ label: string; policy: Policy }> = [];
  for (const dir of ["policies", "eval/policies"]) {
    for (const f of readdirSync(resolve(ROOT, dir)).sort()) {
      if (f.endsWith(".yaml")) out.push({ label: `${dir}/${f}`, policy: loadPolicy(resolve(ROOT, dir, f)) });
    }
  }
  const def = loadPolicy(resolve(ROOT, "policies/default.yaml"));
  const pii = loadPolicy(resolve(ROOT, "policies/strict-pii.yaml"));
  const variant = (label: string, patch: Partial<Policy>) =>
    out.push({ label, policy: policySchema.parse({ ...def, ...patch }) });
  variant("default cl100k_base", { tokenizer: "cl100k_base" });
  variant("default approx", { tokenizer: "approx" });
  variant("default + strict-pii redaction", { redaction: pii.redaction });
  variant("default, diversity 1, no dynamicK", {
    ranking: { ...def.ranking, diversity: 1, dynamicK: { ...def.ranking.dynamicK, enabled: false } },
  });
  variant("default, truncate, no fill", { budget: { ...def.budget, packing: "truncate", fill: false } });
  return out;
}

interface Recorded {
  id: string;
  userId: string;
  query: string;
  backend: string;
  results: Candidate[];
}

function main(): number {
  const file = arg("--candidates");
  if (file === undefined) throw new Error("--candidates <recorded.jsonl> is required");
  const recorded = readFileSync(file, "utf8")
    .split("\n")
    .filter((l) => l.trim() !== "" && !l.startsWith("//"))
    .map((l) => JSON.parse(l) as Recorded);
  const hashes: Record<string, string> = {};
  const all = createHash("sha256");
  let runs = 0;
  const started = process.hrtime.bigint();
  for (const { label, policy } of policies()) {
    const compiled = compilePolicy(policy);
    const take = policy.retrieval.topK * policy.retrieval.overfetch;
    const sizes = policy.sufficiency.enabled ? [take, take * policy.sufficiency.expandFactor] : [take];
    for (const r of recorded) {
      let newest: number | undefined;
      for (const c of r.results) {
        const t = parseTimestamp(c.timestamp);
        if (!Number.isNaN(t) && (newest === undefined || t > newest)) newest = t;
      }
      const available = policy.retrieval.replies ? r.results : r.results.filter((c) => c.origin !== "reply");
      for (const n of sizes) {
        const result = runPipeline(
          {
            userId: r.userId,
            query: r.query,
            candidates: firstCandidates(available, n),
            backend: r.backend,
            explain: true,
            ...(newest === undefined ? {} : { turnTime: newest }),
          },
          compiled,
        );
        const h = createHash("sha256").update(JSON.stringify(result)).digest("hex").slice(0, 16);
        hashes[`${label}|${r.id}|${n}`] = h;
        all.update(h);
        runs++;
      }
    }
  }
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  const digest = all.digest("hex").slice(0, 16);
  console.log(`${runs} pipeline runs in ${seconds.toFixed(1)} s; combined hash ${digest}`);
  const write = arg("--write");
  if (write !== undefined) writeFileSync(write, `${JSON.stringify(hashes, null, 1)}\n`);
  const check = arg("--check");
  if (check !== undefined) {
    const before = JSON.parse(readFileSync(check, "utf8")) as Record<string, string>;
    const keys = new Set([...Object.keys(before), ...Object.keys(hashes)]);
    const differ = [...keys].filter((k) => before[k] !== hashes[k]);
    console.log(`${differ.length} of ${keys.size} runs differ from ${check}`);
    for (const k of differ.slice(0, 20)) console.log(`  ${k}: ${before[k] ?? "-"} → ${hashes[k] ?? "-"}`);
    if (differ.length > 0) return 1;
  }
  return 0;
}

process.exitCode = main();
