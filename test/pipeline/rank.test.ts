import { runPipeline } from "../../src/pipeline";
import { analyzeQuery } from "../../src/pipeline/query/analyze";
import { rankStage } from "../../src/pipeline/stages/rank";
import { dynamicK, selectStage } from "../../src/pipeline/stages/select";
import { LOWER_CASE_TO_ASCII } from "../../src/pipeline/text/ascii";
import { compilePolicy } from "../../src/policy/compile";
import type { PolicyInput } from "../../src/policy/schema";
import { makeCandidate, makeItem, makePolicy } from "../helpers/items";

const TURN = Date.parse("2024-06-19T12:00:00Z");
const weights = makePolicy().ranking.weights;
const msg = (id: string, content: string, extra: Record<string, unknown> = {}) =>
  makeItem({ id, content, type: "message", score: 0.5, ...extra });

describe("rank stage: multi-signal relevance", () => {
  test("the speaker the question names outranks the other speaker saying the same words", () => {
    const items = [
      msg("a", "Tom: I ran the half marathon in Bristol, it was brutal."),
      msg("b", "Maya: I ran the half marathon in Bristol last spring, never again."),
    ];
    const { items: out, ranking } = rankStage(
      items,
      analyzeQuery("Where did Maya run the half marathon?", TURN),
      weights,
    );
    expect(out.map((i) => i.id)).toEqual(["b", "a"]);
    expect(ranking[0]?.signals.entity).toBe(1);
    expect(ranking[1]?.signals.entity).toBe(0);
  });

  test("a name is found in text outside ASCII as in its lower case, without lower-casing what cannot hold it", () => {
    // The rank stage lower-cases a memory outside ASCII only when the name (A–Z folded) or one of these is in it.
    const toAscii: string[] = [];
    for (let cp = 0x80; cp <= 0x10ffff; cp++) {
      if (cp >= 0xd800 && cp <= 0xdfff) continue;
      const lower = String.fromCodePoint(cp).toLowerCase();
      let ascii = false;
      for (let k = 0; k < lower.length; k++) if (lower.charCodeAt(k) < 128) ascii = true;
      if (ascii) toAscii.push(String.fromCodePoint(cp));
    }
    expect(toAscii).toEqual([...LOWER_CASE_TO_ASCII]);
    const items = [
      msg("kelvin", "Ana: I met \u212Aarl in São Paulo, he says hi."),
      msg("upper", "Ana: KARL moved to Zürich last year."),
      msg("none", "Ana: Nobody called in São Paulo today."),
      msg("word", "Ana: Karlsruhe was lovely, café included."),
    ];
    const { ranking } = rankStage(items, analyzeQuery("Where does Karl live now?", TURN), weights);
    const entity = Object.fromEntries(ranking.map((r) => [r.id, r.signals.entity]));
    expect(entity).toEqual({ kelvin: 0.6, upper: 0.6, none: 0, word: 0 });
  });

  test("entitySpecificity: a name most candidates carry (the conversation's speaker) counts for little", () => {
    const items = [
      msg("s1", "Ben: Long day, I'm shattered."),
      msg("s2", "Ben: Biscuit ate my sandwich again."),
      msg("s3", "Ben: The gym was packed tonight."),
      msg("ans", "Aisha: You go to The Crux Wall for climbing, right?"),
    ];
    const analysis = analyzeQuery("Which climbing gym does Ben go to?", TURN);
    const plain = rankStage(items, analysis, weights);
    const specific = rankStage(items, analysis, weights, undefined, undefined, { entitySpecificity: true });
    const entity = (r: typeof plain) => Object.fromEntries(r.ranking.map((x) => [x.id, x.signals.entity]));
    // Ben speaks in 3 of the 4 candidates: his match counts 1 − 3/4.
    expect(entity(plain).s1).toBe(1);
    expect(entity(specific).s1).toBe(0.25);
    expect(entity(specific).ans).toBe(0);
    expect(specific.trace.detail?.entitySpecificity).toBe("ben 0.25");
    expect(plain.trace.detail?.entitySpecificity).toBeUndefined();
    // Off (the default): the signal is what it was.
    expect(plain.ranking.map((r) => r.relevance)).toEqual(
      rankStage(items, analysis, weights).ranking.map((r) => r.relevance),
    );
    expect(specific.ranking[0]?.id).toBe("ans");
    // A name only mentioned in the text, however often, keeps its weight.
    const place = [
      msg("p1", "Lucía: I move to Rotterdam in March."),
      msg("p2", "Lucía: Rotterdam is rainy."),
      msg("p3", "Andrés: Rotterdam again?"),
    ];
    const moved = rankStage(
      place,
      analyzeQuery("When do I move to Rotterdam?", TURN),
      weights,
      undefined,
      undefined,
      {
        entitySpecificity: true,
      },
    );
    expect(moved.ranking.map((r) => r.signals.entity)).toEqual([0.6, 0.6, 0.6]);
    expect(moved.trace.detail?.entitySpecificity).toBe("rotterdam 1");
  });

  test("a time scope prefers memories inside it", () => {
    const items = [
      msg("old", "Tom: I cooked a big paella for everyone.", { timestamp: "2024-03-02T10:00:00Z" }),
      msg("new", "Tom: I cooked a big paella for the neighbours.", { timestamp: "2024-06-15T10:00:00Z" }),
    ];
    const analysis = analyzeQuery("What did Tom cook last weekend?", TURN);
    expect(analysis.timeScope?.phrase).toBe("last weekend");
    const { items: out, ranking } = rankStage(items, analysis, weights);
    expect(out[0]?.id).toBe("new");
    expect(ranking[0]?.signals.time).toBe(1);
    expect(ranking[1]?.signals.time).toBeLessThan(0.01);
  });

  test("'before the wedding' is resolved against the first memory that mentions the wedding", () => {
    const items = [
      msg("w", "Maya: The wedding was magical, the cake was perfect.", { timestamp: "2024-05-10T10:00:00Z" }),
      msg("j1", "Maya: I work at Crumb and Co, the early shifts are rough.", {
        timestamp: "2024-02-01T10:00:00Z",
      }),
      msg("j2", "Maya: I work at Lumière now, much nicer hours.", { timestamp: "2024-06-01T10:00:00Z" }),
    ];
    const { ranking } = rankStage(
      items,
      analyzeQuery("Where did Maya work before the wedding?", TURN),
      weights,
    );
    const time = Object.fromEntries(ranking.map((r) => [r.id, r.signals.time]));
    expect(time.j1).toBe(1);
    expect(time.j2 ?? 1).toBeLessThan(1);
  });

  test("a reply ranks at least 0.95 × its question, and the selection puts it right after", () => {
    const items = [
      msg("q", "Tom: Did you ever name the puppy?", { score: 0.9 }),
      msg("r", "Maya: Pickle! He chewed my left sneaker already.", { score: 0.1, replyTo: "q" }),
      msg("x", "Maya: The puppy sleeps all day, honestly.", { score: 0.6 }),
    ];
    const analysis = analyzeQuery("What is the name of Maya's puppy?", TURN);
    const ranked = rankStage(items, analysis, weights);
    const rel = ranked.context.relevance;
    expect(rel.get("r") ?? 0).toBeGreaterThanOrEqual(Math.round((rel.get("q") ?? 0) * 0.95 * 1e6) / 1e6);
    const selected = selectStage(ranked.items, rel, { lambda: 1, k: 3, reserveUpTo: 3 });
    const ids = selected.items.map((i) => i.id);
    expect(ids.indexOf("r")).toBe(ids.indexOf("q") + 1);
  });

  test("signals: false ranks alike and only leaves out the per-memory signal list", () => {
    const items = [
      msg("q", "Tom: Did you ever name the puppy?", { score: 0.9 }),
      msg("r", "Maya: Pickle! He chewed my left sneaker already.", { score: 0.1, replyTo: "q" }),
      msg("x", "Maya: The puppy sleeps all day, honestly.", { score: 0.6 }),
      msg("y", "Ben: Maya said the puppy is called Pickle.", { score: 0.3 }),
    ];
    const analysis = analyzeQuery("What is the name of Maya's puppy?", TURN);
    const full = rankStage(items, analysis, weights);
    const lean = rankStage(items, analysis, weights, undefined, undefined, { signals: false });
    expect(lean.ranking).toEqual([]);
    expect(lean.items).toEqual(full.items);
    expect(lean.context).toEqual(full.context);
    expect(lean.trace).toEqual(full.trace);
    expect(full.ranking.map((r) => [r.id, r.rank, r.relevance])).toEqual(
      full.items.map((item, i) => [item.id, i + 1, full.context.relevance.get(item.id)]),
    );
  });
});

describe("select stage: MMR diversity and dynamic K", () => {
  const items = [
    msg("a", "Maya: I love my new job at the bakery, the croissants are amazing."),
    msg("b", "Maya: I really love the new job at the bakery, croissants amazing."),
    msg("c", "Maya: Tom and I went sailing on the lake on Sunday."),
  ];
  const relevance = new Map([
    ["a", 0.9],
    ["b", 0.88],
    ["c", 0.5],
  ]);

  test("λ = 1 keeps rank order; a lower λ takes a different memory before the near-duplicate", () => {
    const plain = selectStage(items, relevance, { lambda: 1, k: 2, reserveUpTo: 2 });
    expect(plain.items.map((i) => i.id)).toEqual(["a", "b"]);
    const diverse = selectStage(items, relevance, { lambda: 0.5, k: 2, reserveUpTo: 2 });
    expect(diverse.items.map((i) => i.id)).toEqual(["a", "c"]);
    expect(diverse.trace.changes).toEqual([{ id: "b", reason: "beyond_topK" }]);
  });

  test("beyond K: reserve for budget.fill", () => {
    const out = selectStage(items, relevance, { lambda: 1, k: 1, reserveUpTo: 3 });
    expect(out.items.map((i) => [i.id, i.reserve === true])).toEqual([
      ["a", false],
      ["b", true],
      ["c", true],
    ]);
  });

  test("K follows the question's complexity", () => {
    const simple = dynamicK(analyzeQuery("What is Pickle?", TURN), 4, 16);
    const complex = dynamicK(
      analyzeQuery("Which cities did Tom and Maya both visit for work last year?", TURN),
      4,
      16,
    );
    expect(simple).toBeLessThan(complex);
    expect(simple).toBeGreaterThanOrEqual(4);
    expect(complex).toBeLessThanOrEqual(16);
  });
});

const ranked = (patch: Partial<PolicyInput> = {}) =>
  compilePolicy(
    makePolicy({
      retrieval: { topK: 10, minScore: 0, clipSentences: 1, maxTokens: 400 },
      clip: { mode: "relevant", answerAware: true, speakerLabel: true, maxTokensPerMemory: 30 },
      ranking: { enabled: true },
      sufficiency: { enabled: true },
      ...patch,
    }),
  );

describe("the pipeline with the ranking sections", () => {
  const memories = [
    makeCandidate({
      id: "p1",
      type: "message",
      content:
        "Maya: Work was chaos again. I signed up for the pottery class at Clayhouse. It was raining all day.",
      timestamp: "2024-03-12T18:00:00Z",
    }),
    makeCandidate({
      id: "p2",
      type: "message",
      content: "Tom: Pottery sounds fun. My sister tried it once and hated the clay.",
      timestamp: "2024-03-12T18:01:00Z",
    }),
  ];

  test("answer-aware clipping keeps the sentence with the place, with the speaker label", () => {
    const result = runPipeline(
      {
        userId: "u",
        query: "Where does Maya take pottery classes?",
        candidates: memories,
        backend: "t",
        turnTime: TURN,
      },
      ranked(),
    );
    const p1 = result.memories.find((m) => m.id === "p1");
    expect(p1?.content).toBe("Maya: ... I signed up for the pottery class at Clayhouse. ...");
    expect(result.query?.answerType).toBe("place");
    expect(result.appliedFilters).toEqual([
      "score_threshold",
      "deduplication",
      "rank",
      "select",
      "clip:relevant",
      "token_budget",
    ]);
  });

  test("sufficiency: covered is sufficient; a name nothing mentions is not", () => {
    const covered = runPipeline(
      {
        userId: "u",
        query: "Where does Maya take pottery classes?",
        candidates: memories,
        backend: "t",
        turnTime: TURN,
      },
      ranked(),
    );
    expect(covered.sufficiency?.verdict).toBe("sufficient");
    const unknown = runPipeline(
      {
        userId: "u",
        query: "Where does Lucas take judo classes?",
        candidates: memories,
        backend: "t",
        turnTime: TURN,
      },
      ranked(),
    );
    expect(unknown.sufficiency?.verdict).not.toBe("sufficient");
    expect(unknown.sufficiency?.missing).toEqual(expect.arrayContaining(["Lucas"]));
    const none = runPipeline(
      { userId: "u", query: "Where?", candidates: [], backend: "t", turnTime: TURN },
      ranked(),
    );
    expect(none.sufficiency?.verdict).toBe("insufficient");
  });

  test("a policy without the new sections shapes as before: no query analysis, no certificate, seed 000's stages", () => {
    const plain = compilePolicy(makePolicy({ retrieval: { minScore: 0 } }));
    const result = runPipeline(
      { userId: "u", query: "pottery", candidates: memories, backend: "t", turnTime: TURN },
      plain,
    );
    expect(result.query).toBeUndefined();
    expect(result.sufficiency).toBeUndefined();
    expect(result.appliedFilters).toEqual([
      "score_threshold",
      "deduplication",
      "interleave:alternate",
      "clip",
      "token_budget",
    ]);
  });

  test("explain shows the query analysis and each memory's signals", () => {
    const result = runPipeline(
      {
        userId: "u",
        query: "Where does Maya take pottery classes?",
        candidates: memories,
        backend: "t",
        turnTime: TURN,
        explain: true,
      },
      ranked(),
    );
    const rank = result.trace.find((t) => t.stage === "rank");
    expect(rank?.detail).toMatchObject({ intent: "factual", answerType: "place" });
    expect(rank?.ranking?.[0]).toMatchObject({ id: "p1", rank: 1 });
    expect(Object.keys(rank?.ranking?.[0]?.signals ?? {})).toEqual(
      expect.arrayContaining(["backend", "lexical", "entity", "answer", "type"]),
    );
  });
});

describe("sufficiency without ranking", () => {
  test("redundancy is measured on the kept memories themselves", () => {
    const twins = [
      makeCandidate({ id: "a", content: "Maya loves the new bakery job, the croissants are amazing." }),
      makeCandidate({ id: "b", content: "Maya really loves the new bakery job; croissants amazing!" }),
    ];
    const compiled = compilePolicy(
      makePolicy({ retrieval: { minScore: 0 }, sufficiency: { enabled: true } }),
    );
    const result = runPipeline(
      { userId: "u", query: "Where does Maya work?", candidates: twins, backend: "t", turnTime: TURN },
      compiled,
    );
    expect(result.sufficiency?.redundancy ?? 0).toBeGreaterThan(0.4);
  });
});
