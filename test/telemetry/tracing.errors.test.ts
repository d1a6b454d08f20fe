/**
 * How a span shows an error that escaped it (src/telemetry/tracing.ts). Telemetry tells the caller's own faults
 * by shape (a numeric `status` and a string `code`), not by importing the HTTP layer's HttpProblem: these tests
 * pin that HttpProblem is still told apart, on both sides of 500.
 */
import { BackendError } from "../../src/backends/types";
import { HttpProblem } from "../../src/http/errors";
import { inSpan } from "../../src/telemetry/tracing";
import { installTelemetry, type TestTelemetry } from "./setup";

let telemetry: TestTelemetry;
beforeAll(() => {
  telemetry = installTelemetry();
});
afterAll(() => telemetry.close());
beforeEach(() => telemetry.reset());

async function spanOf(err: unknown) {
  await expect(
    inSpan("test.op", async () => {
      throw err;
    }),
  ).rejects.toBe(err);
  const [span] = telemetry.spans();
  if (span === undefined) throw new Error("no span");
  return span;
}

describe("an error escaping a span", () => {
  test("an HttpProblem below 500 (the caller's fault) is its code on the span, not a span error", async () => {
    const span = await spanOf(new HttpProblem("FORBIDDEN", "lacks a scope"));
    expect(span.attributes["memgate.error.code"]).toBe("FORBIDDEN");
    expect(span.attributes["error.type"]).toBeUndefined();
    expect(span.status.code).toBe(0);
  });

  test("an HttpProblem of 500 or more is a span error typed by its code", async () => {
    const span = await spanOf(new HttpProblem("INTERNAL", "wiring bug"));
    expect(span.attributes["error.type"]).toBe("INTERNAL");
    expect(span.attributes["memgate.error.code"]).toBeUndefined();
    expect(span.status.code).toBe(2);
  });

  test("an error with a status but no code (a backend's 400) is a span error typed by its name", async () => {
    const span = await spanOf(
      new BackendError({ kind: "invalid_query", backend: "zep", message: "bad", status: 400 }),
    );
    expect(span.attributes["error.type"]).toBe("BackendError");
    expect(span.status.code).toBe(2);
  });

  test("a plain error, and a thrown non-error", async () => {
    expect((await spanOf(new TypeError("boom"))).attributes["error.type"]).toBe("TypeError");
    telemetry.reset();
    expect((await spanOf("a string")).attributes["error.type"]).toBe("unknown");
  });
});
