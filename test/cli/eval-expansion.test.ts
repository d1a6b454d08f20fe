/**
 * `memgate eval` emulating the expansion round with the missing words (policy `sufficiency.expandWith: missing`):
 * the replay of recorded candidates cannot answer a new query, so the live backend answers the second search
 * (src/eval/searches.ts), `--record` keeps it beside the first, a replay answers it from there, and a recorded
 * file without it is refused (exit 2) rather than measured as if the round had not run.
 */
import { readFileSync } from "node:fs";
import { cliText, jsonl, scratchFiles } from "../helpers/cli";
import { EXPANSION_RECORDS as MEMORIES, EXPANSION_QUERY as QUERY } from "../helpers/expansion-conversation";

const cli = cliText;

const scratch = scratchFiles("memgate-eval-expansion-", "each");
const file = scratch.file;

const QUESTIONS = [
  {
    id: "q1",
    userId: "maya",
    query: QUERY,
    category: "multi-hop",
    lang: "en",
    expectedIds: ["t1", "t3"],
    answers: ["paella", "Inès"],
    asOf: "2024-07-01T00:00:00Z",
  },
];
const policy = (name: string, extra: string) => `name: ${name}
version: 1
retrieval: { topK: 2, overfetch: 1, clipSentences: 2, maxTokens: 300, minScore: 0 }
ranking: { enabled: true }
budget: { fill: true, maxMemories: 5 }
sufficiency: { enabled: true, expand: true, threshold: 0.99${extra} }
`;

describe("memgate eval: the expansion round with the missing words", () => {
  test("live: the second search goes to the backend, is recorded, and a replay answers it from the file", async () => {
    const memories = file("memories.jsonl", jsonl(MEMORIES));
    const golden = file("questions.jsonl", jsonl(QUESTIONS));
    const missing = file("missing.yaml", policy("missing", ", expandWith: missing"));
    const more = file("more.yaml", policy("more", ""));
    const recorded = scratch.path("recorded.jsonl");
    const live = await cli(
      "eval",
      "--golden",
      golden,
      "--backend",
      "local",
      "--data",
      memories,
      "--policy",
      missing,
      "--policy",
      more,
      "--record",
      recorded,
      "--json",
    );
    expect(live.err).toBe("");
    expect(live.code).toBe(0);
    const report = JSON.parse(live.out);
    const [withMissing, withMore] = report.policies;
    // The missing-words search found the Lisbon turn the first search (2 candidates) had not: both answers kept.
    expect(withMissing.outcomes[0]).toMatchObject({
      answerKept: true,
      evidenceKept: 2,
      expansion: { with: "missing", added: 1, kept: true },
    });
    expect(withMissing.expansion).toMatchObject({ ran: 1, kept: 1, missing: 1, more: 0 });
    // The same round for more candidates of the question: the recorded list, no second search.
    expect(withMore.outcomes[0].expansion).toMatchObject({ with: "more" });
    const line = JSON.parse(readFileSync(recorded, "utf8").split("\n")[1] ?? "");
    expect(line.expansions).toHaveLength(1);
    expect(line.expansions[0]).toMatchObject({ query: "Lisbon", limit: 2 });
    expect(line.expansions[0].results.map((c: { id: string }) => c.id)).toContain("t3");
    // The policies take the recorded list's first 2 (it holds 4: the `more` round's twice as many).
    expect(line.results.slice(0, 2).map((c: { id: string }) => c.id)).not.toContain("t3");

    const replay = await cli(
      "eval",
      "--golden",
      golden,
      "--candidates",
      recorded,
      "--policy",
      missing,
      "--policy",
      more,
      "--json",
    );
    expect(replay.code).toBe(0);
    const again = JSON.parse(replay.out);
    expect(again.policies[0].outcomes).toEqual(withMissing.outcomes);
    expect(again.policies[1].outcomes).toEqual(withMore.outcomes);

    const text = await cli("eval", "--golden", golden, "--candidates", recorded, "--policy", missing);
    expect(text.out).toMatch(/expansion round/);
    expect(text.out).toMatch(/missing\s+1 \(100\.0 %\)\s+1 \(100\.0 %\)\s+0\s+1/);
  });

  test("a recorded file without the second search is refused, naming the question and query (exit 2)", async () => {
    const memories = file("memories.jsonl", jsonl(MEMORIES));
    const golden = file("questions.jsonl", jsonl(QUESTIONS));
    const more = file("more.yaml", policy("more", ""));
    const missing = file("missing.yaml", policy("missing", ", expandWith: missing"));
    const recorded = scratch.path("recorded.jsonl");
    // Recorded with a policy that never searches with the missing words.
    expect(
      (
        await cli(
          "eval",
          "--golden",
          golden,
          "--backend",
          "local",
          "--data",
          memories,
          "--policy",
          more,
          "--record",
          recorded,
        )
      ).code,
    ).toBe(0);
    expect(readFileSync(recorded, "utf8")).not.toMatch(/"expansions"/);
    const replay = await cli("eval", "--golden", golden, "--candidates", recorded, "--policy", missing);
    expect(replay.code).toBe(2);
    expect(replay.err).toMatch(/question "q1": its expansion search for "Lisbon" \(2 candidates\)/);
    expect(replay.err).toMatch(/--record/);
  });
});
