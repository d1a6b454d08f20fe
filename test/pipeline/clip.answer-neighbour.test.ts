/**
 * `clip.answerNeighbour` (docs/policy.md#clip): under a tight per-memory token allowance the sentence kept is the
 * one holding an answer — the kind asked for, or a name, number or title the question does not say — rather than
 * the one repeating the question's words. Through the pipeline, with the long golden set's own turns.
 */
import fc from "fast-check";
import { runPipeline } from "../../src/pipeline";
import { answerValue } from "../../src/pipeline/stages/clip";
import { holdsNewSpecific, questionKeys } from "../../src/pipeline/text/specifics";
import type { Candidate } from "../../src/pipeline/types";
import { compilePolicy } from "../../src/policy/compile";
import { type PolicyInput, policySchema, TOKENIZERS } from "../../src/policy/schema";
import { makeCandidate, makePolicy } from "../helpers/items";

const clipped = (answerNeighbour?: number, patch: Partial<PolicyInput> = {}) =>
  compilePolicy(
    makePolicy({
      tokenizer: "o200k_base",
      retrieval: { topK: 10, minScore: 0, clipSentences: 3, maxTokens: 450 },
      clip: {
        mode: "relevant",
        answerAware: true,
        speakerLabel: true,
        maxTokensPerMemory: 25,
        ...(answerNeighbour === undefined ? {} : { answerNeighbour }),
      },
      ...patch,
    }),
  );

function shape(query: string, contents: string[], answerNeighbour?: number, explain = false) {
  const candidates = contents.map((content, i) =>
    makeCandidate({ id: `m${i}`, type: "message", content, score: 0.9 - i / 100 }),
  );
  return runPipeline(
    { userId: "u", query, candidates, backend: "t", ...(explain ? { explain: true } : {}) },
    clipped(answerNeighbour),
  );
}

const contentOf = (query: string, content: string, answerNeighbour?: number) =>
  shape(query, [content], answerNeighbour).memories[0]?.content;

describe("clip.answerNeighbour through the pipeline", () => {
  const wedding =
    "Ben: Oh, before I forget, Chloe rang. She and Raj finally picked a date for the wedding, it's the 14th of September.";

  test("a 'when' question keeps the sentence after the match that holds the date", () => {
    const query = "When does Chloe get married?";
    // Without it: the sentence that names Chloe, and the date is clipped out.
    expect(contentOf(query, wedding)).toBe("Ben: Oh, before I forget, Chloe rang. ...");
    expect(contentOf(query, wedding, 0.6)).toBe(
      "Ben: ... She and Raj finally picked a date for the wedding, it's the 14th of September.",
    );
  });

  test("a 'where' question's reply turn keeps the place, not the small talk its label matched", () => {
    const reply =
      "Hana: He loved it. We drove out to the lighthouse at Point Carrow and he took about three hundred photos of seagulls.";
    const query = "Where did Hana take her brother Kenji on a day trip?";
    expect(contentOf(query, reply)).toBe("Hana: He loved it. ...");
    expect(contentOf(query, reply, 0.6)).toContain("at Point Carrow");
  });

  test("a name the question does not say counts less than the kind asked for: it takes a higher weight", () => {
    const tern =
      "Grace: She's called Tern, after the little seabirds. The vicar had called her Holy Mackerel, which I couldn't bear.";
    const query = "What was Tern's name before Grace bought her?";
    expect(contentOf(query, tern)).toBe("Grace: She's called Tern, after the little seabirds. ...");
    // 0.5 carried from the match + 0.6 × 0.75 for the name: just short of the match itself.
    expect(contentOf(query, tern, 0.6)).toBe("Grace: She's called Tern, after the little seabirds. ...");
    expect(contentOf(query, tern, 1)).toBe(
      "Grace: ... The vicar had called her Holy Mackerel, which I couldn't bear.",
    );
  });

  test("a match that holds the kind asked for itself stays ahead of its neighbour", () => {
    const race =
      "Tom: The Spring Dash along the river path finished in 47:12 this morning. My legs are jelly and Jess laughed at me.";
    expect(contentOf("How long did Tom take for the Spring Dash?", race, 0.6)).toBe(
      "Tom: The Spring Dash along the river path finished in 47:12 this morning. ...",
    );
  });

  test("weight 0 is the same as unset: same bytes", () => {
    const query = "When does Chloe get married?";
    expect(shape(query, [wedding], 0).memories).toEqual(shape(query, [wedding]).memories);
  });

  test("explain shows the weight in the stage detail and what holding an answer added to a kept sentence", () => {
    const result = shape("When does Chloe get married?", [wedding], 0.6, true);
    const clip = result.trace?.find((t) => t.stage.startsWith("clip"));
    expect(clip?.detail).toMatchObject({ maxTokensPerMemory: 25, answerType: "time", answerNeighbour: 0.6 });
    const kept = clip?.changes.find((c) => c.id === "m0")?.sentences?.kept ?? [];
    expect(kept).toHaveLength(1);
    expect(kept[0]?.sentence).toBe(2);
    expect(kept[0]?.answer).toBeGreaterThan(0);
    // Without the field, no `answer` anywhere in the trace.
    const off = shape("When does Chloe get married?", [wedding], undefined, true);
    const offClip = off.trace?.find((t) => t.stage.startsWith("clip"));
    expect(offClip?.detail).not.toHaveProperty("answerNeighbour");
    for (const k of offClip?.changes.flatMap((c) => c.sentences?.kept ?? []) ?? [])
      expect(k).not.toHaveProperty("answer");
  });
});

describe("what counts as holding an answer", () => {
  test("a sentence asking something holds none; 'when' and 'how many' want their own kind only", () => {
    const keys = questionKeys("Where does Karim leave from?");
    const value = (sentence: string, type: Parameters<typeof answerValue>[3], fit: number, k = keys) =>
      answerValue(sentence, 0, sentence.length, type, fit, k);
    expect(value("Tu pars de Lyon ?", "place", 0.5)).toBe(0);
    expect(value("Are you going to Paris?", "place", 1)).toBe(0);
    expect(value('He asked "are you coming?"', "place", 1)).toBe(0);
    // A name the question does not say is no time.
    expect(value("We met Priya in Lisbon.", "time", 0, questionKeys("When did we meet?"))).toBe(0);
    expect(value("We met Priya in Lisbon.", "thing", 0, questionKeys("Who did we meet?"))).toBe(0.75);
    expect(value("We met Priya in Lisbon.", "place", 1)).toBe(1);
    // Read in place: only the sentence's span counts.
    const turn = "Karim: Did you go? We met Priya in Lisbon.";
    expect(answerValue(turn, 0, 18, "thing", 0, keys)).toBe(0);
    expect(answerValue(turn, 19, turn.length, "thing", 0, keys)).toBe(0.75);
  });

  test("new specifics: a number, a quoted title, a capitalized word inside the sentence, not the question's", () => {
    const keys = questionKeys("What did Zain and Sadia name their daughter?");
    expect(holdsNewSpecific("Aisha: we spent the whole of Saturday cuddling Noor.", keys)).toBe(1);
    expect(holdsNewSpecific("She's so tiny and she has Zain's frown already.", keys)).toBe(0);
    expect(holdsNewSpecific("Aisha: She loved it.", keys)).toBe(0); // the first word is capitalized anyway
    expect(holdsNewSpecific("It weighs 27 kilos now.", keys)).toBe(1);
    expect(holdsNewSpecific('she is reading "the long way home" again', keys)).toBe(1);
    expect(holdsNewSpecific("ça s'appelle « la voie », voilà", keys)).toBe(1);
    // A sentence of a memory, read in place: the label only at the memory's start, nothing past the span.
    const turn = "Ben: Zain called. Then Noor slept.";
    expect(holdsNewSpecific(turn, keys, 0, 17)).toBe(0);
    expect(holdsNewSpecific(turn, keys, 18, turn.length)).toBe(1);
    // "Yes, Bob." is no label of the sentence after it, and a label running past its sentence is none.
    expect(holdsNewSpecific("Yes, Bob. Note: later", keys, 0, 9)).toBe(1);
    expect(holdsNewSpecific("I said I would.", keys)).toBe(0);
  });
});

describe("answerNeighbour: the policy field", () => {
  test("validated: 0–2, a number; unset by default", () => {
    expect(makePolicy().clip.answerNeighbour).toBeUndefined();
    expect(makePolicy({ clip: { answerNeighbour: 0.6 } }).clip.answerNeighbour).toBe(0.6);
    for (const bad of [-0.1, 2.5, "high", Number.NaN])
      expect(policySchema.safeParse({ name: "p", version: 1, clip: { answerNeighbour: bad } }).success).toBe(
        false,
      );
  });
});

const SENTENCES = [
  "Chloe rang this morning.",
  "The wedding is on the 14th of September.",
  "We drove out to the lighthouse at Point Carrow.",
  "He loved it.",
  "Is it still raining there?",
  "It costs 40 dollars a month, which is fine.",
  "Biscuit stole a whole croissant off the counter!",
  "Elle s'appelle « Prise de Bec », à Gerland.",
  "我们七月二十日出发。",
  "Honestly wonderful",
];
const QUERIES = [
  "When does Chloe get married?",
  "Where did Hana take Kenji?",
  "How much does the rent cost?",
  "What did Biscuit steal?",
  "Comment s'appelle la salle ?",
  "Who called?",
  "她什么时候出发？",
];
const memories: fc.Arbitrary<Candidate[]> = fc
  .array(
    fc.record({
      speaker: fc.constantFrom("Ben", "Hana", "Karim", ""),
      sentences: fc.array(fc.constantFrom(...SENTENCES), { minLength: 1, maxLength: 6 }),
      score: fc.double({ min: 0, max: 1, noNaN: true }),
    }),
    { minLength: 1, maxLength: 25 },
  )
  .map((list) =>
    list.map((m, i) =>
      makeCandidate({
        id: `m${String(i).padStart(2, "0")}`,
        type: "message",
        content: `${m.speaker === "" ? "" : `${m.speaker}: `}${m.sentences.join(" ")}`,
        score: m.score,
      }),
    ),
  );

describe.each(TOKENIZERS)("answerNeighbour properties (%s)", (tokenizer) => {
  test("strict budget and allowance, same bytes in any order, weight 0 the same as unset", () => {
    fc.assert(
      fc.property(
        memories,
        fc.constantFrom(...QUERIES),
        fc.constantFrom(0.3, 0.6, 1, 2),
        fc.integer({ min: 10, max: 60 }),
        fc.integer({ min: 100, max: 450 }),
        fc.integer({ min: 1, max: 5 }),
        (list, query, weight, allowance, maxTokens, clipSentences) => {
          const policy = (answerNeighbour?: number) =>
            compilePolicy(
              policySchema.parse({
                name: "p",
                version: 1,
                tokenizer,
                retrieval: { topK: 20, minScore: 0, clipSentences, maxTokens },
                clip: {
                  mode: "relevant",
                  answerAware: true,
                  speakerLabel: true,
                  maxTokensPerMemory: allowance,
                  ...(answerNeighbour === undefined ? {} : { answerNeighbour }),
                },
              }),
            );
          const compiled = policy(weight);
          const input = { userId: "u", query, candidates: list, backend: "t" };
          const a = runPipeline(input, compiled);
          const count = (t: string) => compiled.ctx.tokenizer.count(t);
          const used = a.memories.reduce((sum, m) => sum + count(m.content), 0);
          expect(used).toBeLessThanOrEqual(maxTokens);
          expect(a.totalTokens).toBe(used);
          // Output ⊆ input: every piece between the "..." marks is verbatim text of the memory (dots at a piece's
          // ends set aside: a sentence's own period and the mark run together, "morning....").
          for (const m of a.memories) {
            const original = list.find((c) => c.id === m.id)?.content ?? "";
            for (const piece of m.content.split("...").map((p) => p.replace(/^[\s.]+|[\s.]+$/g, "")))
              if (piece !== "") expect(original).toContain(piece);
          }
          const b = runPipeline({ ...input, candidates: [...list].reverse() }, compiled);
          expect(JSON.stringify(b.memories)).toBe(JSON.stringify(a.memories));
          expect(b.systemPrompt).toBe(a.systemPrompt);
          // Weight 0 adds nothing: byte for byte what the policy without the field gives.
          expect(JSON.stringify(runPipeline(input, policy(0)).memories)).toBe(
            JSON.stringify(runPipeline(input, policy()).memories),
          );
        },
      ),
      { numRuns: 60 },
    );
  });
});
