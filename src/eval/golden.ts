import { readFile } from "node:fs/promises";
import { z } from "zod";
import type { MemoryRecord } from "../backends/local/schema";
import { ID_PATTERN } from "../retrieval/request";

/**
 * A golden set for `memgate eval`: one JSON object per line (blank lines and lines starting with `//` or `#`
 * are skipped, as in the local backend's data files).
 *
 *   {"id": "q-017", "userId": "ana", "query": "what coffee do I usually order?",
 *    "category": "single-hop", "lang": "en",
 *    "expectedIds": ["ana-001"], "answers": ["oat milk flat white"]}
 *
 * - `expectedIds`: the memories that hold the evidence (evidence recall = how many of them the policy keeps).
 * - `answers`: text the shaped context must still contain for the chat to answer. Every element is required;
 *   an element that is a list is a set of alternatives (`[["2 p.m.", "14:00"]]`). Compared case-, width- and
 *   whitespace-insensitively (see `normalizeForMatch`) against the kept memories' `content`, never against the
 *   prompt's timestamps or confidence figures.
 * - At least one of the two is required. `category` and `lang` group the report (default `all`, `-`).
 */
/**
 * The category of questions nothing in memory answers: no `expectedIds`, no `answers`. The report counts how
 * often the sufficiency check calls them `insufficient` instead of answer kept.
 */
export const UNANSWERABLE = "unanswerable";

const answerPiece = z.union([z.string().min(1).max(500), z.array(z.string().min(1).max(500)).min(1).max(10)]);

export const goldenQuestionSchema = z
  .strictObject({
    id: z.string().min(1).max(128),
    userId: z.string().regex(ID_PATTERN, "1–128 characters of A-Z a-z 0-9 _ . : @ -"),
    query: z
      .string()
      .max(4000)
      .refine((s) => s.trim().length > 0, "must not be blank"),
    category: z
      .string()
      .regex(/^[a-z0-9][a-z0-9_-]{0,39}$/, "1–40 of a-z 0-9 _ -")
      .default("all"),
    lang: z
      .string()
      .regex(/^[a-z]{2,3}(-[A-Za-z0-9]{2,8})?$/, "a language tag such as en or zh-Hans")
      .optional(),
    sessionId: z.string().regex(ID_PATTERN).optional(),
    expectedIds: z.array(z.string().min(1).max(256)).max(50).default([]),
    answers: z.array(answerPiece).max(20).default([]),
    /**
     * The time of the chat turn that asks (ISO 8601 with a zone): relative phrases ("last month", "two weeks
     * ago") are resolved against it, as /v1/retrieve resolves them against its `turnTime`. Default: the newest
     * of the question's recorded candidates (src/eval/turn-time.ts), so a run never depends on the host clock.
     */
    asOf: z.iso.datetime({ offset: true }).optional(),
  })
  .refine((q) => q.category === UNANSWERABLE || q.expectedIds.length > 0 || q.answers.length > 0, {
    error: "needs expectedIds or answers (or both)",
  })
  .refine((q) => q.category !== UNANSWERABLE || (q.expectedIds.length === 0 && q.answers.length === 0), {
    error: "an unanswerable question has no expectedIds and no answers",
  });
export type GoldenQuestion = z.output<typeof goldenQuestionSchema>;

/** A golden set that cannot be read or does not validate. The message names the file, line and field. */
export class GoldenSetError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "GoldenSetError";
  }
}

function formatZodPath(path: readonly PropertyKey[]): string {
  return path
    .map((seg, i) => (typeof seg === "number" ? `[${seg}]` : `${i === 0 ? "" : "."}${String(seg)}`))
    .join("");
}

/** Non-blank, non-comment lines with their 1-based numbers. */
export function* jsonlLines(text: string): Generator<{ line: number; text: string }> {
  const lines = text.replace(/^\uFEFF/, "").split(/\r?\n/);
  for (let i = 0; i < lines.length; i++) {
    const t = (lines[i] ?? "").trim();
    if (t === "" || t.startsWith("//") || t.startsWith("#")) continue;
    yield { line: i + 1, text: t };
  }
}

/** Each non-comment line of JSONL `text` parsed and validated by `schema`; errors name `source:line: field`. */
export function* parseJsonl<T>(
  text: string,
  source: string,
  schema: z.ZodType<T>,
): Generator<{ line: number; data: T }> {
  for (const { line, text: t } of jsonlLines(text)) {
    let raw: unknown;
    try {
      raw = JSON.parse(t);
    } catch {
      throw new GoldenSetError(`${source}:${line}: invalid JSON`);
    }
    const parsed = schema.safeParse(raw);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      const path = issue ? formatZodPath(issue.path) : "";
      throw new GoldenSetError(`${source}:${line}: ${path ? `${path}: ` : ""}${issue?.message ?? "invalid"}`);
    }
    yield { line, data: parsed.data };
  }
}

/** A file's text, or a GoldenSetError naming the file and what it was to be (`the golden set`, …). */
export async function readEvalFile(file: string, what: string): Promise<string> {
  try {
    return await readFile(file, "utf8");
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? "unreadable";
    throw new GoldenSetError(`${file}: cannot read ${what} (${code})`);
  }
}

export function parseGoldenJsonl(text: string, source: string): GoldenQuestion[] {
  const out: GoldenQuestion[] = [];
  const seen = new Map<string, number>();
  for (const { line, data } of parseJsonl(text, source, goldenQuestionSchema)) {
    const first = seen.get(data.id);
    if (first !== undefined) {
      throw new GoldenSetError(`${source}:${line}: id: duplicate id "${data.id}" (first at line ${first})`);
    }
    seen.set(data.id, line);
    out.push(data);
  }
  if (out.length === 0) throw new GoldenSetError(`${source}: no questions`);
  return out;
}

export async function loadGoldenFile(file: string): Promise<GoldenQuestion[]> {
  return parseGoldenJsonl(await readEvalFile(file, "the golden set"), file);
}
/**
 * The form answers are compared in: NFKC (full-width → ASCII), lower case, curly quotes and apostrophes as
 * straight ones, every run of whitespace one space. Locale-free.
 */
export function normalizeForMatch(text: string): string {
  return text
    .normalize("NFKC")
    .toLowerCase()
    .replace(/[‘’‚‛′]/g, "'")
    .replace(/[“”„‟″]/g, '"')
    .replace(/\s+/g, " ")
    .trim();
}

/**
 * What an answer is looked for in, for one memory: its content and the calendar date it was said on
 * (`YYYY-MM-DD`, as the system prompt's line for it begins), normalized. A temporal answer ("when did I start
 * pottery?") is often the date of the turn that says "I had my first class tonight", not words in it.
 */
export function answerText(content: string, timestamp: string): string {
  return `${normalizeForMatch(content)}\n${timestamp.slice(0, 10)}`;
}

/** The alternatives of one required answer piece. */
export function alternativesOf(piece: string | readonly string[]): readonly string[] {
  return typeof piece === "string" ? [piece] : piece;
}

/**
 * Problems of a golden set against the memories it was written for (the local backend's records): unknown
 * ids, evidence of another user, answers that no evidence memory contains. Empty when all is well.
 */
export function checkGoldenAgainstMemories(
  questions: readonly GoldenQuestion[],
  records: readonly MemoryRecord[],
): string[] {
  const byId = new Map(records.map((r) => [r.id, r]));
  const problems: string[] = [];
  for (const q of questions) {
    const evidence: MemoryRecord[] = [];
    for (const id of q.expectedIds) {
      const r = byId.get(id);
      if (r === undefined) problems.push(`${q.id}: expectedIds: no memory "${id}"`);
      else if (r.userId !== q.userId)
        problems.push(`${q.id}: expectedIds: "${id}" belongs to ${r.userId}, not ${q.userId}`);
      else evidence.push(r);
    }
    const pool = evidence.length > 0 ? evidence : records.filter((r) => r.userId === q.userId);
    const texts = pool.map((r) => answerText(r.content, r.timestamp));
    q.answers.forEach((piece, i) => {
      const found = alternativesOf(piece).some((alt) => {
        const a = normalizeForMatch(alt);
        return texts.some((t) => t.includes(a));
      });
      if (!found) {
        problems.push(
          `${q.id}: answers[${i}]: not found in ${evidence.length > 0 ? "the expected memories" : "any memory of the user"}`,
        );
      }
    });
  }
  return problems;
}
