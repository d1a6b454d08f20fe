/**
 * Why answers are lost: for every answerable golden-set question whose answer a policy does not keep, where the
 * memory holding it was left — `npx tsx scripts/eval-failures.ts --candidates recorded.jsonl --golden
 * eval/golden/long --policy policies/default.yaml [--policy …] [--json] [--examples n]`.
 *
 * The candidates are the ones `memgate eval --record` saved (fetch once: `node bin/memgate.js eval --golden
 * eval/golden/long --backend local --data eval/golden/long --policy policies/default.yaml --record
 * /tmp/cands.jsonl`); each question is shaped exactly as `memgate eval` shapes it (src/eval/run.ts: the policy's
 * first topK × overfetch candidates, its turn time, the expansion round — a round searching with the missing words
 * (`sufficiency.expandWith`) is answered from the file's `expansions`, so record with that policy) with the explain
 * trace on, and each answer
 * piece's best holding candidate is followed through the stages. A question falls in the first class that fits:
 *
 * - `partial`   (e): several answer pieces (multi-hop) and some of them kept, not all;
 * - `clipped`   (c): a memory holding the missing piece was kept, but the sentence holding it was clipped out;
 * - `budget`    (d): a memory holding it was selected (or in the fill reserve) and the token budget left it out;
 * - `ranked`    (b): it was among the candidates, ranked below what was selected (or dropped by dedup/threshold);
 * - `notFetched`(a): no candidate the policy looked at holds it — backend recall. `inRecorded`: a larger fetch
 *   (the recorded list, `limit` of --record) would have had it; `expansion`: the expansion round ran.
 *
 * The same fates for the evidence ids (`expectedIds` not kept) are printed beside, per category.
 */
import { loadRecordedFile, matchRecorded, type RecordedCandidates } from "../src/eval/candidates";
import { loadGolden } from "../src/eval/files";
import {
  alternativesOf,
  answerText,
  type GoldenQuestion,
  normalizeForMatch,
  UNANSWERABLE,
} from "../src/eval/golden";
import { shapeQuestion } from "../src/eval/run";
import type { Candidate, StageTrace } from "../src/pipeline/types";
import { compilePolicyFile } from "../src/policy/compile";

const CLASSES = ["partial", "clipped", "budget", "ranked", "notFetched"] as const;
type Fate = "kept" | (typeof CLASSES)[number];
const ORDER: Fate[] = ["kept", "partial", "clipped", "budget", "ranked", "notFetched"];

function arg(name: string): string[] {
  const out: string[] = [];
  const argv = process.argv.slice(2);
  for (let i = 0; i < argv.length; i++)
    if (argv[i] === name && argv[i + 1] !== undefined) out.push(argv[++i] as string);
  return out;
}

interface Shaped {
  candidates: Candidate[];
  kept: Map<string, string>;
  trace: StageTrace[];
  expanded: boolean;
}

async function shape(
  q: GoldenQuestion,
  recorded: RecordedCandidates,
  compiled: Awaited<ReturnType<typeof load>>,
): Promise<Shaped> {
  const { retrieval } = compiled.policy;
  // An expansion round searching with the missing words is answered from the recorded file's `expansions`
  // (record with the policy: memgate eval --record).
  const { candidates, result, expanded } = await shapeQuestion(
    q,
    recorded,
    compiled,
    retrieval.topK * retrieval.overfetch,
    { explain: true },
  );
  return {
    candidates,
    kept: new Map(result.memories.map((m) => [m.id, m.content])),
    trace: result.trace,
    expanded,
  };
}

async function load(file: string) {
  const r = await compilePolicyFile(file);
  if (!r.ok) throw new Error(`${file}: ${r.problems.map((p) => p.message).join("; ")}`);
  return r.compiled;
}

/** Where one memory (by id) ended up in a shaped run. */
function fateOfId(id: string, shaped: Shaped, holds: (content: string, timestamp: string) => boolean): Fate {
  const cand = shaped.candidates.find((c) => c.id === id);
  if (cand === undefined) return "notFetched";
  const content = shaped.kept.get(id);
  if (content !== undefined) return holds(content, cand.timestamp) ? "kept" : "clipped";
  for (const t of shaped.trace) {
    const change = t.changes.find((c) => c.id === id);
    if (change === undefined) continue;
    if (t.stage === "token_budget") return "budget";
    return "ranked";
  }
  return "ranked";
}

const best = (fates: readonly Fate[]): Fate =>
  fates.reduce<Fate>((a, b) => (ORDER.indexOf(b) < ORDER.indexOf(a) ? b : a), "notFetched");

interface Row {
  id: string;
  category: string;
  query: string;
  cls: Fate;
  inRecorded: boolean;
  expanded: boolean;
  rank: number | null;
}

async function main(): Promise<void> {
  const [candFile] = arg("--candidates");
  const [golden = "eval/golden/long"] = arg("--golden");
  const policies = arg("--policy");
  const examples = Number(arg("--examples")[0] ?? 0);
  if (candFile === undefined || policies.length === 0) {
    console.error(
      "usage: eval-failures --candidates recorded.jsonl [--golden dir] --policy file [--policy …] [--json]",
    );
    process.exit(2);
  }
  const { questions } = await loadGolden(golden);
  const recorded = matchRecorded(questions, await loadRecordedFile(candFile), candFile);
  const json: Record<string, unknown> = {};
  for (const file of policies) {
    const compiled = await load(file);
    const rows: Row[] = [];
    const evidence = new Map<string, Map<Fate, number>>();
    for (const [i, q] of questions.entries()) {
      if (q.category === UNANSWERABLE) continue;
      const rec = recorded[i] as RecordedCandidates;
      const shaped = await shape(q, rec, compiled);
      const ranking = shaped.trace.find((t) => t.stage === "rank")?.ranking;
      // Evidence ids: each id's fate.
      const ev = evidence.get(q.category) ?? new Map<Fate, number>();
      evidence.set(q.category, ev);
      for (const id of q.expectedIds) {
        const f = fateOfId(id, shaped, () => true);
        ev.set(f, (ev.get(f) ?? 0) + 1);
      }
      if (q.answers.length === 0) continue;
      const pieceFates = q.answers.map((piece) => {
        const alts = alternativesOf(piece).map(normalizeForMatch);
        const holds = (content: string, ts: string) => {
          const t = answerText(content, ts);
          return alts.some((a) => t.includes(a));
        };
        const holders = shaped.candidates.filter((c) => holds(c.content, c.timestamp));
        if (holders.length === 0) return { fate: "notFetched" as Fate, rank: null, holders: [] as string[] };
        const fates = holders.map((c) => fateOfId(c.id, shaped, holds));
        const ranks = holders
          .map((c) => ranking?.find((r) => r.id === c.id)?.rank)
          .filter((r): r is number => r !== undefined);
        return {
          fate: best(fates),
          rank: ranks.length === 0 ? null : Math.min(...ranks),
          holders: holders.map((c) => c.id),
        };
      });
      if (pieceFates.every((p) => p.fate === "kept")) continue;
      const missing = pieceFates.filter((p) => p.fate !== "kept");
      const cls: Fate = missing.length < pieceFates.length ? "partial" : best(missing.map((p) => p.fate));
      const inRecorded =
        cls === "notFetched" &&
        q.answers.every((piece) => {
          const alts = alternativesOf(piece).map(normalizeForMatch);
          return rec.results.some((c) => alts.some((a) => answerText(c.content, c.timestamp).includes(a)));
        });
      const ranks = missing.map((p) => p.rank).filter((r): r is number => r !== null);
      rows.push({
        id: q.id,
        category: q.category,
        query: q.query,
        cls,
        inRecorded,
        expanded: shaped.expanded,
        rank: ranks.length === 0 ? null : Math.min(...ranks),
      });
    }
    const answerable = questions.filter((q) => q.category !== UNANSWERABLE && q.answers.length > 0);
    const cats = [...new Set(answerable.map((q) => q.category))].sort();
    const label = compiled.policy.name;
    if (arg("--json").length > 0 || process.argv.includes("--json")) {
      json[label] = {
        rows,
        evidence: Object.fromEntries([...evidence].map(([k, v]) => [k, Object.fromEntries(v)])),
      };
      continue;
    }
    console.log(`\n${label} (${file}): answers lost, by where the memory holding the answer was left`);
    const head = ["category", "questions", "lost", ...CLASSES, "(a) in recorded", "(b) rank ≤ 40"];
    console.log(head.join("\t"));
    for (const cat of [...cats, "all"]) {
      const n = answerable.filter((q) => cat === "all" || q.category === cat).length;
      const mine = rows.filter((r) => cat === "all" || r.category === cat);
      const count = (c: Fate) => mine.filter((r) => r.cls === c).length;
      const pct = (x: number) => `${x} (${((100 * x) / n).toFixed(1)} %)`;
      console.log(
        [
          cat,
          n,
          pct(mine.length),
          ...CLASSES.map((c) => pct(count(c))),
          mine.filter((r) => r.cls === "notFetched" && r.inRecorded).length,
          mine.filter((r) => r.cls === "ranked" && r.rank !== null && r.rank <= 40).length,
        ].join("\t"),
      );
    }
    console.log(`evidence ids, by fate (kept / budget / ranked / notFetched)`);
    for (const cat of cats) {
      const ev = evidence.get(cat) ?? new Map();
      const total = [...ev.values()].reduce((a, b) => a + b, 0);
      console.log(
        [
          cat,
          total,
          ...["kept", "budget", "ranked", "notFetched"].map((f) => `${f} ${ev.get(f as Fate) ?? 0}`),
        ].join("\t"),
      );
    }
    for (const c of CLASSES) {
      const ex = rows.filter((r) => r.cls === c).slice(0, examples);
      for (const r of ex) console.log(`  ${c}\t${r.id}\t${r.category}\trank ${r.rank ?? "-"}\t${r.query}`);
    }
  }
  if (Object.keys(json).length > 0) console.log(JSON.stringify(json));
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
