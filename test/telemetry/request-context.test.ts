/**
 * One AsyncLocalStorage per request (issue 29): the request id is a value of the OpenTelemetry context, in the
 * context manager memgate hands the SDK (src/telemetry/log-context.ts). Without any SDK (OTEL_SDK_DISABLED, tools,
 * this file's first test) memgate registers that manager itself and log lines keep their requestId; with the SDK
 * (`startTelemetry`, as `memgate serve`), the SDK's context is that same storage.
 */
import { context, ROOT_CONTEXT, trace } from "@opentelemetry/api";
import { InMemorySpanExporter, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-node";
import request from "supertest";
import { contextManager } from "../../src/telemetry/log-context";
import { startTelemetry } from "../../src/telemetry/sdk";
import { type Harness, KEYS, makeHarness } from "../helpers/harness";

interface LogLine {
  msg: string;
  requestId?: string;
  trace_id?: string;
}

const body = { userId: "u-ctx", sessionId: "s-1", query: "what do I order?", useMemory: true };

describe("the request's context", () => {
  let h: Harness | undefined;
  afterEach(async () => {
    await h?.close();
    h = undefined;
  });

  /** A request whose backend fails: the adapter's warning is written deep inside the request. */
  async function failingRequest(id: string): Promise<LogLine[]> {
    h = await makeHarness();
    h.zep.acme?.fail("unavailable", { status: 503 });
    await request(h.app)
      .post("/v1/retrieve")
      .set("x-api-key", KEYS.acmeChat)
      .set("x-request-id", id)
      .send(body);
    return h.logs.map((l) => JSON.parse(l) as LogLine);
  }

  test("without an SDK, a log line written inside a request carries its requestId", async () => {
    const lines = await failingRequest("req-no-sdk");
    expect(lines.find((l) => l.msg === "backend call failed")?.requestId).toBe("req-no-sdk");
    expect(lines.find((l) => l.msg === "request")?.requestId).toBe("req-no-sdk");
    // No SDK: no trace ids.
    expect(lines.find((l) => l.msg === "backend call failed")?.trace_id).toBeUndefined();
  });

  test("with the SDK, its context lives in memgate's one storage, and lines carry requestId and trace ids", async () => {
    const telemetry = startTelemetry({
      spanProcessors: [new SimpleSpanProcessor(new InMemorySpanExporter())],
    });
    try {
      // The API's active context is the one memgate's manager holds: one AsyncLocalStorage, not two.
      const marked = ROOT_CONTEXT.setValue(Symbol.for("probe"), 1);
      context.with(marked, () => expect(contextManager.active()).toBe(marked));
      const lines = await failingRequest("req-sdk");
      const failed = lines.find((l) => l.msg === "backend call failed");
      expect(failed?.requestId).toBe("req-sdk");
      expect(failed?.trace_id).toMatch(/^[0-9a-f]{32}$/);
      expect(trace.getSpan(context.active())).toBeUndefined();
    } finally {
      await telemetry.shutdown();
    }
  });
});
