import { readdir, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { createLocalBackend, LocalBackend } from "../backends/local";
import { createOpenMemoryBackend } from "../backends/openmemory";
import type { Backend } from "../backends/types";
import { createZepBackend } from "../backends/zep";
import { ZEP_MAX_LIMIT } from "../backends/zep/map";
import { type Env, EnvError, parseEnv } from "../config/env";
import { formatProblem } from "../config/yaml";
import {
  fetchCandidates,
  loadRecordedFile,
  matchRecorded,
  type RecordedCandidates,
  writeRecordedFile,
} from "../eval/candidates";
import { svgChart } from "../eval/chart/svg";
import { loadGolden, loadMemories } from "../eval/files";
import { type GoldenQuestion, GoldenSetError } from "../eval/golden";
import { checkGates, type Gate } from "../eval/report";
import { evalText } from "../eval/report-text";
import {
  diffPolicies,
  evaluatePolicy,
  fetchModeOf,
  type PolicyReport,
  type PolicyUnderTest,
  type RecordedSets,
} from "../eval/run";
import { ExpansionSearches } from "../eval/searches";
import { type BudgetedPolicy, budgetGrid, parseBudgetList, type Sweep, sweepPolicies } from "../eval/sweep";
import { versusOf } from "../eval/versus";
import { compilePolicyFile } from "../policy/compile";
import { BACKEND_NAMES, type BackendName, type Policy, SEARCH_TYPES } from "../policy/schema";
import { type CliIo, EXIT_FAILURE, EXIT_INVALID, EXIT_OK } from "./io";

export interface EvalOptions {
  golden: string;
  policy: string[];
  candidates?: string;
  backend?: string;
  data?: string;
  record?: string;
  limit?: string;
  searchType?: string;
  concurrency?: string;
  timeoutMs?: string;
  json?: boolean;
  diff?: string | boolean;
  diffLimit?: string;
  minAnswerKept?: string;
  minEvidenceRecall?: string;
  maxMeanTokens?: string;
  budgets?: string;
  chart?: string;
}

/** Progress of a long run (stderr, only on a terminal). */
export type Progress = (phase: string, done: number, total: number) => void;

/** A bad argument: one line naming the option, exit 2. */
class UsageError extends Error {}

const POLICY_FILE = /\.(ya?ml|json)$/i;

/** `--policy` takes files and directories (every .yaml/.yml/.json in it, by name). */
async function policyFiles(args: readonly string[]): Promise<string[]> {
  const files: string[] = [];
  for (const arg of args) {
    const info = await stat(arg).catch(() => undefined);
    if (info === undefined) throw new UsageError(`--policy: ${arg}: no such file or directory`);
    if (!info.isDirectory()) {
      files.push(arg);
      continue;
    }
    const names = (await readdir(arg)).filter((n) => POLICY_FILE.test(n)).sort();
    if (names.length === 0) throw new UsageError(`--policy: ${arg}: no policy files in this directory`);
    files.push(...names.map((n) => join(arg, n)));
  }
  return files;
}

function ratioOption(name: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value.endsWith("%") ? Number(value.slice(0, -1)) / 100 : value);
  if (!Number.isFinite(n) || n < 0 || n > 1) {
    throw new UsageError(
      `${name}: must be a share from 0 to 1 (or 0% to 100%) (got ${JSON.stringify(value)})`,
    );
  }
  return n;
}

function intOption(name: string, value: string | undefined, min: number, max: number): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n < min || n > max) {
    throw new UsageError(`${name}: must be an integer from ${min} to ${max} (got ${JSON.stringify(value)})`);
  }
  return n;
}

function gatesOf(opts: EvalOptions): Gate[] {
  const gates: Gate[] = [];
  const answer = ratioOption("--min-answer-kept", opts.minAnswerKept);
  if (answer !== undefined) gates.push({ metric: "answerKept", kind: "min", threshold: answer });
  const recall = ratioOption("--min-evidence-recall", opts.minEvidenceRecall);
  if (recall !== undefined) gates.push({ metric: "evidenceRecall", kind: "min", threshold: recall });
  const tokens = intOption("--max-mean-tokens", opts.maxMeanTokens, 0, 1_000_000);
  if (tokens !== undefined) gates.push({ metric: "tokensMean", kind: "max", threshold: tokens });
  return gates;
}

async function compileAll(files: readonly string[]): Promise<PolicyUnderTest[]> {
  const compiled = [];
  for (const file of files) {
    const loaded = await compilePolicyFile(file);
    if (!loaded.ok) {
      const first = loaded.problems[0];
      throw new UsageError(first ? formatProblem(first) : `${file}: invalid policy`);
    }
    compiled.push({ file, compiled: loaded.compiled });
  }
  const names = compiled.map((c) => c.compiled.policy.name);
  return compiled.map((c) => {
    const { name } = c.compiled.policy;
    const shared = names.filter((n) => n === name).length > 1;
    return { label: shared ? `${name} (${c.file})` : name, compiled: c.compiled };
  });
}

/** `--data` is a file or a directory of `*.memories.jsonl` (one store of them all). */
async function localBackend(data: string | undefined, env: Env): Promise<Backend> {
  if (data === undefined) return createLocalBackend({ dataFile: env.MEMGATE_LOCAL_DATA });
  return new LocalBackend((await loadMemories(data)).records);
}

function backendFor(name: BackendName, env: Env, dataFile: string | undefined): Promise<Backend> | Backend {
  switch (name) {
    case "local":
      return localBackend(dataFile, env);
    case "zep":
      if (env.ZEP_API_KEY === undefined) throw new UsageError("--backend zep: ZEP_API_KEY is not set");
      return createZepBackend({ apiKey: env.ZEP_API_KEY, baseUrl: env.ZEP_BASE_URL });
    case "openmemory":
      if (env.OPENMEMORY_URL === undefined)
        throw new UsageError("--backend openmemory: OPENMEMORY_URL is not set");
      return createOpenMemoryBackend({
        baseUrl: env.OPENMEMORY_URL,
        apiKey: env.OPENMEMORY_API_KEY,
        userScoping: env.OPENMEMORY_USER_SCOPING,
      });
  }
}

interface Sourced {
  recorded: RecordedCandidates[] | RecordedSets;
  source: string;
  /** The expansion round's second searches: from the recorded file, or the live backend (src/eval/searches.ts). */
  searches: ExpansionSearches;
  /** After the run: writes `--record` (with the expansion searches it sent) and closes the backend. */
  finish: () => Promise<void>;
}

async function candidatesFor(
  opts: EvalOptions,
  questions: readonly GoldenQuestion[],
  subjects: readonly PolicyUnderTest[],
  progress: Progress | undefined,
): Promise<Sourced> {
  if (opts.candidates !== undefined) {
    if (opts.backend !== undefined || opts.data !== undefined) {
      throw new UsageError(
        "--candidates: give either recorded candidates or a backend to fetch from, not both",
      );
    }
    const recorded = matchRecorded(questions, await loadRecordedFile(opts.candidates), opts.candidates);
    return {
      recorded,
      source: `recorded in ${opts.candidates}`,
      searches: new ExpansionSearches(),
      finish: async () => undefined,
    };
  }
  let env: Env;
  try {
    env = parseEnv(process.env);
  } catch (err) {
    if (err instanceof EnvError) throw new UsageError(err.message);
    throw err;
  }
  const name = (opts.backend ?? env.MEMGATE_BACKEND) as BackendName;
  if (!BACKEND_NAMES.includes(name)) {
    throw new UsageError(
      `--backend: must be one of ${BACKEND_NAMES.join(", ")} (got ${JSON.stringify(name)})`,
    );
  }
  if (opts.data !== undefined && name !== "local") throw new UsageError("--data: only for --backend local");
  const first = subjects[0]?.compiled.policy;
  if (first === undefined) throw new UsageError("--policy: at least one policy is needed");
  const wanted = Math.max(
    ...subjects.map(({ compiled: { policy } }) => {
      const take = policy.retrieval.topK * policy.retrieval.overfetch;
      return policy.sufficiency.expand ? take * policy.sufficiency.expandFactor : take;
    }),
  );
  const limit =
    intOption("--limit", opts.limit, 1, 1000) ?? (name === "zep" ? Math.min(wanted, ZEP_MAX_LIMIT) : wanted);
  const searchType = opts.searchType ?? first.retrieval.searchType;
  if (!(SEARCH_TYPES as readonly string[]).includes(searchType)) {
    throw new UsageError(
      `--search-type: must be one of ${SEARCH_TYPES.join(", ")} (got ${JSON.stringify(searchType)})`,
    );
  }
  const backend = await backendFor(name, env, opts.data);
  const timeoutMs = intOption("--timeout-ms", opts.timeoutMs, 50, 120_000) ?? 10_000;
  try {
    // Each way of fetching (fetchModeOf: without replies, or with them by `retrieval.questionAt`; with or without
    // `retrieval.following`) gets the
    // candidates its own fetch would give, so no policy is scored on another policy's reply turns.
    const modes = new Map<string, Policy>();
    for (const { compiled } of subjects) {
      const mode = fetchModeOf(compiled.policy);
      if (!modes.has(mode)) modes.set(mode, compiled.policy);
    }
    const fetched = new Map<string, RecordedCandidates[]>();
    // The backend settings each line was fetched with: its expansion searches use the same.
    const settings = new Map<RecordedCandidates, Policy>();
    for (const [mode, own] of modes) {
      const { replies, questionAt, following } = own.retrieval;
      const policy = { ...first, retrieval: { ...first.retrieval, replies, questionAt, following } };
      const lines = await fetchCandidates(questions, {
        backend,
        limit,
        searchType: searchType as (typeof SEARCH_TYPES)[number],
        policy,
        timeoutMs,
        concurrency: intOption("--concurrency", opts.concurrency, 1, 64) ?? 4,
        onProgress: progress
          ? (done, total) =>
              progress(modes.size > 1 ? `fetching candidates (${mode})` : "fetching candidates", done, total)
          : undefined,
      });
      for (const line of lines) settings.set(line, policy);
      fetched.set(mode, lines);
    }
    const only = fetched.size === 1 ? [...fetched.values()][0] : undefined;
    const recorded: RecordedCandidates[] | RecordedSets = only ?? { byMode: fetched };
    // A recorded file holds one fetch: that of the first policy taking replies, else the first policy's.
    const kept = [...modes.keys()].find((m) => m !== "plain") ?? fetchModeOf(first);
    // The expansion round's searches with another query go to the same backend, as the line's own search did.
    const searches = new ExpansionSearches((line, query, n) =>
      backend.search({
        userId: line.userId,
        query,
        limit: n,
        searchType: line.searchType,
        policy: settings.get(line) ?? first,
        signal: AbortSignal.timeout(timeoutMs),
      }),
    );
    const where = name === "local" ? ` ${opts.data ?? env.MEMGATE_LOCAL_DATA}` : "";
    return {
      recorded,
      source: `fetched from ${name}${where} (${searchType}, ${limit} per question)${opts.record ? `, recorded in ${opts.record}` : ""}`,
      searches,
      finish: async () => {
        try {
          // A recorded file holds one fetch (`kept`) and its expansion searches.
          if (opts.record !== undefined)
            await writeRecordedFile(opts.record, await searches.recordedLines(fetched.get(kept) ?? []));
        } finally {
          await backend.close?.().catch(() => undefined);
        }
      },
    };
  } catch (err) {
    await backend.close?.().catch(() => undefined);
    throw err;
  }
}

/** `--budgets 300,450,800,1500`: every policy at each budget, each checked as a policy's `retrieval.maxTokens`. */
function budgetsOf(opts: EvalOptions, subjects: readonly PolicyUnderTest[]): BudgetedPolicy[] | undefined {
  if (opts.budgets === undefined) {
    if (opts.chart !== undefined) throw new UsageError("--chart: needs --budgets (the points to draw)");
    return undefined;
  }
  const grid = budgetGrid(subjects, parseBudgetList(opts.budgets));
  if ("problem" in grid) throw new UsageError(`--budgets: ${grid.problem}`);
  return grid;
}

async function writeChart(file: string, sweep: Sweep): Promise<void> {
  try {
    await writeFile(file, svgChart(sweep), "utf8");
  } catch (err) {
    throw new UsageError(`--chart: cannot write ${file} (${(err as NodeJS.ErrnoException).code ?? "error"})`);
  }
}

/**
 * `memgate eval`: measure what one or more policies keep of a golden set's evidence and answers, on identical
 * candidates (see src/eval/). Exit 0; 1 when a policy misses a threshold given on the command line; 2 on bad
 * input (golden set, policy, recorded file, option) with a one-line reason.
 */
export async function evalCommand(opts: EvalOptions, io: CliIo, progress?: Progress): Promise<number> {
  try {
    const gates = gatesOf(opts);
    const diffLimit = intOption("--diff-limit", opts.diffLimit, 0, 100_000) ?? 10;
    const { questions } = await loadGolden(opts.golden);
    const subjects = await compileAll(await policyFiles(opts.policy));
    const grid = budgetsOf(opts, subjects);
    const { recorded, source, searches, finish } = await candidatesFor(opts, questions, subjects, progress);

    const total = questions.length * (subjects.length + (grid?.length ?? 0));
    let done = 0;
    const shaping = {
      search: searches.search,
      ...(progress ? { onQuestion: () => progress("shaping", ++done, total) } : {}),
    };
    let reports: PolicyReport[];
    let sweep: Sweep | undefined;
    try {
      reports = [];
      for (const s of subjects) reports.push(await evaluatePolicy(questions, recorded, s, shaping));
      sweep = grid === undefined ? undefined : await sweepPolicies(questions, recorded, grid, shaping);
    } finally {
      await finish();
    }

    let pair: [PolicyReport, PolicyReport] | undefined;
    if (opts.diff !== undefined && opts.diff !== false) {
      const wanted = typeof opts.diff === "string" ? opts.diff.split(",").map((s) => s.trim()) : [];
      const find = (label: string) => {
        const r = reports.find((x) => x.label === label || x.policy.name === label);
        if (r === undefined) throw new UsageError(`--diff: no policy named "${label}" in this run`);
        return r;
      };
      const [a, b] = wanted.length === 2 ? [find(wanted[0] ?? ""), find(wanted[1] ?? "")] : reports;
      if (wanted.length !== 0 && wanted.length !== 2)
        throw new UsageError("--diff: name two policies, e.g. --diff default,seed-000");
      if (a === undefined || b === undefined) throw new UsageError("--diff: needs two policies");
      pair = [a, b];
    }
    const diffs = pair ? diffPolicies(questions, pair[0], pair[1]) : undefined;
    if (sweep !== undefined && opts.chart !== undefined) await writeChart(opts.chart, sweep);
    const gateResults = checkGates(reports, gates);
    // Questions whose fetch failed, in any of the run's fetch modes.
    const fetches = Array.isArray(recorded) ? [recorded] : [...recorded.byMode.values()];
    const failedFetches = questions.filter((_, i) =>
      fetches.some((lines) => lines[i]?.error !== undefined),
    ).length;
    const users = new Set(questions.map((q) => q.userId)).size;

    const versus = versusOf(reports);
    if (opts.json === true) {
      io.out(
        JSON.stringify(
          {
            questions: questions.length,
            users,
            candidates: { source, failed: failedFetches },
            policies: reports,
            ...(versus ? { versus } : {}),
            ...(sweep ? { sweep } : {}),
            ...(diffs && pair ? { diff: { a: pair[0].label, b: pair[1].label, questions: diffs } } : {}),
            gates: gateResults,
          },
          null,
          2,
        ),
      );
    } else {
      io.out(
        evalText({
          questions: questions.length,
          users,
          source,
          failedFetches,
          reports,
          sweep,
          chart: opts.chart,
          diff: diffs && pair ? { pair, diffs, limit: diffLimit } : undefined,
          gates: gateResults,
          searches: searches.sent,
        }),
      );
    }
    return gateResults.every((g) => g.ok) ? EXIT_OK : EXIT_FAILURE;
  } catch (err) {
    if (err instanceof UsageError || err instanceof GoldenSetError) {
      io.err(err.message);
      return EXIT_INVALID;
    }
    if (err instanceof Error && err.name === "LocalDataError") {
      io.err(err.message);
      return EXIT_INVALID;
    }
    throw err;
  }
}
