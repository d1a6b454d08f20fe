/**
 * Checks a golden set against the memories it was written for and prints what it is made of:
 *
 *   npx tsx scripts/check-golden.ts <memories.jsonl> <questions.jsonl> [more pairs…]
 *
 * Exit 1 on any problem (unknown ids, evidence of another user, an answer no evidence memory contains).
 * Figures: questions per category and language, memories per user, sentences per memory, and in which
 * sentence of its evidence memory each answer sits (1st, 2nd, 3rd or later) — the golden set should often
 * put the answer after the second sentence, where seed 000's leading clip cuts it.
 */
import { createLocalBackendFromRecords } from "../src/backends/local";
import { loadMemoriesFile } from "../src/backends/local/load";
import type { MemoryRecord } from "../src/backends/local/schema";
import {
  alternativesOf,
  checkGoldenAgainstMemories,
  type GoldenQuestion,
  loadGoldenFile,
  normalizeForMatch,
} from "../src/eval/golden";
import { sentenceSpans } from "../src/pipeline/text/sentences";

function count<K>(map: Map<K, number>, key: K): void {
  map.set(key, (map.get(key) ?? 0) + 1);
}

function show(title: string, map: Map<string, number>): void {
  const rows = [...map.entries()].sort((a, b) => (a[0] < b[0] ? -1 : 1));
  console.log(`${title}: ${rows.map(([k, v]) => `${k} ${v}`).join(" · ")}`);
}

/** 1-based index of the sentence of `content` where `answer` starts, or 0 when it is not there. */
function sentenceOf(content: string, answer: string): number {
  const spans = sentenceSpans(content);
  const target = normalizeForMatch(answer);
  for (let i = 0; i < spans.length; i++) {
    const s = spans[i];
    if (s && normalizeForMatch(content.slice(s.start, s.end)).includes(target)) return i + 1;
  }
  // Spans more than one sentence: where its start is.
  const whole = normalizeForMatch(content);
  return whole.includes(target) ? -1 : 0;
}

async function main(): Promise<number> {
  const args = process.argv.slice(2);
  if (args.length === 0 || args.length % 2 !== 0) {
    console.error("usage: npx tsx scripts/check-golden.ts <memories.jsonl> <questions.jsonl> [more pairs…]");
    return 2;
  }
  const records: MemoryRecord[] = [];
  const questions: GoldenQuestion[] = [];
  for (let i = 0; i < args.length; i += 2) {
    records.push(...(await loadMemoriesFile(args[i] ?? "")));
    questions.push(...(await loadGoldenFile(args[i + 1] ?? "")));
  }
  const ids = new Set<string>();
  const problems: string[] = [];
  for (const r of records) {
    if (ids.has(r.id)) problems.push(`memory id "${r.id}" appears twice`);
    ids.add(r.id);
  }
  const qids = new Set<string>();
  for (const q of questions) {
    if (qids.has(q.id)) problems.push(`question id "${q.id}" appears twice`);
    qids.add(q.id);
  }
  problems.push(...checkGoldenAgainstMemories(questions, records));

  const byId = new Map(records.map((r) => [r.id, r]));
  const users = new Map<string, number>();
  for (const r of records) count(users, r.userId);
  const categories = new Map<string, number>();
  const langs = new Map<string, number>();
  for (const q of questions) {
    count(categories, q.category);
    count(langs, q.lang ?? "-");
  }
  const sentenceCounts = records.map((r) => sentenceSpans(r.content).length).sort((a, b) => a - b);
  const positions = new Map<string, number>();
  let ambiguous = 0;
  for (const q of questions) {
    for (const piece of q.answers) {
      let best = 0;
      for (const id of q.expectedIds) {
        const r = byId.get(id);
        if (r === undefined) continue;
        for (const alt of alternativesOf(piece)) {
          const at = sentenceOf(r.content, alt);
          if (at !== 0 && (best === 0 || at < best)) best = at;
        }
      }
      count(
        positions,
        best === 0
          ? "not in evidence"
          : best < 0
            ? "across sentences"
            : best >= 3
              ? "3rd+"
              : `${best === 1 ? "1st" : "2nd"}`,
      );
      // An answer that also appears in memories that are not evidence measures less than it seems.
      const norm = alternativesOf(piece).map(normalizeForMatch);
      const elsewhere = records.filter(
        (r) =>
          r.userId === q.userId &&
          !q.expectedIds.includes(r.id) &&
          norm.some((a) => normalizeForMatch(r.content).includes(a)),
      ).length;
      if (elsewhere > 0) ambiguous++;
    }
  }
  const median = sentenceCounts[Math.floor(sentenceCounts.length / 2)] ?? 0;
  const long = sentenceCounts.filter((n) => n >= 4).length;
  console.log(`memories: ${records.length}; questions: ${questions.length}`);
  show("memories per user", users);
  show("questions per category", categories);
  show("questions per language", langs);
  console.log(
    `sentences per memory: median ${median}, max ${sentenceCounts[sentenceCounts.length - 1] ?? 0}, ${long} of ${records.length} with 4 or more`,
  );
  show("answer's sentence in its evidence memory", positions);
  console.log(`answers also found in non-evidence memories of the same user: ${ambiguous}`);

  // How often the embedded backend finds the evidence at all (hybrid search, the 40 best): the ceiling of
  // every policy. Reported, not required: real users ask in words their memories do not always use.
  const backend = createLocalBackendFromRecords(records);
  const signal = new AbortController().signal;
  const ranks: number[] = [];
  let found = 0;
  let wanted = 0;
  for (const q of questions) {
    if (q.expectedIds.length === 0) continue;
    const results = await backend.search({
      userId: q.userId,
      query: q.query,
      limit: 40,
      searchType: "hybrid",
      signal,
    } as Parameters<typeof backend.search>[0]);
    const at = results.map((c) => c.id);
    for (const id of q.expectedIds) {
      wanted++;
      const rank = at.indexOf(id);
      if (rank >= 0) {
        found++;
        ranks.push(rank + 1);
      }
    }
  }
  ranks.sort((a, b) => a - b);
  const within = (n: number) => ranks.filter((r) => r <= n).length;
  console.log(
    `evidence the local backend returns (hybrid): top 8 ${within(8)}, top 20 ${within(20)}, top 40 ${found} of ${wanted}`,
  );
  if (problems.length > 0) {
    console.log(`\n${problems.length} problem(s):`);
    for (const p of problems) console.log(`- ${p}`);
    return 1;
  }
  console.log("ok");
  return 0;
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    console.error(err instanceof Error ? err.message : String(err));
    process.exitCode = 2;
  },
);
