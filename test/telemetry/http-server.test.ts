/**
 * memgate's own HTTP server span and `http.server.request.duration` (src/telemetry/http-server.ts): the attributes
 * of the semantic conventions, the caller's trace continued, a body that arrives after the headers still handled in
 * the request's context, 5xx and failed responses marked, probes neither traced nor measured.
 */
import { createServer, type RequestListener } from "node:http";
import { type AddressInfo, connect } from "node:net";
import { SpanKind, SpanStatusCode } from "@opentelemetry/api";
import express from "express";
import request from "supertest";
import { httpServerTelemetry } from "../../src/telemetry/http-server";
import { type Harness, KEYS, makeHarness } from "../helpers/harness";
import { makeCandidate } from "../helpers/items";
import { installTelemetry, spanNamed, type TestTelemetry } from "./setup";

const body = { userId: "u-123", sessionId: "s-9", query: "what do I usually order?", useMemory: true };

/** The `http_server_request_duration_seconds_count` series of /metrics, as label texts. */
async function durationSeries(app: RequestListener): Promise<string[]> {
  const text = (await request(app).get("/metrics").expect(200)).text;
  return [...text.matchAll(/^http_server_request_duration_seconds_count\{([^}]*)\}/gm)].map(
    (m) => m[1] ?? "",
  );
}

describe("the HTTP server span and request duration", () => {
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
    ]);
    tel.reset();
  });
  afterEach(() => h.close());

  test("semantic-convention attributes; the route names the span; query values never recorded", async () => {
    await request(h.app)
      .post("/v1/retrieve?debug=yes&user=ana")
      .set("x-api-key", KEYS.acmeChat)
      .set("user-agent", "chat-app/1.0")
      .send(body)
      .expect(200);
    const server = tel.spans().find((s) => s.kind === SpanKind.SERVER);
    expect(server?.name).toBe("POST /v1/retrieve");
    expect(server?.instrumentationScope.name).toBe("memgate");
    expect(server?.attributes).toMatchObject({
      "http.request.method": "POST",
      "url.scheme": "http",
      "url.path": "/v1/retrieve",
      "url.query": "debug=REDACTED&user=REDACTED",
      "network.protocol.version": "1.1",
      "server.address": "127.0.0.1",
      "user_agent.original": "chat-app/1.0",
      "http.response.status_code": 200,
      "http.route": "/v1/retrieve",
    });
    expect(typeof server?.attributes["server.port"]).toBe("number");
    expect(typeof server?.attributes["network.peer.port"]).toBe("number");
    expect(server?.status.code).toBe(SpanStatusCode.UNSET);
    expect(server?.ended).toBe(true);
    const series = await durationSeries(h.app);
    expect(series).toHaveLength(1);
    expect(series[0]).toContain('http_request_method="POST"');
    expect(series[0]).toContain('http_route="/v1/retrieve"');
    expect(series[0]).toContain('http_response_status_code="200"');
    expect(series[0]).toContain('url_scheme="http"');
  });

  test("a body sent after the headers is still handled in the request's span context", async () => {
    await new Promise<void>((resolve) =>
      createServer(h.app)
        .listen(0, "127.0.0.1")
        .once("listening", function (this: import("node:http").Server) {
          const { port } = this.address() as AddressInfo;
          const payload = JSON.stringify(body);
          const socket = connect(port, "127.0.0.1", () => {
            socket.write(
              `POST /v1/retrieve HTTP/1.1\r\nhost: 127.0.0.1\r\nx-api-key: ${KEYS.acmeChat}\r\n` +
                `content-type: application/json\r\ncontent-length: ${Buffer.byteLength(payload)}\r\nconnection: close\r\n\r\n`,
            );
            // The body in a later packet: its events come from the socket, outside the span's context.
            setTimeout(() => socket.write(payload), 50);
          });
          let answer = "";
          socket.on("data", (chunk) => {
            answer += chunk.toString();
          });
          socket.on("close", () => {
            expect(answer).toMatch(/^HTTP\/1\.1 200/);
            this.close(() => resolve());
          });
        }),
    );
    const spans = tel.spans();
    const server = spans.find((s) => s.kind === SpanKind.SERVER);
    const retrieve = spanNamed(spans, "memgate.retrieve");
    expect(retrieve.spanContext().traceId).toBe(server?.spanContext().traceId);
    expect(retrieve.parentSpanContext?.spanId).toBe(server?.spanContext().spanId);
  });

  test("probes and scrapes are neither traced nor measured", async () => {
    await request(h.app).get("/healthz").expect(200);
    await request(h.app).get("/readyz");
    // (the meter provider is shared by this file's tests: earlier tests' POST series may be there)
    expect((await durationSeries(h.app)).filter((s) => s.includes('http_request_method="GET"'))).toEqual([]);
    expect(tel.spans().filter((s) => s.kind === SpanKind.SERVER)).toEqual([]);
  });
});

describe("the HTTP server span of a failure", () => {
  let tel: TestTelemetry;
  beforeAll(() => {
    tel = installTelemetry();
  });
  afterAll(() => tel.close());

  function app(): express.Express {
    const a = express();
    a.use(httpServerTelemetry());
    a.get("/down", (_req, res) => {
      res.status(503).end();
    });
    a.get("/metrics", async (_req, res) => {
      const { renderMetrics } = await import("../../src/telemetry/prometheus");
      res.end(await renderMetrics());
    });
    return a;
  }

  test("a 5xx is a span error and the metric's error.type; an unknown method is _OTHER", async () => {
    const a = app();
    await request(a).get("/down").expect(503);
    await request(a).get("/nowhere").expect(404);
    const [down, nowhere] = tel.spans().filter((s) => s.kind === SpanKind.SERVER);
    expect(down?.name).toBe("GET /down");
    expect(down?.status.code).toBe(SpanStatusCode.ERROR);
    expect(nowhere?.name).toBe("GET");
    expect(nowhere?.status.code).toBe(SpanStatusCode.UNSET);
    await request(a).search("/nowhere").expect(404);
    const other = tel.spans().filter((s) => s.kind === SpanKind.SERVER)[2];
    expect(other?.name).toBe("_OTHER");
    expect(other?.attributes["http.request.method_original"]).toBe("SEARCH");
    // QUERY is one the conventions know (as on memgate's client spans): named as it is.
    const server = a.listen(0, "127.0.0.1");
    await new Promise((resolve) => server.once("listening", resolve));
    const { port } = server.address() as { port: number };
    const answer = await fetch(`http://127.0.0.1:${port}/nowhere`, { method: "QUERY" });
    await answer.text();
    await new Promise((resolve) => server.close(resolve));
    expect(answer.status).toBe(404);
    const query = tel.spans().filter((s) => s.kind === SpanKind.SERVER)[3];
    expect(query?.name).toBe("QUERY");
    expect(query?.attributes["http.request.method"]).toBe("QUERY");
    expect(query?.attributes).not.toHaveProperty(["http.request.method_original"]);
    const series = await durationSeries(a);
    expect(series.find((s) => s.includes('http_route="/down"'))).toContain('error_type="503"');
    expect(series.find((s) => !s.includes("http_route"))).not.toContain("error_type");
  });
});
