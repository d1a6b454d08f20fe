/**
 * Reply turns on Zep (policy `retrieval.replies`, issue 25 item 7): when a search returns an episode that asks a
 * question and belongs to a thread, the turn after it in that thread usually holds the answer ("what did you name
 * the puppy?" → "Pickle!") though it rarely shares the question's words. Zep's search cannot give neighbours, so
 * one more call reads the thread: `GET /threads/{threadId}?lastn=100` (the SDK's `thread.get`), its newest 100
 * messages in order. Following turns (policy `retrieval.following: {top, turns}`) come from the same read.
 *
 * - One extra call per search, at most: (without `following`) to the thread with the most question episodes among
 *   the candidates (then the one of the best-scored question). Questions of other threads get no reply. The call is
 *   made as soon as the `episodes` scope answers, beside the other scopes' searches (`ReplyPrefetch`), not after
 *   them — or, when the user's previous search chose a thread (`ThreadGuesses`), beside the searches themselves,
 *   to that thread; should the `episodes` answer name another thread (or none), that call's answer is dropped and
 *   the named one made.
 * - With `following`, the same one call, to the thread of the best-ranked episode among the first `top` candidates
 *   (the user's graph, `user:<id>`, is no thread); with no episode there, the question rule above (with `replies`).
 *   Both the following turns and the replies then come from that thread: questions of other threads get no reply.
 *   The question rule's thread is the best hit's in only ~20 % of searches, so keeping it first would bring
 *   following turns rarely: on the long golden set against the test fake Zep (word-overlap search; an ad-hoc
 *   measurement, docs/policy.md#fetch), v10's candidates held all of a question's evidence in 59.2 % of questions
 *   with this rule, 55.8 % with the question rule first (the same as without `following`: 55.8 %). Without
 *   `following` the thread read is exactly what it was.
 * - Bounded: it gets what is left of the policy's backend timeout minus a margin (`REPLY_MARGIN_MS`); with less
 *   than `REPLY_MIN_MS` left it is not made. Any failure (timeout, HTTP error, a malformed answer) → no replies
 *   and no following turns: the search's own candidates are returned as they were, never a failed search.
 * - A question episode is found in the thread by its uuid, else by identical content. The next message, when it
 *   has a uuid and content, is the reply: already a candidate → it learns what it answers (`replyTo`); otherwise
 *   added right after its question (`origin: "reply"`, `replyTo`, scored as its question, `messageId` = its uuid,
 *   sessionId = the thread), on top of the fetch size, as the local store does.
 * - Following: each episode of the thread read among the first `top` candidates (merged order, facts and summaries
 *   counted; found in the thread as a question is) is followed by the thread's next `turns` messages (those with a
 *   uuid and content), scored as it, right after it (after its reply), `origin: "reply"` without `replyTo`; one the
 *   search found lower moves up once (scored as the episode, Zep's own number dropped); one placed already stays
 *   where it is. A following turn that asks a question (with `replies`) brings its reply the same way, with
 *   `replyTo`. Facts (edges), summaries and episodes of other threads bring nothing: only a thread has an order.
 *   They come on top of the fetch size, as the local store's do.
 * - A question (or an episode) older than the thread's newest 100 messages gets no reply (no following turns).
 * - The drop-in doors' native searches (`searchNative`) never come here: their answers stay Zep's own.
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

/**
 * The thread with the most question turns among turns read best first (a later thread takes over only with strictly
 * more); the user's own graph (`user:<id>`) is no thread. One rule for the merged candidates (`pickThread`) and for
 * the episodes scope's answer read ahead (`predictThread`), so the two choose alike.
 */
class QuestionTally {
  private readonly counts = new Map<string, number>();
  private readonly userThread: string;
  best: string | undefined;

  constructor(
    userId: string,
    private readonly questionAt: QuestionAt | undefined,
  ) {
    this.userThread = `user:${userId}`;
  }

  add(thread: string, content: string): void {
    if (thread === this.userThread || !asksQuestion(content, this.questionAt)) return;
    const n = (this.counts.get(thread) ?? 0) + 1;
    this.counts.set(thread, n);
    if (this.best === undefined || n > (this.counts.get(this.best) ?? 0)) this.best = thread;
  }
}

/** What chooses the thread to read: `retrieval.replies` (with `questionAt`) and `retrieval.following`. */
interface ThreadRule {
  userId: string;
  replies: boolean;
  questionAt: QuestionAt | undefined;
  /** `retrieval.following.top`; undefined when `following` is off. */
  followTop: number | undefined;
}

function threadRuleOf(req: SearchRequest): ThreadRule {
  const { replies, questionAt, following } = req.policy.retrieval;
  return { userId: req.userId, replies: replies === true, questionAt, followTop: following?.top };
}

/**
 * The thread to read from turns read best first (`add`, the first `limit` candidates): with `following`, the thread
 * of the best-ranked turn among the first `top` (the user's graph is no thread); otherwise (no `following`, or no
 * such turn) with `replies`, the one with the most question turns (`QuestionTally`). One rule for the merged
 * candidates (`pickThread`) and the episodes scope's answer read ahead (`predictThread`).
 */
class ThreadChoice {
  private readonly tally: QuestionTally | undefined;
  private readonly userThread: string;
  private first: string | undefined;

  constructor(private readonly rule: ThreadRule) {
    this.tally = rule.replies ? new QuestionTally(rule.userId, rule.questionAt) : undefined;
    this.userThread = `user:${rule.userId}`;
  }

  /** The turn ranked `rank` (among all candidates, best first). */
  add(rank: number, thread: string, content: string): void {
    const top = this.rule.followTop;
    if (this.first === undefined && top !== undefined && rank < top && thread !== this.userThread)
      this.first = thread;
    this.tally?.add(thread, content);
  }

  get thread(): string | undefined {
    return this.first ?? this.tally?.best;
  }
}

/** The thread to read for the merged candidates (`ThreadChoice`); undefined when there is none. */
function pickThread(candidates: readonly Candidate[], rule: ThreadRule): string | undefined {
  const choice = new ThreadChoice(rule);
  candidates.forEach((c, i) => {
    if (c.type === "message") choice.add(i, c.sessionId, c.content);
  });
  return choice.thread;
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
 * The thread's messages (`GET /threads/{thread}?lastn=100`) under `link` (disposed at the end); undefined when there
 * are none to use: any failure, an HTTP error, an answer that is not JSON. Never rejects.
 */
async function fetchThread(
  wire: ZepWire,
  thread: string,
  link: LinkedSignal,
): Promise<ThreadMessage[] | undefined> {
  try {
    // The exchange alone: an HTTP error or an answer that is not JSON is "no replies" without an error made for it.
    const answer = await zepExchange(wire, "thread.get", {
      method: "GET",
      path: `/threads/${encodeURIComponent(thread)}?lastn=${REPLY_THREAD_MESSAGES}`,
      signal: link.signal,
      timedOut: () => link.timedOut,
      abortedAs: "aborted",
    });
    if (answer.status < 200 || answer.status > 299) return undefined;
    const parsed = parseUpstreamJson(answer.body);
    return parsed.ok ? messagesOf(parsed.value) : undefined;
  } catch {
    return undefined;
  } finally {
    link.dispose();
  }
}

/** The signal of a thread call made now: what is left of the backend timeout; undefined when too little is left. */
function threadCallLink(req: SearchRequest, startedAt: number, now: () => number): LinkedSignal | undefined {
  const left = req.policy.timeouts.backendMs - (now() - startedAt) - REPLY_MARGIN_MS;
  return left < REPLY_MIN_MS ? undefined : new LinkedSignal(req.signal, left);
}

/** Users remembered per backend instance by `ThreadGuesses` (the least recently chosen forgotten first). */
export const THREAD_GUESS_USERS = 4096;

/**
 * Each user's thread chosen by their last search (`withReplies`: for replies or following), to start the next search's thread call beside
 * its searches (`ReplyPrefetch.guess`): with Zep's latency, the thread call then overlaps the searches instead of
 * following the `episodes` answer. Only which thread to read is remembered, never what it holds: every search
 * reads the thread afresh, so the replies are the same either way. A guess that the `episodes` answer proves
 * wrong costs one thread read whose answer is dropped (left to finish, within the same time bound, rather than
 * cancelled: cancelling an exchange in flight closes its connection, and a new one to Zep Cloud costs a TLS
 * handshake); a user whose last search chose no thread gets no guess. Bounded (`THREAD_GUESS_USERS`, least
 * recently chosen forgotten first).
 */
export class ThreadGuesses {
  private readonly last = new Map<string, string>();

  constructor(private readonly capacity = THREAD_GUESS_USERS) {}

  get(userId: string): string | undefined {
    return this.last.get(userId);
  }

  get size(): number {
    return this.last.size;
  }

  /** The thread `userId`'s search chose (undefined: none, forgets the guess). */
  chose(userId: string, thread: string | undefined): void {
    if (thread !== undefined && this.last.get(userId) === thread) return;
    this.last.delete(userId);
    if (thread === undefined) return;
    this.last.set(userId, thread);
    if (this.last.size > this.capacity) {
      const oldest = this.last.keys().next();
      if (oldest.done !== true) this.last.delete(oldest.value);
    }
  }
}

/**
 * The thread call made ahead of the merged candidates (issue 29), beside the other scopes' searches rather than
 * after them: only episodes are messages, so the thread `pickThread` will choose can be told from the `episodes`
 * scope's answer alone — its items in Zep's order (best first), the first `limit` of them, as the merged
 * candidates hold them. Earlier still, with `guesses`: the thread the user's previous search chose, called as soon
 * as the searches are sent (`guess`); when the `episodes` answer names another thread (or none), that call's answer
 * is dropped (the call left to finish, see `ThreadGuesses`) and the named one made. Should the merged candidates
 * choose another thread (or none: the merge keeps at most `limit` of all scopes), the call made ahead is cancelled
 * and `withReplies` makes its own, as before: the replies are those of the thread the candidates choose, whichever
 * way.
 */
export class ReplyPrefetch {
  private thread: string | undefined;
  private link: LinkedSignal | undefined;
  private messages: Promise<ThreadMessage[] | undefined> | undefined;
  private episodesAnswered = false;
  /** Whether the call made ahead is the guess (`guess`), not the `episodes` answer's. */
  private guessed = false;

  constructor(
    private readonly wire: ZepWire,
    private readonly req: SearchRequest,
    private readonly startedAt: number,
    private readonly now: () => number = () => performance.now(),
    private readonly guesses?: ThreadGuesses,
  ) {}

  /**
   * The searches are sent: the thread the user's previous search chose is called now, if there is one (and the
   * `episodes` scope is searched: without it no thread is chosen).
   */
  guess(): void {
    if (this.messages !== undefined || this.episodesAnswered || this.req.signal.aborted) return;
    if (!this.req.policy.zep.scopes.includes("episodes")) return;
    const thread = this.guesses?.get(this.req.userId);
    if (thread !== undefined) this.guessed = this.start(thread);
  }

  /** One scope's search answered (its answer as Zep sent it); `limit` is the one sent. */
  scopeAnswered(scope: string, results: unknown, limit: number): void {
    if (scope !== "episodes" || this.episodesAnswered || this.req.signal.aborted) return;
    this.episodesAnswered = true;
    const thread = predictThread(results, limit, threadRuleOf(this.req));
    // The guess was right (or there was none and there is none).
    if (thread === this.thread) return;
    // A wrong guess is left to finish, its answer unused (see `ThreadGuesses`); its link ends it in time.
    if (!this.guessed) this.cancel();
    this.guessed = false;
    this.thread = undefined;
    this.link = undefined;
    this.messages = undefined;
    if (thread !== undefined) this.start(thread);
  }

  /** Whether the call was made (not when too little is left of the backend timeout). */
  private start(thread: string): boolean {
    const link = threadCallLink(this.req, this.startedAt, this.now);
    if (link === undefined) return false;
    this.thread = thread;
    this.link = link;
    this.messages = fetchThread(this.wire, thread, link);
    return true;
  }

  /**
   * The messages fetched ahead when `thread` (the merged candidates' choice, remembered for the user's next search)
   * is the one fetched; otherwise undefined, and the call is cancelled.
   */
  take(thread: string | undefined): Promise<ThreadMessage[] | undefined> | undefined {
    this.guesses?.chose(this.req.userId, thread);
    if (thread !== undefined && thread === this.thread) return this.messages;
    this.cancel();
    return undefined;
  }

  /** The search failed, or needs no replies: the call made ahead (if any) is cancelled. */
  cancel(): void {
    this.link?.abort();
  }
}

/**
 * `pickThread` over the episodes scope's own answer (items in Zep's order, the first `limit`; an item's rank there
 * stands for its rank among the merged candidates); never throws.
 */
function predictThread(results: unknown, limit: number, rule: ThreadRule): string | undefined {
  if (!isRecord(results) || !Array.isArray(results.episodes)) return undefined;
  const items = results.episodes;
  const choice = new ThreadChoice(rule);
  for (let i = 0; i < items.length && i < limit; i++) {
    const item: unknown = items[i];
    if (!isRecord(item) || typeof item.content !== "string" || item.content.trim() === "") continue;
    // An episode without a thread is the user's graph, as the candidates' mapping says (map.ts).
    const thread =
      typeof item.thread_id === "string" && item.thread_id !== "" ? item.thread_id : `user:${rule.userId}`;
    choice.add(i, thread, item.content);
  }
  return choice.thread;
}

/**
 * The candidates with the reply turns of the chosen thread's questions and, with `retrieval.following`, the turns
 * following its episodes among the first `top` (see the top of this file). `startedAt` is when the search began
 * (`now()`'s clock); `early`, the thread call made ahead (`ReplyPrefetch`), used when it is the chosen thread's and
 * cancelled otherwise. Never throws.
 */
export async function withReplies(
  wire: ZepWire,
  candidates: Candidate[],
  req: SearchRequest,
  startedAt: number,
  now: () => number = () => performance.now(),
  early?: ReplyPrefetch,
): Promise<Candidate[]> {
  const { replies, following } = req.policy.retrieval;
  if ((replies !== true && following === undefined) || req.signal.aborted) {
    early?.cancel();
    return candidates;
  }
  const thread = pickThread(candidates, threadRuleOf(req));
  const ahead = early?.take(thread);
  if (thread === undefined) return candidates;
  let messages: ThreadMessage[] | undefined;
  if (ahead !== undefined) messages = await ahead;
  else {
    const link = threadCallLink(req, startedAt, now);
    if (link === undefined) return candidates;
    messages = await fetchThread(wire, thread, link);
  }
  return messages === undefined ? candidates : attach(candidates, thread, messages, req.policy.retrieval);
}

type UsableMessage = ThreadMessage & { uuid: string };

function attach(
  candidates: Candidate[],
  thread: string,
  messages: readonly ThreadMessage[],
  retrieval: SearchRequest["policy"]["retrieval"],
): Candidate[] {
  const { questionAt, following } = retrieval;
  const withReplyTurns = retrieval.replies === true;
  const byUuid = new Map<string, number>();
  messages.forEach((m, i) => {
    if (m.uuid !== undefined && !byUuid.has(m.uuid)) byUuid.set(m.uuid, i);
  });
  /** Where a turn of the thread is: by its uuid, else by identical content; -1 when it is not among the messages. */
  const indexOf = (id: string, content: string) =>
    byUuid.get(id) ?? messages.findIndex((m) => m.content === content);
  /** The thread's message at `i` when it can be a candidate (a uuid, some content). */
  const usable = (i: number): UsableMessage | undefined => {
    const m = i >= 0 ? messages[i] : undefined;
    return m?.uuid === undefined || m.content.trim() === "" ? undefined : (m as UsableMessage);
  };
  const rankOf = new Map(candidates.map((c, i) => [c.id, i]));
  /** The candidates placed so far, by id: the search's own and the turns added. */
  const placed = new Map<string, Candidate>();
  const out: Candidate[] = [];
  const place = (c: Candidate) => {
    placed.set(c.id, c);
    out.push(c);
  };
  /** A new candidate for the thread's turn `m`, scored as `hit`, that the search did not find. */
  const turnOf = (m: UsableMessage, hit: Candidate, replyTo?: string): Candidate => {
    const turn: Candidate = {
      id: m.uuid,
      content: m.content,
      score: hit.score,
      timestamp: m.createdAt ?? hit.timestamp,
      sessionId: thread,
      messageId: m.uuid,
      type: "message",
      backend: "zep",
      sourceId: m.uuid,
      origin: "reply",
    };
    if (m.role !== undefined) turn.role = m.role;
    if (replyTo !== undefined) turn.replyTo = replyTo;
    return turn;
  };
  /** The search's own candidate `id` (placed or not), else a turn placed already. */
  const known = (id: string): Candidate | undefined => {
    const rank = rankOf.get(id);
    return rank === undefined ? placed.get(id) : candidates[rank];
  };
  /** `c` answers the question `question` when it answers none yet. */
  const learn = (c: Candidate, question: string) => {
    if (c.replyTo === undefined && c.id !== question) c.replyTo = question;
  };
  /**
   * Following: the thread's turn `m` placed now, after `hit` and scored as it: added when the search did not find
   * it, moved up (once) when it found it lower (every candidate above `hit` is placed already). `replyTo`: the turn
   * answers that question (the reply of a following turn).
   */
  const bring = (m: UsableMessage, hit: Candidate, replyTo?: string): void => {
    if (placed.has(m.uuid)) return;
    const found = known(m.uuid);
    if (found === undefined) {
      place(turnOf(m, hit, replyTo));
      return;
    }
    // Zep's own number was for the rank it was found at.
    found.score = hit.score;
    found.origin = "reply";
    delete found.backendScore;
    if (replyTo !== undefined) learn(found, replyTo);
    place(found);
  };
  /** The turn after the thread's message `at` (the turn `id`) when that turn asks a question (`retrieval.replies`). */
  const replyOf = (id: string, content: string, at: number): UsableMessage | undefined => {
    if (!withReplyTurns || at < 0 || !asksQuestion(content, questionAt)) return undefined;
    const next = usable(at + 1);
    return next?.uuid === id ? undefined : next;
  };
  candidates.forEach((c, i) => {
    if (placed.has(c.id)) return;
    place(c);
    if (c.sessionId !== thread || c.type !== "message" || c.origin === "reply") return;
    const follows = following !== undefined && i < following.top;
    if (!follows && !(withReplyTurns && asksQuestion(c.content, questionAt))) return;
    const at = indexOf(c.id, c.content);
    // Its reply: learns what it answers when the search found it (wherever) or it is placed; else added after it.
    const reply = replyOf(c.id, c.content, at);
    if (reply !== undefined) {
      const existing = known(reply.uuid);
      if (existing !== undefined) learn(existing, c.id);
      else place(turnOf(reply, c, c.id));
    }
    if (!follows || following === undefined || at < 0) return;
    for (let k = at + 1; k <= at + following.turns; k++) {
      const turn = usable(k);
      if (turn === undefined || turn.uuid === c.id || placed.has(turn.uuid)) continue;
      bring(turn, c);
      // A following turn that asks a question brings its reply too, as it would have as a hit.
      const itsReply = replyOf(turn.uuid, turn.content, k);
      if (itsReply === undefined) continue;
      const placedReply = placed.get(itsReply.uuid);
      if (placedReply !== undefined) learn(placedReply, turn.uuid);
      else bring(itsReply, c, turn.uuid);
    }
  });
  return out;
}
