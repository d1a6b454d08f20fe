import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  createLocalBackend,
  createLocalBackendFromRecords,
  type LocalBackend,
  LocalDataError,
  type MemoryRecordInput,
  parseMemoriesJsonl,
} from "../../src/backends/local";
import { normalizeScore, referenceScore } from "../../src/backends/local/score";
import { BackendError, type SearchRequest } from "../../src/backends/types";
import { terms } from "../../src/pipeline/text/terms";
import type { Candidate } from "../../src/pipeline/types";
import { policySchema } from "../../src/policy/schema";
import { runBackendContract } from "./contract";
import { createLocalUpstream, type LocalUpstream } from "./fakes/local-upstream";

let upstream: LocalUpstream | undefined;
runBackendContract({
  name: "local",
  makeUpstream: async () => {
    upstream = await createLocalUpstream();
    return upstream;
  },
  makeBackend: async () => {
    if (upstream === undefined) throw new Error("makeUpstream runs first");
    return createLocalBackend({ dataFile: upstream.dataFile });
  },
  faults: [],
  hasUserRegistry: true,
});

const policy = policySchema.parse({ name: "local-test", version: 1 });
const signal = () => AbortSignal.timeout(1000);
const ctl = () => ({ signal: signal() });

let n = 0;
function rec(userId: string, content: string, extra: Partial<MemoryRecordInput> = {}): MemoryRecordInput {
  n += 1;
  return {
    id: `r${String(n).padStart(3, "0")}`,
    userId,
    content,
    type: "fact",
    timestamp: `2026-01-${String((n % 28) + 1).padStart(2, "0")}T10:00:00Z`,
    sessionId: "s-1",
    ...extra,
  };
}

function search(
  b: LocalBackend,
  userId: string,
  query: string,
  searchType: SearchRequest["searchType"] = "hybrid",
  limit = 20,
) {
  return b.search({ userId, query, limit, searchType, policy, signal: signal() });
}
const ids = async (p: ReturnType<typeof search>) => (await p).map((c) => c.id);

describe("local backend: loading JSONL", () => {
  const line = (o: object) => JSON.stringify(o);
  const good = (id: string, userId = "ana") => line(rec(userId, `memory ${id}`, { id }));

  test("skips blank lines, // and # comments, a BOM and CRLF; stores timestamps in UTC", () => {
    const text = `\uFEFF// header\r\n\r\n# section\r\n${line(rec("ana", "x", { id: "a", timestamp: "2026-03-01T09:00:00+02:00" }))}\r\n   \r\n${good("b")}\r\n`;
    const records = parseMemoriesJsonl(text, "mem.jsonl");
    expect(records.map((r) => r.id)).toEqual(["a", "b"]);
    expect(records[0]?.timestamp).toBe("2026-03-01T07:00:00.000Z");
  });

  test("a bad line names the file, the line number and the field path", () => {
    const bad = line(rec("ana", "x", { id: "c", timestamp: "2026-02-30T09:00:00Z" }));
    const text = `// c\n${good("a")}\n\n${good("b")}\n# x\n\n${bad}\n`;
    expect(() => parseMemoriesJsonl(text, "config/demo-memories.jsonl")).toThrow(
      /^config\/demo-memories\.jsonl:7: timestamp: invalid ISO 8601/,
    );
    const err = (() => {
      try {
        parseMemoriesJsonl(text, "f.jsonl");
      } catch (e) {
        return e;
      }
    })();
    expect(err).toBeInstanceOf(LocalDataError);
    expect(err).toMatchObject({ line: 7, source: "f.jsonl", code: "invalid_record" });
  });

  test.each([
    [{ tags: ["ok", " "] }, "f:1: tags[1]: must not be blank"],
    [{ sesionId: "s" }, "f:1: sesionId: unknown field"],
    [{ type: "note" }, "f:1: type: Invalid option"],
    [{ role: "robot", type: "message" }, "f:1: role: Invalid option"],
    [{ timestamp: "2026-03-01T09:00:00" }, "f:1: timestamp: invalid ISO 8601"],
    [{ userId: "has space" }, "f:1: userId: 1–128 characters"],
    [{ content: "   " }, "f:1: content: must not be blank"],
  ])("rejects %j", (patch, message) => {
    expect(() => parseMemoriesJsonl(line({ ...rec("ana", "x"), ...patch }), "f")).toThrow(message);
  });

  test("invalid JSON names the line and column but never quotes the content", () => {
    const text = `${good("a")}\n{"id": "b", "content": "secret stuff",}\n`;
    expect(() => parseMemoriesJsonl(text, "f")).toThrow(/^f:2: invalid JSON at column \d+$/);
  });

  test("a duplicate id names both lines, within a user and across users", () => {
    expect(() => parseMemoriesJsonl(`${good("a")}\n${good("b")}\n\n${good("a")}`, "f")).toThrow(
      'f:4: id: duplicate id "a" (first defined at f:1)',
    );
    expect(() => parseMemoriesJsonl(`${good("a")}\n${good("a", "sam")}`, "f")).toThrow(
      "f:2: id: duplicate id",
    );
  });

  test("records given in code are named by index", () => {
    expect(() => createLocalBackendFromRecords([rec("ana", "x"), { ...rec("ana", "y"), type: 3 }])).toThrow(
      /^records\[1\]: type: /,
    );
  });

  test("createLocalBackend reads a file and reports a missing one as LocalDataError", async () => {
    const dir = await mkdtemp(join(tmpdir(), "memgate-local-test-"));
    try {
      const file = join(dir, "m.jsonl");
      await writeFile(file, `${good("a")}\n${line({ ...rec("ana", "x"), id: 5 })}\n`);
      await expect(createLocalBackend({ dataFile: file })).rejects.toThrow(`${file}:2: id: `);
      await writeFile(file, `${good("a")}\n`);
      const b = await createLocalBackend({ dataFile: file });
      expect(b.size).toBe(1);
      await expect(createLocalBackend({ dataFile: join(dir, "nope.jsonl") })).rejects.toMatchObject({
        name: "LocalDataError",
        code: "unreadable",
      });
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe("local backend: search", () => {
  const b = createLocalBackendFromRecords([
    rec("ana", "Ana usually orders an oat milk flat white coffee.", { id: "c1" }),
    rec("ana", "The coffee machine at the office is broken again.", { id: "c2" }),
    rec("ana", "Ana is allergic to peanuts.", { id: "p1", tags: ["health"] }),
    rec("ana", "Please book a hotel in Lisbon.", {
      id: "l1",
      type: "message",
      role: "user",
      messageId: "m-9",
    }),
    rec("ana", "what do you mean by that", { id: "w1" }),
    rec("sam", "Sam drinks black coffee and is allergic to nothing.", { id: "s1" }),
  ]);

  test("keyword matches exact terms only; hybrid adds prefix and fuzzy; semantic is served like hybrid", async () => {
    expect(await ids(search(b, "ana", "coff", "keyword"))).toEqual([]);
    expect(await ids(search(b, "ana", "alergic", "keyword"))).toEqual([]);
    expect((await ids(search(b, "ana", "coff", "hybrid"))).sort()).toEqual(["c1", "c2"]);
    expect(await ids(search(b, "ana", "alergic", "hybrid"))).toEqual(["p1"]);
    expect(await search(b, "ana", "coff alergic", "semantic")).toEqual(
      await search(b, "ana", "coff alergic", "hybrid"),
    );
    expect((await ids(search(b, "ana", "coffee", "keyword"))).sort()).toEqual(["c1", "c2"]);
  });

  test("short terms stay exact in hybrid: no prefix under 3 characters, no fuzzy under 5", async () => {
    expect(await ids(search(b, "ana", "oa"))).toEqual([]);
    expect(await ids(search(b, "ana", "mikl"))).toEqual([]);
    expect(await ids(search(b, "ana", "hotl"))).toEqual([]);
    expect(await ids(search(b, "ana", "hotel"))).toEqual(["l1"]);
  });

  test("OR semantics; tags are searched; candidates carry backend, sourceId, role and messageId", async () => {
    expect((await ids(search(b, "ana", "health Lisbon"))).sort()).toEqual(["l1", "p1"]);
    const [c] = await search(b, "ana", "Lisbon");
    expect(c).toEqual({
      id: "l1",
      content: "Please book a hotel in Lisbon.",
      score: expect.any(Number),
      timestamp: expect.stringMatching(/Z$/),
      sessionId: "s-1",
      messageId: "m-9",
      type: "message",
      role: "user",
      backend: "local",
      sourceId: "l1",
      backendScore: expect.any(Number),
    });
  });

  test("a user never sees another user's memories, and unknown users get nothing", async () => {
    expect((await ids(search(b, "ana", "coffee allergic"))).every((id) => id !== "s1")).toBe(true);
    expect(await ids(search(b, "sam", "coffee allergic office peanuts"))).toEqual(["s1"]);
    expect(await search(b, "nobody", "coffee")).toEqual([]);
    await expect(b.userExists("sam", ctl())).resolves.toBe(true);
    await expect(b.userExists("SAM", ctl())).resolves.toBe(false);
  });

  test("another user's memories do not change a user's scores", async () => {
    const records = [rec("ana", "coffee with oat milk"), rec("ana", "tea")];
    const mk = () => createLocalBackendFromRecords(records);
    const alone = mk();
    const shared = mk();
    for (let i = 0; i < 30; i++) shared.add({ ...rec("sam", `coffee number ${i}`), id: undefined });
    const before = await search(alone, "ana", "coffee milk");
    expect(before.length).toBe(1);
    expect(await search(shared, "ana", "coffee milk")).toEqual(before);
  });

  test("function words are dropped from the query unless nothing else is left", async () => {
    expect(await ids(search(b, "ana", "what do I usually order?"))).toEqual(["c1"]);
    expect(await ids(search(b, "ana", "what do you mean"))).toEqual(["w1"]);
  });

  test("query and memories meet on their stems, in the memory's language (keyword search: no prefix, no fuzzy)", async () => {
    const b2 = createLocalBackendFromRecords([
      rec("ivy", "We went swimming at the lido on Sunday.", { id: "en1" }),
      rec("ivy", "She travelled to Rotterdam for the conference.", { id: "en2" }),
      rec("ivy", "Nous avons adopté un chien à la fourrière.", { id: "fr1" }),
      rec("ivy", "Adoptamos un perro en el refugio de la ciudad.", { id: "es1" }),
      rec("ivy", "Tags only.", { id: "t1", tags: ["gardening"] }),
    ]);
    expect(await ids(search(b2, "ivy", "when did we swim?", "keyword"))).toEqual(["en1"]);
    expect(await ids(search(b2, "ivy", "is she travelling a lot?", "keyword"))).toEqual(["en2"]);
    expect(await ids(search(b2, "ivy", "où sont les chiens ?", "keyword"))).toEqual(["fr1"]);
    expect(await ids(search(b2, "ivy", "¿dónde están los perros?", "keyword"))).toEqual(["es1"]);
    // "adopté" and "adoptamos" share their stem.
    expect(new Set(await ids(search(b2, "ivy", "¿qué adoptaron?", "keyword")))).toEqual(
      new Set(["fr1", "es1"]),
    );
    expect(await ids(search(b2, "ivy", "my garden", "keyword"))).toEqual(["t1"]);
  });

  test("a French, Spanish or German query drops its own function words, an English one keeps theirs", async () => {
    const fr = createLocalBackendFromRecords([
      rec("elo", "La réunion de lundi est annulée.", { id: "f1" }),
      rec("elo", "Le mariage de mon frère aura lieu le 21 juin.", { id: "f2" }),
      rec("elo", "Die Wohnung in der Südstadt war zu teuer.", { id: "d1" }),
      rec("elo", "My son started cello lessons.", { id: "e1" }),
    ]);
    // "la", "de", "du" no longer match the meeting (nor "die" the German flat).
    expect(await ids(search(fr, "elo", "la date du mariage de Julien"))).toEqual(["f2"]);
    expect(await ids(search(fr, "elo", "Wann ist die Hochzeit in der Kirche?"))).toEqual([]);
    expect(await ids(search(fr, "elo", "When did my son start?"))).toEqual(["e1"]);
  });

  test("only the first 64 query terms are searched", async () => {
    // Terms are cut to six characters, so the fillers differ in their first ones.
    const filler = Array.from({ length: 70 }, (_, i) => `f${i}ller`).join(" ");
    expect(await ids(search(b, "ana", `Lisbon ${filler}`))).toEqual(["l1"]);
    expect(await ids(search(b, "ana", `${filler} Lisbon`))).toEqual([]);
  });

  test("results: scores in [0,1], descending, ties by id, at most limit, independent of limit", async () => {
    const t = createLocalBackendFromRecords([
      rec("u", "same words here", { id: "b" }),
      rec("u", "same words here", { id: "a" }),
      rec("u", "same but longer words here and more"),
    ]);
    const all = await search(t, "u", "same words");
    expect(all.map((c) => c.id).slice(0, 2)).toEqual(["a", "b"]);
    for (const [i, c] of all.entries()) {
      expect(c.score).toBeGreaterThanOrEqual(0);
      expect(c.score).toBeLessThanOrEqual(1);
      if (i > 0) expect(c.score).toBeLessThanOrEqual(all[i - 1]?.score ?? 1);
    }
    const one = await search(t, "u", "same words", "hybrid", 1);
    expect(one).toEqual(all.slice(0, 1));
    expect(await search(t, "u", "same words", "hybrid", 0)).toEqual([]);
  });
});

describe("local backend: reply turns (retrieval.replies, retrieval.questionAt)", () => {
  const session = [
    rec("ben", "Aisha: I know! Remind me which van company you booked? I need to tell the manager.", {
      id: "m1",
      sessionId: "s-move",
      timestamp: "2024-06-01T10:00:00Z",
    }),
    rec("ben", "Ben: Swift Hound Removals, they come at eight.", {
      id: "m2",
      sessionId: "s-move",
      timestamp: "2024-06-01T10:01:00Z",
    }),
    rec("ben", "Aisha: Which van company did you book?", {
      id: "m3",
      sessionId: "s-other",
      timestamp: "2024-06-02T10:00:00Z",
    }),
    rec("ben", "Ben: Not yet, I will call them.", {
      id: "m4",
      sessionId: "s-other",
      timestamp: "2024-06-02T10:01:00Z",
    }),
  ];
  const replyPolicy = (questionAt?: "end" | "anywhere") =>
    policySchema.parse({ name: "replies", version: 1, retrieval: { replies: true, questionAt } });
  const find = (questionAt?: "end" | "anywhere") =>
    createLocalBackendFromRecords(session).search({
      userId: "ben",
      query: "van company",
      limit: 2,
      searchType: "hybrid",
      policy: replyPolicy(questionAt),
      signal: signal(),
    });

  test("end (the default): only a turn ending with a question brings its reply", async () => {
    const got = await find();
    expect(got.map((c) => [c.id, c.origin ?? "search"])).toEqual([
      ["m3", "search"],
      ["m4", "reply"],
      ["m1", "search"],
    ]);
  });

  test("anywhere: a question inside a turn brings its reply too, scored as its question", async () => {
    const got = await find("anywhere");
    expect(got.map((c) => [c.id, c.origin ?? "search"])).toEqual([
      ["m3", "search"],
      ["m4", "reply"],
      ["m1", "search"],
      ["m2", "reply"],
    ]);
    const m1 = got.find((c) => c.id === "m1");
    expect(got.find((c) => c.id === "m2")).toMatchObject({ replyTo: "m1", score: m1?.score });
  });
});

describe("local backend: following turns (retrieval.following)", () => {
  // The usher turn names the topic; the answer ("Marlow & Finch") follows two turns later without its words.
  const at = (minute: number) => `2024-07-01T18:${String(minute).padStart(2, "0")}:00Z`;
  const turn = (id: string, content: string, minute: number, sessionId = "s-wedding") =>
    rec("dan", content, { id, sessionId, timestamp: at(minute) });
  const session = [
    turn("w1", "Daniel: Anjali gets married in August and I've been asked to be an usher.", 0),
    turn("w2", "Priya: Do you still have the suit from Tom's wedding?", 1),
    turn("w3", "Daniel: That one is long gone. I bought a navy one from Marlow & Finch yesterday.", 2),
    turn("w4", "Priya: Lovely. The usher rota goes out in July, the usher list too.", 3),
    turn("w5", "Daniel: Good, the rota then.", 4),
    turn("o1", "Daniel: The usher at the cinema was rude.", 0, "s-cinema"),
  ];
  const policy = (retrieval: Record<string, unknown>) =>
    policySchema.parse({ name: "following", version: 1, retrieval });
  const find = (retrieval: Record<string, unknown>, limit = 2) =>
    createLocalBackendFromRecords(session).search({
      userId: "dan",
      query: "Anjali married usher",
      limit,
      searchType: "hybrid",
      policy: policy(retrieval),
      signal: signal(),
    });
  const shape = (got: Candidate[]) => got.map((c) => [c.id, c.origin ?? "search", c.replyTo ?? ""]);

  test("absent: only what the search found", async () => {
    const got = await find({});
    expect(got.every((c) => c.origin === undefined)).toBe(true);
    expect(got.map((c) => c.id)).not.toContain("w3");
  });

  test("the first `top` hits bring the next `turns` turns of their session, scored as the hit", async () => {
    const plain = await find({});
    const got = await find({ following: { top: 1, turns: 2 } });
    const first = plain[0];
    if (first === undefined) throw new Error("a hit expected");
    const [hit, ...brought] = got.slice(0, 3);
    expect(hit?.id).toBe(first.id);
    const after = session.slice(session.findIndex((r) => r.id === first.id) + 1, undefined);
    const expected = after.filter((r) => r.sessionId === first.sessionId).slice(0, 2);
    expect(brought.map((c) => c.id)).toEqual(expected.map((r) => r.id));
    for (const c of brought) {
      expect(c).toMatchObject({ origin: "reply", score: first.score });
      expect(c.replyTo).toBeUndefined();
      expect(c.backendScore).toBeUndefined();
    }
    // The second hit brings none (top 1), and the fetch size still counts only what the search found.
    expect(got.filter((c) => c.origin === undefined)).toEqual(plain);
  });

  test("a following turn that asks a question brings its reply (with replies on), which holds the answer", async () => {
    const got = await find({ replies: true, following: { top: 1, turns: 1 } });
    expect(shape(got).slice(0, 3)).toEqual([
      ["w1", "search", ""],
      ["w2", "reply", ""],
      ["w3", "reply", "w2"],
    ]);
  });

  test("a turn the search found lower is moved up after its hit, once; the same whatever the fetch size", async () => {
    const small = await find({ following: { top: 2, turns: 3 } }, 2);
    const large = await find({ following: { top: 2, turns: 3 } }, 6);
    const ids = large.map((c) => c.id);
    expect(new Set(ids).size).toBe(ids.length);
    expect(large.slice(0, small.length)).toEqual(small);
  });
});

describe("local backend: score normalization", () => {
  test("monotone in the raw score and within [0, 1]", () => {
    const ref = referenceScore([1, 3], 10);
    let prev = -1;
    for (let raw = 0; raw < 500; raw += 0.37) {
      const s = normalizeScore(raw, ref);
      expect(s).toBeGreaterThanOrEqual(prev);
      expect(s).toBeGreaterThanOrEqual(0);
      expect(s).toBeLessThanOrEqual(1);
      prev = s;
    }
    expect(normalizeScore(Number.NaN, ref)).toBe(0);
    expect(normalizeScore(5, 0)).toBe(0);
  });

  test("calibration: the ideal memory scores 2/3, covering one of two equally rare terms scores 1/2", async () => {
    const t = createLocalBackendFromRecords([
      rec("u", "alpha gamma", { id: "a" }),
      rec("u", "beta delta", { id: "b" }),
      rec("u", "epsilon zeta", { id: "e" }),
    ]);
    expect((await search(t, "u", "alpha", "keyword"))[0]?.score).toBeCloseTo(2 / 3, 5);
    expect((await search(t, "u", "alpha beta", "keyword")).map((c) => c.score)).toEqual([0.5, 0.5]);
    // A query word no memory contains does not lower the score.
    expect((await search(t, "u", "alpha quantum", "keyword"))[0]?.score).toBeCloseTo(2 / 3, 5);
  });
});

describe("local backend: CJK and Unicode", () => {
  test("the default tokenizer would keep a Chinese sentence as one term; ours emits bigrams", () => {
    expect("我每天早上喝咖啡".split(/[\n\r\p{Z}\p{P}]+/u)).toEqual(["我每天早上喝咖啡"]);
    expect(terms("我每天喝咖啡")).toEqual(["我每", "每天", "天喝", "喝咖", "咖啡"]);
    expect(terms("커피를 Lisbon에서 茶")).toEqual(["커피", "피를", "lisbon", "에서", "茶"]);
    expect(terms("ｃｏｆｆｅｅ\tTEA")).toEqual(["coffee", "tea"]);
  });

  test("Korean and Chinese queries find Korean and Chinese memories", async () => {
    const t = createLocalBackendFromRecords([
      rec("min-jun", "민준은 매일 아침 커피를 마신다.", { id: "k1" }),
      rec("min-jun", "부산 출장 호텔을 예약해 줘.", { id: "k2" }),
      rec("wei", "我每天早上喝一杯拿铁咖啡，不加糖。", { id: "z1" }),
      rec("wei", "下个月去上海出差。", { id: "z2" }),
    ]);
    for (const type of ["keyword", "hybrid"] as const) {
      expect(await ids(search(t, "min-jun", "커피", type))).toEqual(["k1"]);
      expect(await ids(search(t, "min-jun", "호텔 예약", type))).toEqual(["k2"]);
      expect(await ids(search(t, "wei", "咖啡", type))).toEqual(["z1"]);
      expect(await ids(search(t, "wei", "上海出差", type))).toEqual(["z2"]);
    }
  });
});

describe("local backend: errors", () => {
  const b = createLocalBackendFromRecords([rec("ana", "coffee")]);
  const aborted = () => AbortSignal.abort();

  test("an already-aborted signal is unavailable for every call", async () => {
    const req = { userId: "ana", query: "coffee", limit: 5, searchType: "hybrid" as const, policy };
    for (const p of [
      b.search({ ...req, signal: aborted() }),
      b.userExists("ana", { signal: aborted() }),
      b.ping({ signal: aborted() }),
    ]) {
      await expect(p).rejects.toMatchObject({ name: "BackendError", kind: "unavailable", backend: "local" });
    }
    await expect(b.ping(ctl())).resolves.toBeUndefined();
  });

  test("an index failure becomes BackendError(unavailable) without the query in the message", async () => {
    const spy = jest.spyOn(b, "searchUser").mockImplementation(() => {
      throw new TypeError("boom");
    });
    try {
      const err = await search(b, "ana", "coffee").then(
        () => null,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(BackendError);
      expect(err).toMatchObject({ kind: "unavailable", retryable: true, backend: "local" });
      expect((err as BackendError).message).not.toContain("coffee");
    } finally {
      spy.mockRestore();
    }
  });
});

describe("local backend: store operations keep the index in sync", () => {
  test("add assigns id and timestamp, is searchable at once, and returns a frozen record", async () => {
    const b = createLocalBackendFromRecords([], {
      newId: () => "gen-1",
      now: () => new Date(Date.UTC(2026, 4, 1)),
    });
    await expect(b.userExists("ana", ctl())).resolves.toBe(false);
    const r = b.add({
      userId: "ana",
      content: "Ana likes cortado",
      type: "fact",
      sessionId: "s",
      tags: ["coffee"],
    });
    expect(r).toMatchObject({ id: "gen-1", timestamp: "2026-05-01T00:00:00.000Z" });
    expect(Object.isFrozen(r) && Object.isFrozen(r.tags)).toBe(true);
    expect(await ids(search(b, "ana", "cortado"))).toEqual(["gen-1"]);
    await expect(b.userExists("ana", ctl())).resolves.toBe(true);
    expect(b.get("gen-1")).toBe(r);
  });

  test("add rejects invalid records and duplicate ids", () => {
    const b = createLocalBackendFromRecords([rec("ana", "x", { id: "a" })]);
    expect(() => b.add({ ...rec("sam", "y"), id: "a" })).toThrow(
      expect.objectContaining({ code: "duplicate_id", message: 'add: id: duplicate id "a"' }),
    );
    expect(() => b.add({ ...rec("sam", "y"), timestamp: "yesterday" })).toThrow(
      expect.objectContaining({
        code: "invalid_record",
        message: expect.stringMatching(/^add: timestamp: /),
      }),
    );
    expect(b.size).toBe(1);
  });

  test("delete removes from the index; the last memory of a user removes the user; ids can be reused", async () => {
    const b = createLocalBackendFromRecords([
      rec("ana", "zebra crossing", { id: "z" }),
      rec("ana", "lion", { id: "l" }),
    ]);
    expect(b.delete("z")).toBe(true);
    expect(b.delete("z")).toBe(false);
    expect(await search(b, "ana", "zebra")).toEqual([]);
    b.add({ ...rec("ana", "giraffe"), id: "z" });
    expect(await ids(search(b, "ana", "giraffe"))).toEqual(["z"]);
    expect(await search(b, "ana", "zebra crossing")).toEqual([]);
    b.delete("z");
    b.delete("l");
    await expect(b.userExists("ana", ctl())).resolves.toBe(false);
    expect(b.size).toBe(0);
  });

  test("list pages newest first, per user or all users", () => {
    const b = createLocalBackendFromRecords([
      rec("ana", "old", { id: "o", timestamp: "2026-01-01T00:00:00Z" }),
      rec("ana", "new", { id: "n", timestamp: "2026-06-01T00:00:00+05:00" }),
      rec("ana", "mid", { id: "m", timestamp: "2026-03-01T00:00:00Z" }),
      rec("sam", "s", { id: "s", timestamp: "2026-02-01T00:00:00Z" }),
    ]);
    const page = (u: string | undefined, limit: number, offset: number) =>
      b.list(u, { limit, offset }).items.map((r) => r.id);
    expect(page("ana", 10, 0)).toEqual(["n", "m", "o"]);
    expect(page("ana", 1, 1)).toEqual(["m"]);
    expect(page(undefined, 10, 0)).toEqual(["n", "m", "s", "o"]);
    expect(b.list("ana", { limit: 1 }).total).toBe(3);
    expect(b.list("nobody").items).toEqual([]);
  });
});

describe("local backend: config/demo-memories.jsonl", () => {
  test("loads, and serves each demo user in their language", async () => {
    const b = await createLocalBackend({ dataFile: join(__dirname, "../../config/demo-memories.jsonl") });
    expect(b.size).toBeGreaterThanOrEqual(35);
    const coffee = await search(b, "ana", "coffee");
    expect(coffee.length).toBeGreaterThan(3);
    expect(coffee.every((c) => c.id.startsWith("ana-") && c.score >= 0.3)).toBe(true);
    expect((await search(b, "min-jun", "커피")).length).toBeGreaterThan(0);
    expect((await search(b, "wei", "咖啡")).length).toBeGreaterThan(0);
    expect((await search(b, "sam", "coffee")).map((c) => c.id)).toEqual(["sam-001"]);
  });
});
