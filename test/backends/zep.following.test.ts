/**
 * Following turns on Zep (policy `retrieval.following`, src/backends/zep/replies.ts), the real adapter against the
 * fake Zep: the episodes among the search's first `top` candidates that belong to the thread read bring the next
 * `turns` messages of that thread, scored as them, right after them — from the same single thread read the reply
 * turns use; facts bring nothing; a failed thread read leaves the search's own candidates.
 */

import { createZepBackend } from "../../src/backends/zep";
import { ReplyPrefetch } from "../../src/backends/zep/replies";
import type { Candidate } from "../../src/pipeline/types";
import { policySchema } from "../../src/policy/schema";
import type { SeedMemory } from "./contract";
import { createZepFakeServer, type ZepFakeServer } from "./fakes/zep-server";

const USER = "maya";
const at = (minute: number) => `2024-03-02T18:${String(minute).padStart(2, "0")}:00.000Z`;
const msg = (
  id: string,
  sessionId: string,
  minute: number,
  content: string,
  role: "user" | "assistant" = "user",
): SeedMemory => ({ id, content, type: "message", sessionId, role, timestamp: at(minute) });
const WEDDING: SeedMemory[] = [
  msg("w1", "t-wed", 0, "Maya: I've been asked to be an usher at Sam's wedding."),
  msg("w2", "t-wed", 1, "Tom: Do you still have the suit?", "assistant"),
  msg("w3", "t-wed", 2, "Maya: That one is long gone. I bought a navy one from Marlow & Finch."),
  msg("w4", "t-wed", 3, "Tom: Great choice.", "assistant"),
  msg("w5", "t-wed", 4, "Maya: The usher duties start at noon."),
  msg("w6", "t-wed", 5, "Tom: Sounds fine.", "assistant"),
  msg("c1", "t-cake", 0, "Maya: Sam's wedding cake is lemon."),
  msg("c2", "t-cake", 1, "Tom: Yum.", "assistant"),
];

interface Opts {
  replies?: boolean;
  following?: { top: number; turns: number };
  scopes?: Array<"edges" | "episodes">;
  query?: string;
}
const policy = ({ replies = false, following, scopes = ["episodes"] }: Opts) =>
  policySchema.parse({
    name: "t",
    version: 1,
    retrieval: { replies, ...(following === undefined ? {} : { following }) },
    timeouts: { backendMs: 1500 },
    zep: { scopes, reranker: "cross_encoder" },
  });

describe("Zep following turns (retrieval.following)", () => {
  let zep: ZepFakeServer;
  beforeAll(async () => {
    zep = await createZepFakeServer();
  });
  beforeEach(async () => {
    await zep.reset();
    await zep.seed(USER, WEDDING);
  });
  afterAll(() => zep.close());

  const search = async (opts: Opts): Promise<Candidate[]> => {
    const backend = createZepBackend({ apiKey: zep.apiKey, baseUrl: zep.baseUrl });
    try {
      return await backend.search({
        userId: USER,
        query: opts.query ?? "usher wedding",
        limit: 10,
        searchType: "hybrid",
        policy: policy(opts),
        signal: AbortSignal.timeout(1500),
      });
    } finally {
      await backend.close?.();
    }
  };
  const threadCalls = () => zep.requests.filter((r) => r.path.startsWith("/threads/")).map((r) => r.path);
  const ids = (cs: readonly Candidate[]) => cs.map((c) => c.id);

  test("without following (nor replies): the search's own candidates, no thread read", async () => {
    expect(ids(await search({}))).toEqual(["w1", "c1", "w5"]);
    expect(threadCalls()).toEqual([]);
  });

  test("the first hit brings its thread's next turns, in order, right after it, scored as it; one thread read", async () => {
    const got = await search({ following: { top: 1, turns: 2 } });
    expect(ids(got)).toEqual(["w1", "w2", "w3", "c1", "w5"]);
    const [w1, w2, w3] = got;
    expect(w2).toMatchObject({
      id: "w2",
      origin: "reply",
      sessionId: "t-wed",
      messageId: "w2",
      sourceId: "w2",
      type: "message",
      backend: "zep",
      role: "assistant",
      content: "Tom: Do you still have the suit?",
      timestamp: at(1),
    });
    expect(w3).toMatchObject({ id: "w3", origin: "reply", timestamp: at(2), role: "user" });
    for (const turn of [w2, w3]) {
      expect(turn?.score).toBe(w1?.score);
      // They follow it; they do not answer it.
      expect(turn?.replyTo).toBeUndefined();
      expect(turn?.backendScore).toBeUndefined();
    }
    // Scores never increase down the list.
    const scores = got.map((c) => c.score);
    expect([...scores].sort((a, b) => b - a)).toEqual(scores);
    expect(threadCalls()).toEqual(["/threads/t-wed?lastn=100"]);
  });

  test("only the first top hits of the thread read bring turns, `turns` of them each", async () => {
    // Top 3: w1 (t-wed), c1 (t-cake: not the thread read), w5 (t-wed) brings w6, the thread's last.
    expect(ids(await search({ following: { top: 3, turns: 1 } }))).toEqual(["w1", "w2", "c1", "w5", "w6"]);
    expect(ids(await search({ following: { top: 1, turns: 1 } }))).toEqual(["w1", "w2", "c1", "w5"]);
    expect(threadCalls()).toEqual(["/threads/t-wed?lastn=100", "/threads/t-wed?lastn=100"]);
  });

  test("a following turn that asks a question brings its reply (with replies), after it, scored as the hit", async () => {
    expect(ids(await search({ following: { top: 1, turns: 1 } }))).toEqual(["w1", "w2", "c1", "w5"]);
    const got = await search({ replies: true, following: { top: 1, turns: 1 } });
    expect(ids(got)).toEqual(["w1", "w2", "w3", "c1", "w5"]);
    expect(got[1]?.replyTo).toBeUndefined();
    expect(got[2]).toMatchObject({ id: "w3", replyTo: "w2", origin: "reply", score: got[0]?.score });
  });

  test("a turn the search found lower moves up, once, scored as the hit it follows", async () => {
    const query = "usher wedding navy";
    const plain = await search({ query });
    expect(ids(plain)).toEqual(["w1", "c1", "w3", "w5"]);
    expect(plain[2]?.backendScore).toBeDefined();
    const got = await search({ query, following: { top: 1, turns: 2 } });
    expect(ids(got)).toEqual(["w1", "w2", "w3", "c1", "w5"]);
    expect(got[2]).toMatchObject({ id: "w3", origin: "reply", score: got[0]?.score });
    expect(got[2]?.backendScore).toBeUndefined();
    expect(got[2]?.replyTo).toBeUndefined();
    // The reply of a following question moves up the same way, and says what it answers.
    const withReplies = await search({ query, replies: true, following: { top: 1, turns: 1 } });
    expect(ids(withReplies)).toEqual(["w1", "w2", "w3", "c1", "w5"]);
    expect(withReplies[2]).toMatchObject({ id: "w3", replyTo: "w2", origin: "reply", score: got[0]?.score });
  });

  test("a failed thread read: the search's own candidates, not a failed search", async () => {
    zep.route("GET", /^\/threads\//, () => [
      500,
      JSON.stringify({ message: "boom" }),
      { "Content-Type": "application/json" },
    ]);
    expect(ids(await search({ replies: true, following: { top: 3, turns: 2 } }))).toEqual(["w1", "c1", "w5"]);
    expect(threadCalls()).toEqual(["/threads/t-wed?lastn=100"]);
  });

  test("with following the best hit's thread is read, not the question's: one read, its turns and its questions' replies", async () => {
    await zep.reset();
    await zep.seed(USER, [
      ...WEDDING.filter((m) => m.sessionId === "t-wed"),
      msg("c1", "t-cake", 0, "Tom: Is Sam's wedding cake lemon?", "assistant"),
      msg("c2", "t-cake", 1, "Maya: Lemon and lavender."),
      msg("c3", "t-cake", 2, "Tom: Fancy.", "assistant"),
    ]);
    // Replies alone: the thread of the question episode (c1), as before.
    expect(ids(await search({ replies: true }))).toEqual(["w1", "c1", "c2", "w5"]);
    expect(threadCalls()).toEqual(["/threads/t-cake?lastn=100"]);
    // With following: w1's thread; its following question w2 brings its reply w3; c1 (t-cake, unread) gets none.
    const got = await search({ replies: true, following: { top: 2, turns: 1 } });
    expect(ids(got)).toEqual(["w1", "w2", "w3", "c1", "w5"]);
    expect(got[2]).toMatchObject({ id: "w3", replyTo: "w2", origin: "reply", score: got[0]?.score });
    expect(threadCalls()).toEqual(["/threads/t-cake?lastn=100", "/threads/t-wed?lastn=100"]);
    // No episode among the first top (a fact there): the question rule, replies as without following.
    await zep.seed(USER, [
      {
        id: "f1",
        content: "Maya is an usher at Sam's wedding.",
        type: "fact",
        sessionId: "user:maya",
        timestamp: at(0),
      },
    ]);
    const factFirst = await search({
      scopes: ["edges", "episodes"],
      replies: true,
      following: { top: 1, turns: 2 },
    });
    expect(ids(factFirst)).toEqual(["f1", "w1", "c1", "c2", "w5"]);
    expect(factFirst[3]).toMatchObject({ id: "c2", replyTo: "c1" });
    expect(threadCalls().at(-1)).toBe("/threads/t-cake?lastn=100");
    expect(threadCalls()).toHaveLength(3);
  });

  test("facts bring nothing: a fact among the first top, no episode there, no thread read", async () => {
    await zep.reset();
    await zep.seed(USER, [
      ...WEDDING,
      {
        id: "f1",
        content: "Maya is an usher at Sam's wedding.",
        type: "fact",
        sessionId: "user:maya",
        timestamp: at(0),
      },
    ]);
    const got = await search({ scopes: ["edges", "episodes"], following: { top: 1, turns: 2 } });
    expect(ids(got)).toEqual(["f1", "w1", "c1", "w5"]);
    expect(threadCalls()).toEqual([]);
    // The fact takes a place among the first top: with two, the episode after it brings its turns.
    const two = await search({ scopes: ["edges", "episodes"], following: { top: 2, turns: 1 } });
    expect(ids(two)).toEqual(["f1", "w1", "w2", "c1", "w5"]);
    expect(threadCalls()).toEqual(["/threads/t-wed?lastn=100"]);
  });

  test("the thread read ahead (ReplyPrefetch) follows the same rule: the best episode of the first top, without replies", async () => {
    const req = {
      userId: USER,
      query: "usher wedding",
      limit: 10,
      searchType: "hybrid" as const,
      policy: policy({ following: { top: 1, turns: 2 } }),
      signal: AbortSignal.timeout(1500),
    };
    const wire = { apiKey: zep.apiKey, baseUrl: zep.baseUrl };
    const episode = (uuid: string, thread: string) => ({
      uuid,
      content: "Maya: usher",
      thread_id: thread,
      created_at: "2024-03-02T18:00:00Z",
    });
    const early = new ReplyPrefetch(wire, req, performance.now());
    early.scopeAnswered("episodes", { episodes: [episode("w1", "t-wed"), episode("c1", "t-cake")] }, 10);
    const ahead = early.take("t-wed");
    expect(ahead).toBeDefined();
    expect((await ahead)?.map((m) => m.uuid)).toEqual(["w1", "w2", "w3", "w4", "w5", "w6"]);
    // An episode below the first top is not the one read.
    const below = new ReplyPrefetch(wire, req, performance.now());
    below.scopeAnswered(
      "episodes",
      { episodes: [{ ...episode("w1", ""), thread_id: "" }, episode("c1", "t-cake")] },
      10,
    );
    expect(below.take("t-cake")).toBeUndefined();
    expect(threadCalls()).toEqual(["/threads/t-wed?lastn=100"]);
  });
});
