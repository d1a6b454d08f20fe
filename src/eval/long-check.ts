import { join } from "node:path";
import { type MemoryRecord, memoryRecordSchema } from "../backends/local/schema";
import { sentenceSpans } from "../pipeline/text/sentences";
import { getTokenizer } from "../pipeline/tokenizers";
import {
  alternativesOf,
  answerText,
  checkGoldenAgainstMemories,
  type GoldenQuestion,
  GoldenSetError,
  goldenQuestionSchema,
  normalizeForMatch,
  parseJsonl,
  UNANSWERABLE,
} from "./golden";

/**
 * The rules the long-conversation golden set (eval/golden/long/, issue "Context that beats the backend") is
 * written to, per user: a conversation of two speakers (`Speaker: text`, 10–80 o200k tokens a turn, most turns
 * several sentences) over at least 15 sessions spanning months, and at least 100 questions in five categories
 * whose evidence and answers check against it. `scripts/check-golden-long.ts` prints them;
 * test/eval/golden-long.test.ts keeps them.
 */

export const LONG_DIR = join(__dirname, "..", "..", "eval", "golden", "long");

export const LONG_CATEGORIES = ["single-hop", "multi-hop", "temporal", "open-domain", UNANSWERABLE] as const;
/** At least this many questions of each category per user. */
export const MIN_PER_CATEGORY: Record<(typeof LONG_CATEGORIES)[number], number> = {
  "single-hop": 25,
  "multi-hop": 15,
  temporal: 15,
  "open-domain": 8,
  unanswerable: 8,
};
export const MIN_TURNS = 300;
export const MIN_SESSIONS = 15;
export const MIN_SPAN_DAYS = 90;
export const MIN_QUESTIONS = 100;
export const TURN_TOKENS = { min: 10, max: 80 } as const;
/** An answer alternative longer than this many words is not a short span. */
export const MAX_ANSWER_WORDS = 10;

const SPEAKER = /^([^:\n]{1,40}): \S/;
const DAY = 86_400_000;

export interface LongReport {
  problems: string[];
  summary: string;
  memories: MemoryRecord[];
  questions: GoldenQuestion[];
}

function parseAll<T>(
  text: string,
  source: string,
  schema: Parameters<typeof parseJsonl<T>>[2],
  problems: string[],
) {
  const out: T[] = [];
  try {
    for (const { data } of parseJsonl(text, source, schema)) out.push(data);
  } catch (err) {
    problems.push(err instanceof GoldenSetError ? err.message : String(err));
  }
  return out;
}

export function checkLongUser(user: string, memoriesText: string, questionsText: string): LongReport {
  const problems: string[] = [];
  const tokenizer = getTokenizer("o200k_base");
  const memories = parseAll(
    memoriesText,
    `${user}.memories.jsonl`,
    memoryRecordSchema,
    problems,
  ) as MemoryRecord[];
  const questions = parseAll(questionsText, `${user}.questions.jsonl`, goldenQuestionSchema, problems);

  // The conversation.
  const ids = new Set<string>();
  const sessions = new Map<string, string>();
  const speakers = new Map<string, number>();
  let lastTime = Number.NEGATIVE_INFINITY;
  let multiSentence = 0;
  for (const m of memories) {
    const where = `memory ${m.id}`;
    if (m.userId !== user) problems.push(`${where}: userId is ${m.userId}, not ${user}`);
    if (ids.has(m.id)) problems.push(`${where}: duplicate id`);
    ids.add(m.id);
    const t = Date.parse(m.timestamp);
    if (t < lastTime) problems.push(`${where}: timestamp goes back in time`);
    lastTime = t;
    const day = m.timestamp.slice(0, 10);
    const seen = sessions.get(m.sessionId);
    if (seen === undefined) sessions.set(m.sessionId, day);
    else if (seen !== day) problems.push(`${where}: session ${m.sessionId} spans two days`);
    const speaker = SPEAKER.exec(m.content)?.[1];
    if (speaker === undefined) problems.push(`${where}: content does not start with "Speaker: "`);
    else speakers.set(speaker, (speakers.get(speaker) ?? 0) + 1);
    const tokens = tokenizer.count(m.content);
    if (tokens < TURN_TOKENS.min || tokens > TURN_TOKENS.max)
      problems.push(`${where}: ${tokens} tokens (${TURN_TOKENS.min}–${TURN_TOKENS.max})`);
    if (sentenceSpans(m.content).length >= 2) multiSentence++;
  }
  if (memories.length < MIN_TURNS) problems.push(`${memories.length} turns (at least ${MIN_TURNS})`);
  if (sessions.size < MIN_SESSIONS) problems.push(`${sessions.size} sessions (at least ${MIN_SESSIONS})`);
  if (speakers.size !== 2)
    problems.push(`${speakers.size} speakers (${[...speakers.keys()].join(", ")}); two wanted`);
  const first = memories[0];
  const last = memories[memories.length - 1];
  const spanDays =
    first && last ? Math.round((Date.parse(last.timestamp) - Date.parse(first.timestamp)) / DAY) : 0;
  if (spanDays < MIN_SPAN_DAYS)
    problems.push(`the sessions span ${spanDays} days (at least ${MIN_SPAN_DAYS})`);
  if (memories.length > 0 && multiSentence < memories.length / 2)
    problems.push(`${multiSentence} of ${memories.length} turns have several sentences (at least half)`);

  // The questions.
  const byId = new Map(memories.map((m) => [m.id, m]));
  const counts = new Map<string, number>();
  const queries = new Set<string>();
  const qids = new Set<string>();
  for (const q of questions) {
    const where = `question ${q.id}`;
    if (qids.has(q.id)) problems.push(`${where}: duplicate id`);
    qids.add(q.id);
    counts.set(q.category, (counts.get(q.category) ?? 0) + 1);
    if (!(LONG_CATEGORIES as readonly string[]).includes(q.category))
      problems.push(`${where}: category ${q.category} (one of ${LONG_CATEGORIES.join(", ")})`);
    if (q.lang === undefined) problems.push(`${where}: no lang`);
    if (q.userId !== user) problems.push(`${where}: userId is ${q.userId}, not ${user}`);
    const norm = normalizeForMatch(q.query);
    if (queries.has(norm)) problems.push(`${where}: the same query as another question`);
    queries.add(norm);
    if (q.category === "multi-hop" && new Set(q.expectedIds).size < 2)
      problems.push(`${where}: a multi-hop question needs evidence in two or more turns`);
    if (q.category !== UNANSWERABLE && q.expectedIds.length === 0) problems.push(`${where}: no expectedIds`);
    if (q.category !== UNANSWERABLE && q.answers.length === 0) problems.push(`${where}: no answers`);
    q.answers.forEach((piece, i) => {
      for (const alt of alternativesOf(piece)) {
        if (alt.trim().split(/\s+/).length > MAX_ANSWER_WORDS)
          problems.push(`${where}: answers[${i}]: "${alt}" is longer than ${MAX_ANSWER_WORDS} words`);
      }
      if (alternativesOf(piece).some((alt) => norm.includes(normalizeForMatch(alt))))
        problems.push(`${where}: answers[${i}] stands in the query itself`);
    });
    if (q.asOf !== undefined) {
      for (const id of q.expectedIds) {
        const m = byId.get(id);
        if (m !== undefined && Date.parse(m.timestamp) > Date.parse(q.asOf))
          problems.push(`${where}: asOf is before its evidence ${id}`);
      }
    }
  }
  problems.push(...checkGoldenAgainstMemories(questions, memories));
  // An unanswerable question whose would-be answer words all sit in one memory is not unanswerable: not
  // checkable in general; the author's note says what is missing. Only the shape is checked here.
  if (questions.length < MIN_QUESTIONS)
    problems.push(`${questions.length} questions (at least ${MIN_QUESTIONS})`);
  for (const c of LONG_CATEGORIES) {
    const n = counts.get(c) ?? 0;
    if (n < MIN_PER_CATEGORY[c]) problems.push(`${n} ${c} questions (at least ${MIN_PER_CATEGORY[c]})`);
  }
  const perCategory = LONG_CATEGORIES.map((c) => `${c} ${counts.get(c) ?? 0}`).join(", ");
  const summary =
    `${memories.length} turns, ${sessions.size} sessions over ${spanDays} days, speakers ` +
    `${[...speakers.entries()].map(([s, n]) => `${s} ${n}`).join(" / ")}, ` +
    `${Math.round((100 * multiSentence) / Math.max(1, memories.length))} % multi-sentence; ` +
    `${questions.length} questions (${perCategory}); ${problems.length} problem(s)`;
  return { problems, summary, memories, questions };
}

/** Whether `answer` stands in `memory` as the eval looks for it (content or date). */
export function answerIn(answer: string, memory: MemoryRecord): boolean {
  return answerText(memory.content, memory.timestamp).includes(normalizeForMatch(answer));
}
