/** The long-conversation golden set keeps the rules it is written to (src/eval/long-check.ts). */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { checkLongUser, LONG_DIR } from "../../src/eval/long-check";

const users = readdirSync(LONG_DIR)
  .filter((f) => f.endsWith(".memories.jsonl"))
  .map((f) => f.replace(/\.memories\.jsonl$/, ""))
  .sort();

describe("the long-conversation golden set (eval/golden/long)", () => {
  test("ten users, English and at least two other languages, over a thousand questions", () => {
    const reports = users.map((u) =>
      checkLongUser(
        u,
        readFileSync(join(LONG_DIR, `${u}.memories.jsonl`), "utf8"),
        readFileSync(join(LONG_DIR, `${u}.questions.jsonl`), "utf8"),
      ),
    );
    expect(users.length).toBeGreaterThanOrEqual(10);
    const questions = reports.flatMap((r) => r.questions);
    expect(questions.length).toBeGreaterThanOrEqual(1000);
    const langs = new Set(questions.map((q) => q.lang));
    expect(langs.has("en")).toBe(true);
    expect(langs.size).toBeGreaterThanOrEqual(3);
  });

  test.each(users)(
    "%s: every rule holds (turns, sessions, speakers, lengths, categories, evidence, answers)",
    (u) => {
      const report = checkLongUser(
        u,
        readFileSync(join(LONG_DIR, `${u}.memories.jsonl`), "utf8"),
        readFileSync(join(LONG_DIR, `${u}.questions.jsonl`), "utf8"),
      );
      expect(report.problems).toEqual([]);
    },
  );

  test("the checks catch a broken user: too short, one speaker, an answer not in its evidence", () => {
    const memories = [
      '{"id":"x-0001","userId":"x","type":"message","sessionId":"x-s01","timestamp":"2024-02-03T18:04:00Z","content":"Maya: Hi! I finally signed up for the pottery class at Clayhouse. It starts Tuesday."}',
    ].join("\n");
    const questions =
      '{"id":"x-q1","userId":"x","query":"Where does Maya take pottery?","category":"single-hop","lang":"en","expectedIds":["x-0001"],"answers":["Riverside"]}';
    const report = checkLongUser("x", memories, questions);
    expect(report.problems).toEqual(
      expect.arrayContaining([
        "1 turns (at least 300)",
        "1 speakers (Maya); two wanted",
        "x-q1: answers[0]: not found in the expected memories",
      ]),
    );
  });
});
