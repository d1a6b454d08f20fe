/**
 * The token cost of each progressive-disclosure layer on the long-conversation golden set
 * (docs/eval.md#what-each-disclosure-layer-costs): every question of eval/golden/long through the real retrieval core (buildServices, the embedded local
 * store loaded with the set's memories, the shipped policies/default.yaml) with `detail: "index"` — one call gives
 * the full payload and its index —, then a timeline (window 3) around and the details of the first memory.
 * Tokens are the shipped policy's tokenizer's (o200k_base). The only change to the shipped policy: its per-user
 * rate limit is lifted for this batch (~235 questions per user); shaping and hash-relevant stages are as shipped.
 *
 *     npx tsx scripts/disclosure-cost.ts
 */
import { appendFileSync, cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseEnv } from "../src/config/env";
import { loadGolden, loadMemories } from "../src/eval/files";
import { createLogger } from "../src/logging/logger";
import { getTokenizer } from "../src/pipeline/tokenizers";
import { buildServices } from "../src/server/services";

const GOLDEN = join(__dirname, "../eval/golden/long");

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "memgate-disclosure-"));
  const policyDir = join(dir, "policies");
  cpSync(join(__dirname, "../policies"), policyDir, { recursive: true });
  const shipped = readFileSync(join(policyDir, "default.yaml"), "utf8");
  // Lift only the per-user rate limit: a batch of ~235 questions per user is not a chat's rate.
  writeFileSync(
    join(policyDir, "default.yaml"),
    shipped.replace(
      /^rateLimit:[\s\S]*?(?=^\S)/m,
      "rateLimit: { perUser: { points: 100000, durationSeconds: 60 } }\n",
    ),
  );
  const { records } = await loadMemories(GOLDEN);
  const dataFile = join(dir, "memories.jsonl");
  writeFileSync(dataFile, "");
  for (const r of records) appendFileSync(dataFile, `${JSON.stringify(r)}\n`);
  const rawEnv = { MEMGATE_POLICY_DIR: policyDir, MEMGATE_LOCAL_DATA: dataFile, LOG_LEVEL: "silent" };
  const services = await buildServices({
    env: parseEnv(rawEnv),
    rawEnv,
    logger: createLogger("silent"),
    watchPolicies: false,
  });
  const tokenizer = getTokenizer("o200k_base");
  const [tenant] = services.tenants.tenants();
  if (tenant === undefined) throw new Error("no dev tenant");
  const principal = { tenant, scopes: new Set(["retrieve"] as const), keyId: "dev" };
  const { questions } = await loadGolden(GOLDEN);
  const sums = {
    fullPrompt: 0,
    fullContent: 0,
    indexPrompt: 0,
    gists: 0,
    timeline: 0,
    details: 0,
    memories: 0,
  };
  let answered = 0;
  let withMemory = 0;
  for (const q of questions) {
    const outcome = await services.retrieval.retrieve({
      principal,
      userId: q.userId,
      query: q.query,
      detail: "index",
    });
    if (outcome.kind !== "payload" || outcome.index === undefined) continue;
    answered++;
    const { payload, index } = outcome;
    sums.fullPrompt += tokenizer.count(payload.systemPrompt);
    sums.fullContent += payload.metadata.totalTokens;
    sums.indexPrompt += tokenizer.count(index.systemPrompt);
    sums.gists += index.metadata.indexTokens;
    sums.memories += payload.memories.length;
    const first = index.index[0];
    if (first === undefined) continue;
    withMemory++;
    const around = await services.retrieval.timeline({
      principal,
      userId: q.userId,
      id: first.id,
      before: 3,
      after: 3,
    });
    if (around.kind === "payload" && around.index !== undefined)
      sums.timeline += tokenizer.count(around.index.systemPrompt);
    const details = await services.retrieval.details({ principal, userId: q.userId, ids: [first.id] });
    if (details.kind === "payload") sums.details += details.payload.metadata.totalTokens;
  }
  await services.close();
  rmSync(dir, { recursive: true, force: true });
  const mean = (n: number, d: number) => (d === 0 ? 0 : Math.round((n / d) * 10) / 10);
  console.log(
    `questions: ${questions.length} (answered ${answered}; with at least one memory ${withMemory})`,
  );
  console.log(`memories kept per question (mean): ${mean(sums.memories, answered)}`);
  console.log("mean tokens per question (o200k_base):");
  console.log(
    `  full   (/v1/retrieve default)   system prompt ${mean(sums.fullPrompt, answered)}, contents ${mean(sums.fullContent, answered)}`,
  );
  console.log(
    `  index  (detail: index / search_memory) system prompt ${mean(sums.indexPrompt, answered)}, gists ${mean(sums.gists, answered)}`,
  );
  console.log(`  index / full (system prompt): ${mean(100 * sums.indexPrompt, sums.fullPrompt)} %`);
  console.log(`  timeline (window 3) around the first memory: ${mean(sums.timeline, withMemory)}`);
  console.log(`  details of the first memory: ${mean(sums.details, withMemory)}`);
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
