/**
 * The answer slot (`sufficiency.answerSlot`, src/pipeline/answer-slot.ts): a question asking for a name or a number
 * is answered only where what it asks about and an answer of that kind stand together; kept memories that talk
 * about the subject with no such answer by it make the certificate `insufficient`. English, French, Spanish, German.
 */
import { runPipeline } from "../../src/pipeline";
import { type AnswerSlotOptions, answerSlot, slotKindOf } from "../../src/pipeline/answer-slot";
import { analyzeQuery } from "../../src/pipeline/query/analyze";
import { compilePolicy } from "../../src/policy/compile";
import { type PolicyInput, policySchema } from "../../src/policy/schema";
import { makeCandidate, makeItem, makePolicy } from "../helpers/items";

const ALL: AnswerSlotOptions = { kinds: ["name", "number", "person", "place"], after: 1, nextMemory: false };

function slot(query: string, contents: string[], options: AnswerSlotOptions = ALL, replies = false) {
  const kept = contents.map((content, i) =>
    makeItem({ id: `m${i}`, content, ...(replies && i > 0 ? { replyTo: `m${i - 1}` } : {}) }),
  );
  return answerSlot(kept, query, analyzeQuery(query, undefined), options);
}

describe("the kind of answer asked for", () => {
  test.each([
    ["What is the name of Chloe's dog?", "name"],
    ["What did Grace name her cat?", "name"],
    ["What is Danny's wife called?", "name"],
    ["Comment s'appelle le chat de Julie ?", "name"],
    ["¿Cómo se llama el perro de Javier?", "name"],
    ["Wie heißt die Katze von Jonas?", "name"],
    ["How many guests came to the wedding?", "number"],
    ["¿Cuántos perros tiene Pablo?", "number"],
    ["Who teaches Aisha to swim?", "person"],
    ["Where did Ben stay in Rotterdam?", "place"],
    ["Why did Ben move?", undefined],
    ["What did Tobias buy in Bologna?", undefined],
  ])("%s → %s", (query, kind) => {
    expect(slotKindOf(query, analyzeQuery(query, undefined))).toBe(kind);
  });
});

describe("the slot in the kept memories", () => {
  test("the subject kept with a name by it: filled", () => {
    expect(
      slot("What is the name of Chloe's dog?", ["Chloe: We got a dog last week. She is called Pepper."]),
    ).toEqual({
      kind: "name",
      focus: "dog",
      filled: true,
    });
  });

  test("the subject kept, but no name anywhere near it: not filled", () => {
    expect(
      slot("What is the name of Chloe's dog?", [
        "Chloe: The dog keeps stealing socks. It is driving me mad.",
        "Ben: Biscuit loves the park.",
      ]),
    ).toMatchObject({ kind: "name", filled: false });
  });

  test("the sentence after the subject's counts (`after`), a later one does not", () => {
    const text = "Julie: Mon chat dort toute la journée. Il s'appelle Gaston.";
    expect(slot("Comment s'appelle le chat de Julie ?", [text])?.filled).toBe(true);
    expect(slot("Comment s'appelle le chat de Julie ?", [text], { ...ALL, after: 0 })?.filled).toBe(false);
  });

  test("`nextMemory`: the first sentence of the reply turn kept after it counts (not any next memory)", () => {
    const turns = ["Tom: How many people came to the party?", "Maya: Twelve, more than we expected."];
    expect(slot("How many people came to Maya's party?", turns)?.filled).toBe(false);
    expect(slot("How many people came to Maya's party?", turns, { ...ALL, nextMemory: true })?.filled).toBe(
      false,
    );
    expect(
      slot(
        "What did Maya name the puppy?",
        ["Tom: Did you name the puppy?", "Maya: Pickle! He bites."],
        ALL,
        true,
      )?.filled,
    ).toBe(false);
    expect(
      slot(
        "What did Maya name the puppy?",
        ["Tom: Did you name the puppy?", "Maya: Pickle! He bites."],
        { ...ALL, nextMemory: true },
        true,
      )?.filled,
    ).toBe(true);
    expect(
      slot("How many people came to Maya's party?", turns, { ...ALL, nextMemory: true }, true)?.filled,
    ).toBe(true);
  });

  test("Spanish and German: a number, a name", () => {
    expect(slot("¿Cuántos perros tiene Pablo?", ["Pablo: Tengo dos perros en casa."])?.filled).toBe(true);
    expect(slot("¿Cuántos perros tiene Pablo?", ["Pablo: Mis perros duermen en el sofá."])?.filled).toBe(
      false,
    );
    expect(slot("Wie heißt die Katze von Jonas?", ["Jonas: Meine Katze heißt Mimi."])?.filled).toBe(true);
    expect(slot("Wie heißt die Katze von Jonas?", ["Jonas: Meine Katze schläft viel."])?.filled).toBe(false);
  });

  test("not decided: the subject kept nowhere, a question of another kind, or a kind the policy does not check", () => {
    expect(slot("What is the name of Chloe's dog?", ["Ben: I went sailing on Sunday."])).toBeUndefined();
    expect(slot("Why did Ben move to Leeds?", ["Ben: I moved to Leeds for the job."])).toBeUndefined();
    const nameOnly: AnswerSlotOptions = { ...ALL, kinds: ["name"] };
    expect(slot("¿Cuántos perros tiene Pablo?", ["Pablo: Mis perros duermen."], nameOnly)).toBeUndefined();
  });
});

describe("in the pipeline's certificate", () => {
  const run = (content: string, answerSlotPolicy?: PolicyInput["sufficiency"]) =>
    runPipeline(
      {
        userId: "u",
        query: "What is the name of Chloe's dog?",
        candidates: [makeCandidate({ id: "a", content, type: "message" })],
        backend: "t",
      },
      compilePolicy(
        makePolicy({ ranking: { enabled: true }, sufficiency: { enabled: true, ...answerSlotPolicy } }),
      ),
    ).sufficiency;

  test("an unfilled slot makes it insufficient and says why; without the field the certificate is as before", () => {
    const text = "Chloe: Our dog chewed the name tag off his collar again, the rascal.";
    const before = run(text);
    expect(before?.answerSlot).toBeUndefined();
    const after = run(text, { answerSlot: { kinds: ["name"] } });
    expect(after).toMatchObject({ verdict: "insufficient", answerSlot: { kind: "name", filled: false } });
    expect(after?.completeness).toBe(before?.completeness);
  });

  test("a filled slot leaves the verdict to completeness", () => {
    const text = "Chloe: Our dog is called Pepper, and she is a terrier.";
    const plain = run(text);
    const checked = run(text, { answerSlot: { kinds: ["name"] } });
    expect(checked?.verdict).toBe(plain?.verdict);
    expect(checked?.answerSlot).toMatchObject({ filled: true });
  });
});

describe("validated like every field", () => {
  const base = { name: "p", version: 1 };
  test.each([
    [{ answerSlot: { kinds: [] } }],
    [{ answerSlot: { kinds: ["colour"] } }],
    [{ answerSlot: { kinds: ["name"], after: 4 } }],
    [{ answerSlot: { kinds: ["name"], extra: true } }],
    [{ insufficientBelow: 1.5 }],
  ])("rejects sufficiency %j", (sufficiency) => {
    const parsed = policySchema.safeParse({ ...base, sufficiency });
    expect(parsed.success).toBe(false);
    expect(parsed.error?.issues[0]?.path[0]).toBe("sufficiency");
  });
  test("absent by default (the policy and its hash as before); defaults when given", () => {
    const plain = policySchema.parse(base).sufficiency;
    expect(plain.answerSlot).toBeUndefined();
    expect(plain.insufficientBelow).toBeUndefined();
    expect(
      policySchema.parse({ ...base, sufficiency: { answerSlot: { kinds: ["name"] } } }).sufficiency
        .answerSlot,
    ).toEqual({ kinds: ["name"], after: 1, nextMemory: true });
  });
});
