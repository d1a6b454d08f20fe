/**
 * The playground's eval table (POST /v1/playground/eval) with a policy whose expansion round searches with the
 * missing words: the second search is the core's own (the tenant's backend, the question's user), and the table is
 * the one `memgate eval` prints for the same golden set and backend. The compare view (POST /v1/playground/compare)
 * runs each policy's round too, as /v1/retrieve would.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import request from "supertest";
import { evalCommand } from "../../src/cli/eval";
import { overallRows } from "../../src/eval/report";
import { EXPANSION_RECORDS as RECORDS } from "../helpers/expansion-conversation";
import { type Harness, makeHarness } from "../helpers/harness";

const QUESTION = {
  id: "q1",
  userId: "maya",
  query: "What did Tom cook for the neighbours in Lisbon?",
  category: "multi-hop",
  lang: "en",
  expectedIds: ["t1", "t3"],
  answers: ["paella", "Inès"],
  asOf: "2024-07-01T00:00:00Z",
};
const MISSING = `name: missing
version: 1
retrieval: { topK: 2, overfetch: 1, clipSentences: 2, maxTokens: 300, minScore: 0 }
ranking: { enabled: true }
budget: { fill: true, maxMemories: 5 }
sufficiency: { enabled: true, expand: true, threshold: 0.99, expandWith: missing }
`;

describe("POST /v1/playground/eval: the expansion round with the missing words", () => {
  let dir = "";
  let h: Harness | undefined;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "memgate-playground-expansion-"));
  });
  afterEach(async () => {
    await h?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  test("the second search goes through the core; the table is memgate eval's", async () => {
    const golden = join(dir, "questions.jsonl");
    writeFileSync(golden, `${JSON.stringify(QUESTION)}\n`);
    const memories = join(dir, "memories.jsonl");
    writeFileSync(memories, `${RECORDS.map((r) => JSON.stringify(r)).join("\n")}\n`);
    const policy = join(dir, "missing.yaml");
    writeFileSync(policy, MISSING);
    h = await makeHarness({
      tenants: null,
      localRecords: RECORDS,
      env: { MEMGATE_PLAYGROUND: "on", MEMGATE_PLAYGROUND_GOLDEN: golden, MEMGATE_BACKEND: "local" },
    });
    const tenant = h.services.tenants.tenants()[0] ?? ({} as never);
    const backend = await h.services.backends.get(tenant, "local");
    if (backend === undefined) throw new Error("no local backend");
    const search = jest.spyOn(backend, "search");
    const res = await request(h.app)
      .post("/v1/playground/eval")
      .send({ policies: [{ text: MISSING }] })
      .expect(200);
    expect(search.mock.calls.map((c) => c[0].query)).toEqual([QUESTION.query, "Lisbon"]);
    expect(res.body.reports[0].expansion).toMatchObject({ ran: 1, kept: 1, missing: 1 });
    expect(res.body.reports[0].overall).toMatchObject({ answerKept: 1, evidenceRecall: 1 });

    const out: string[] = [];
    const code = await evalCommand(
      { golden, policy: [policy], backend: "local", data: memories, json: true },
      { out: (l) => out.push(l), err: (l) => out.push(l) },
    );
    expect(code).toBe(0);
    const cli = overallRows(JSON.parse(out.join("\n")).policies);
    expect(res.body.table.rows.map((r: string[]) => r.slice(1))).toEqual(cli.rows.map((r) => r.slice(1)));
  });

  test("compare: each policy's expansion round runs (its own second search), as /v1/retrieve would", async () => {
    h = await makeHarness({
      tenants: null,
      localRecords: RECORDS,
      env: { MEMGATE_PLAYGROUND: "on", MEMGATE_BACKEND: "local" },
    });
    const tenant = h.services.tenants.tenants()[0] ?? ({} as never);
    const backend = await h.services.backends.get(tenant, "local");
    if (backend === undefined) throw new Error("no local backend");
    const search = jest.spyOn(backend, "search");
    const plain = MISSING.replace("name: missing", "name: plain")
      .replace("expand: true", "expand: false")
      .replace(", expandWith: missing", "");
    const res = await request(h.app)
      .post("/v1/playground/compare")
      .send({ userId: "maya", query: QUESTION.query, policies: [{ text: MISSING }, { text: plain }] })
      .expect(200);
    // One search for both policies, then the missing-words search of the one that expands.
    expect(search.mock.calls.map((c) => c[0].query)).toEqual([QUESTION.query, "Lisbon"]);
    const [missing, without] = res.body.runs;
    expect(missing.payload.metadata.sufficiency).toMatchObject({
      expanded: true,
      expansion: { with: "missing", query: "Lisbon", added: 1, kept: true },
    });
    const ids = (run: { payload: { memories: Array<{ id: string }> } }) =>
      run.payload.memories.map((m) => m.id);
    expect(ids(missing)).toContain("t3");
    // The candidate table holds what the kept answer was shaped from: the round's added candidate too.
    expect(missing.candidates.map((c: { id: string }) => c.id)).toContain("t3");
    expect(without.payload.metadata.sufficiency.expanded).toBe(false);
    expect(ids(without)).not.toContain("t3");
    expect(without.candidates.map((c: { id: string }) => c.id)).not.toContain("t3");
  });
});
