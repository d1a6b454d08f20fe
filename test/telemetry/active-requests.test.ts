/**
 * `http.server.active_requests` (src/telemetry/metrics.ts): a request's +1 and −1 are summed in the process and
 * added when the metrics are read; every read sees the in-flight count, and a method once seen keeps its series.
 */
import { recordActiveRequest } from "../../src/telemetry/metrics";
import { points } from "./points";
import { installTelemetry, type TestTelemetry } from "./setup";

const NAME = "http.server.active_requests";

describe("http.server.active_requests", () => {
  let tel: TestTelemetry;
  beforeAll(() => {
    tel = installTelemetry();
  });
  afterAll(() => tel.close());

  const byMethod = async () =>
    Object.fromEntries(
      points(await tel.metrics(), NAME).map((p) => [String(p.attributes["http.request.method"]), p.value]),
    );

  it("reads the in-flight requests at every collection", async () => {
    recordActiveRequest(1, "POST");
    recordActiveRequest(1, "POST");
    recordActiveRequest(1, "GET");
    expect(await byMethod()).toEqual({ GET: 1, POST: 2 });
    recordActiveRequest(-1, "POST");
    recordActiveRequest(-1, "GET");
    expect(await byMethod()).toEqual({ GET: 0, POST: 1 });
    recordActiveRequest(-1, "POST");
    recordActiveRequest(1, "PUT");
    recordActiveRequest(-1, "PUT");
    expect(await byMethod()).toEqual({ GET: 0, POST: 0, PUT: 0 });
    for (const p of points(await tel.metrics(), NAME)) expect(p.attributes["url.scheme"]).toBe("http");
  });
});
