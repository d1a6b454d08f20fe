/**
 * Reply turns on Zep (policy `retrieval.replies`, issue 25 item 7): when a search returns an episode that asks a
 * question and belongs to a thread, the turn after it in that thread usually holds the answer ("what did you name
 * the puppy?" → "Pickle!") though it rarely shares the question's words. Zep's search cannot give neighbours, so
 * one more call reads the thread: `GET /threads/{threadId}?lastn=100` (the SDK's `thread.get`), its newest 100
 * messages in order.
 *
 * - One extra call per search, at most: to the thread with the most question episodes among the candidates (then
 *   the one of the best-scored question). Questions of other threads get no reply.
 * - Bounded: it gets what is left of the policy's backend timeout minus a margin (`REPLY_MARGIN_MS`); with less
 *   than `REPLY_MIN_MS` left it is not made. Any failure (timeout, HTTP error, a malformed answer) → no replies:
 *   the search's own candidates are returned as they were, never a failed search.
 * - A question episode is found in the thread by its uuid, else by identical content. The next message, when it
 *   has a uuid and content, is the reply: already a candidate → it learns what it answers (`replyTo`); otherwise
 *   added right after its question (`origin: "reply"`, `replyTo`, scored as its question, `messageId` = its uuid,
 *   sessionId = the thread), on top of the fetch size, as the local store does.
 * - A question older than the thread's newest 100 messages gets no reply.
 */
import { type Candidate, ROLES, type Role } from "../../pipeline/types";
import { LinkedSignal } from "../../signals";
import { isRecord, parseUpstreamJson } from "../json";
import { asksQuestion, type QuestionAt } from "../question";
import type { SearchRequest } from "../types";
import { toIsoTimestamp } from "./map";
import { type ZepWire, zepExchange } from "./native";

/** Messages read from the thread: its newest ones. */
export const REPLY_THREAD_MESSAGES = 100;
/** Kept back from the backend timeout for the rest of the request. */
export const REPLY_MARGIN_MS = 50;
/** Less than this left: no thread call. */
export const REPLY_MIN_MS = 50;

interface ThreadMessage {
  uuid?: string;
  content: string;
  createdAt?: string;
  role?: Role;
}

/** The thread whose question episodes get replies, and those questions; undefined when there is none. */
function pickThread(
  candidates: readonly Candidate[],
  userId: string,
  questionAt: QuestionAt | undefined,
): string | undefined {
  const counts = new Map<string, number>();
  let best: string | undefined;
  for (const c of candidates) {
    if (c.type !== "message" || c.sessionId === `user:${userId}` || !asksQuestion(c.content, questionAt))
      continue;
    const n = (counts.get(c.sessionId) ?? 0) + 1;
    counts.set(c.sessionId, n);
    // Candidates come best first: a later thread takes over only with strictly more questions.
    if (best === undefined || n > (counts.get(best) ?? 0)) best = c.sessionId;
  }
  return best;
}

function messagesOf(answer: unknown): ThreadMessage[] {
  if (!isRecord(answer) || !Array.isArray(answer.messages)) return [];
  const out: ThreadMessage[] = [];
  for (const m of answer.messages) {
    if (!isRecord(m) || typeof m.content !== "string") continue;
    const msg: ThreadMessage = { content: m.content };
    if (typeof m.uuid === "string" && m.uuid !== "") msg.uuid = m.uuid;
    const at = toIsoTimestamp(m.created_at);
    if (at !== undefined) msg.createdAt = at;
    const role = ROLES.find((r) => r === m.role);
    if (role !== undefined) msg.role = role;
    out.push(msg);
  }
  return out;
}

/**
 * The candidates with the reply turns of the chosen thread's questions (see the top of this file). `startedAt`
 * is when the search began (`now()`'s clock); never throws.
 */
export async function withReplies(
  wire: ZepWire,
  candidates: Candidate[],
  req: SearchRequest,
  startedAt: number,
  now: () => number = () => performance.now(),
): Promise<Candidate[]> {
  if (req.policy.retrieval.replies !== true || req.signal.aborted) return candidates;
  const { questionAt } = req.policy.retrieval;
  const thread = pickThread(candidates, req.userId, questionAt);
  if (thread === undefined) return candidates;
  const left = req.policy.timeouts.backendMs - (now() - startedAt) - REPLY_MARGIN_MS;
  if (left < REPLY_MIN_MS) return candidates;
  const link = new LinkedSignal(req.signal, left);
  let messages: ThreadMessage[];
  try {
    // The exchange alone: an HTTP error or an answer that is not JSON is "no replies" without an error made for it.
    const answer = await zepExchange(wire, "thread.get", {
      method: "GET",
      path: `/threads/${encodeURIComponent(thread)}?lastn=${REPLY_THREAD_MESSAGES}`,
      signal: link.signal,
      timedOut: () => link.timedOut,
      abortedAs: "aborted",
    });
    if (answer.status < 200 || answer.status > 299) return candidates;
    const parsed = parseUpstreamJson(answer.body);
    if (!parsed.ok) return candidates;
    messages = messagesOf(parsed.value);
  } catch {
    return candidates;
  } finally {
    link.dispose();
  }
  return attach(candidates, thread, messages, questionAt);
}

function attach(
  candidates: Candidate[],
  thread: string,
  messages: readonly ThreadMessage[],
  questionAt: QuestionAt | undefined,
): Candidate[] {
  const byUuid = new Map<string, number>();
  messages.forEach((m, i) => {
    if (m.uuid !== undefined && !byUuid.has(m.uuid)) byUuid.set(m.uuid, i);
  });
  const present = new Map(candidates.map((c) => [c.id, c]));
  const added = new Set<string>();
  const out: Candidate[] = [];
  for (const c of candidates) {
    out.push(c);
    if (
      c.sessionId !== thread ||
      c.type !== "message" ||
      c.origin === "reply" ||
      !asksQuestion(c.content, questionAt)
    )
      continue;
    const at = byUuid.get(c.id) ?? messages.findIndex((m) => m.content === c.content);
    const next = at >= 0 ? messages[at + 1] : undefined;
    if (next?.uuid === undefined || next.content.trim() === "" || next.uuid === c.id) continue;
    const existing = present.get(next.uuid);
    if (existing !== undefined) {
      if (existing.replyTo === undefined && existing.id !== c.id) existing.replyTo = c.id;
      continue;
    }
    if (added.has(next.uuid)) continue;
    added.add(next.uuid);
    const reply: Candidate = {
      id: next.uuid,
      content: next.content,
      score: c.score,
      timestamp: next.createdAt ?? c.timestamp,
      sessionId: thread,
      messageId: next.uuid,
      type: "message",
      backend: "zep",
      sourceId: next.uuid,
      replyTo: c.id,
      origin: "reply",
    };
    if (next.role !== undefined) reply.role = next.role;
    out.push(reply);
  }
  return out;
}
