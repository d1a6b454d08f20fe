/**
 * The OpenTelemetry GenAI conventions on the retrieval spans (src/telemetry/genai.ts): `gen_ai.operation.name`
 * (`retrieval`), `gen_ai.data_source.id` and `gen_ai.request.top_k` on `memgate.retrieve` and
 * `memgate.backend.search`, beside memgate's own attributes; the names are the package's constants and
 * docs/observability.md lists them.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { ReadableSpan } from "@opentelemetry/sdk-trace-node";
import {
  ATTR_GEN_AI_DATA_SOURCE_ID,
  ATTR_GEN_AI_OPERATION_NAME,
  ATTR_GEN_AI_REQUEST_TOP_K,
  GEN_AI_OPERATION_NAME_VALUE_RETRIEVAL,
} from "@opentelemetry/semantic-conventions/incubating";
import request from "supertest";
import { type Harness, KEYS, makeHarness } from "../helpers/harness";
import { makeCandidate } from "../helpers/items";
import { installTelemetry, spanNamed, type TestTelemetry } from "./setup";

const body = (patch: Record<string, unknown> = {}) => ({
  userId: "u-123",
  sessionId: "s-9",
  query: "what do I usually order?",
  useMemory: true,
  ...patch,
});

describe("GenAI semantic conventions on the retrieval spans", () => {
  let tel: TestTelemetry;
  let h: Harness;

  beforeAll(() => {
    tel = installTelemetry();
  });
  afterAll(() => tel.close());
  beforeEach(async () => {
    h = await makeHarness();
    h.zep.acme?.setUser("u-123", [
      makeCandidate({ id: "f1", content: "Ana orders an oat milk flat white.", score: 0.9 }),
      makeCandidate({ id: "f2", content: "Ana lives in Lisbon.", score: 0.8 }),
    ]);
    tel.reset();
  });
  afterEach(() => h.close());

  const post = (payload: object) =>
    request(h.app).post("/v1/retrieve").set("x-api-key", KEYS.acmeChat).send(payload).expect(200);

  const lastTrace = (): ReadableSpan[] => {
    const retrieve = tel
      .spans()
      .filter((s) => s.name === "memgate.retrieve")
      .at(-1);
    if (retrieve === undefined) throw new Error("no memgate.retrieve span");
    return tel.spans().filter((s) => s.spanContext().traceId === retrieve.spanContext().traceId);
  };

  test("the constants are the convention's names", () => {
    expect([ATTR_GEN_AI_OPERATION_NAME, ATTR_GEN_AI_DATA_SOURCE_ID, ATTR_GEN_AI_REQUEST_TOP_K]).toEqual([
      "gen_ai.operation.name",
      "gen_ai.data_source.id",
      "gen_ai.request.top_k",
    ]);
    expect(GEN_AI_OPERATION_NAME_VALUE_RETRIEVAL).toBe("retrieval");
  });

  test("a miss: memgate.retrieve and memgate.backend.search are GenAI retrieval spans, memgate.* kept", async () => {
    const res = await post(body());
    const trace = lastTrace();
    const retrieve = spanNamed(trace, "memgate.retrieve");
    expect(retrieve.attributes).toMatchObject({
      [ATTR_GEN_AI_OPERATION_NAME]: "retrieval",
      [ATTR_GEN_AI_DATA_SOURCE_ID]: "zep",
      [ATTR_GEN_AI_REQUEST_TOP_K]: res.body.metadata.config.topK,
      "memgate.backend": "zep",
      "memgate.results.count": res.body.metadata.includedResults,
    });
    const search = spanNamed(trace, "memgate.backend.search");
    expect(search.attributes).toMatchObject({
      [ATTR_GEN_AI_OPERATION_NAME]: "retrieval",
      [ATTR_GEN_AI_DATA_SOURCE_ID]: "zep",
      [ATTR_GEN_AI_REQUEST_TOP_K]: search.attributes["memgate.backend.limit"],
      "memgate.backend": "zep",
    });
    // The existence check is no retrieval.
    expect(
      spanNamed(trace, "memgate.backend.user_exists").attributes[ATTR_GEN_AI_OPERATION_NAME],
    ).toBeUndefined();
  });

  test("a fallback without a search: memgate.retrieve still names the operation and the data source", async () => {
    const res = await post(body({ useMemory: false }));
    expect(res.body.metadata.fallback.code).toBe("MEMORY_DISABLED");
    const trace = lastTrace();
    expect(spanNamed(trace, "memgate.retrieve").attributes).toMatchObject({
      [ATTR_GEN_AI_OPERATION_NAME]: "retrieval",
      [ATTR_GEN_AI_DATA_SOURCE_ID]: "zep",
      "memgate.fallback.code": "MEMORY_DISABLED",
    });
    expect(trace.some((s) => s.name === "memgate.backend.search")).toBe(false);
  });

  test("docs/observability.md's span catalogue lists every gen_ai.* name set", () => {
    const doc = readFileSync(join(__dirname, "../../docs/observability.md"), "utf8");
    for (const name of [ATTR_GEN_AI_OPERATION_NAME, ATTR_GEN_AI_DATA_SOURCE_ID, ATTR_GEN_AI_REQUEST_TOP_K])
      expect(doc).toContain(`\`${name}\``);
  });
});
