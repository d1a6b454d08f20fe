/**
 * The real binary with the real SDK (src/telemetry/register.ts loaded by bin/memgate.js before the app): spans
 * and metrics reach an OTLP endpoint (a local fake collector, http/json), the caller's trace is continued by the
 * http instrumentation, Express was instrumented (so the SDK started before express loaded), `/metrics` works
 * with no OTEL_* variable, and a bad OTEL_* value stops the boot with one line.
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { parsePrometheusText } from "./prom-parse";

const ROOT = join(__dirname, "../..");
const BIN = join(ROOT, "bin/memgate.js");
const TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736";
const CALLER_SPAN = "00f067aa0ba902b7";

function ensureBuilt(): void {
  if (!existsSync(join(ROOT, "dist/telemetry/register.js")) || !existsSync(join(ROOT, "dist/cli/main.js"))) {
    const r = spawnSync("npm", ["run", "build"], { cwd: ROOT, encoding: "utf8" });
    if (r.status !== 0) throw new Error(`npm run build failed: ${r.stderr}`);
  }
}

interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  events?: Array<{ name: string }>;
}
interface OtlpAttribute {
  key: string;
  value: { stringValue?: string };
}
interface OtlpTraces {
  resourceSpans: Array<{
    resource: { attributes: OtlpAttribute[] };
    scopeSpans: Array<{ scope: { name: string }; spans: OtlpSpan[] }>;
  }>;
}

/** An OTLP/HTTP JSON endpoint that keeps what it receives. */
async function startCollector(): Promise<{ url: string; bodies: Map<string, string[]>; server: Server }> {
  const bodies = new Map<string, string[]>();
  const server = createServer((req, res) => {
    let text = "";
    req.on("data", (c: Buffer) => {
      text += c.toString();
    });
    req.on("end", () => {
      bodies.set(req.url ?? "", [...(bodies.get(req.url ?? "") ?? []), text]);
      res.writeHead(200, { "content-type": "application/json" }).end("{}");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, bodies, server };
}

function serve(env: Record<string, string>): {
  child: ChildProcess;
  url: Promise<string>;
  stdout: () => string;
} {
  const child = spawn(process.execPath, [BIN, "serve"], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? "", PORT: "0", LOG_LEVEL: "info", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let all = "";
  child.stdout?.on("data", (chunk: Buffer) => {
    all += chunk.toString();
  });
  const url = new Promise<string>((resolve, reject) => {
    let out = "";
    const timer = setTimeout(() => reject(new Error(`no listening line: ${out}`)), 15_000);
    child.stdout?.on("data", (chunk: Buffer) => {
      out += chunk.toString();
      const m = /"url":"(http:\/\/[^"]+)"/.exec(out);
      if (m?.[1]) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    });
    child.on("exit", (code) => reject(new Error(`exited early with ${code}: ${out}`)));
  });
  return { child, url, stdout: () => all };
}

async function stop(child: ChildProcess): Promise<number | null> {
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
  child.kill("SIGTERM");
  return exited;
}

describe("memgate serve with the OpenTelemetry SDK", () => {
  beforeAll(ensureBuilt);

  test("spans and metrics go to the OTLP endpoint; the caller's trace continues through the named HTTP span", async () => {
    const collector = await startCollector();
    const { child, url } = serve({
      OTEL_TRACES_EXPORTER: "otlp",
      OTEL_METRICS_EXPORTER: "otlp",
      OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
      OTEL_EXPORTER_OTLP_ENDPOINT: collector.url,
      OTEL_BSP_SCHEDULE_DELAY: "50",
      OTEL_METRIC_EXPORT_INTERVAL: "60000",
    });
    try {
      const base = await url;
      const res = await fetch(`${base}/v1/retrieve`, {
        method: "POST",
        headers: { "content-type": "application/json", traceparent: `00-${TRACE_ID}-${CALLER_SPAN}-01` },
        body: JSON.stringify({ userId: "ana", sessionId: "s-1", query: "coffee", useMemory: true }),
      });
      expect(res.status).toBe(200);
      expect(await stop(child)).toBe(0); // shutdown flushes spans and metrics
    } finally {
      child.kill("SIGKILL");
      collector.server.close();
    }

    const traces = (collector.bodies.get("/v1/traces") ?? []).map((b) => JSON.parse(b) as OtlpTraces);
    const resource = traces[0]?.resourceSpans[0]?.resource.attributes ?? [];
    expect(resource.find((a) => a.key === "service.name")?.value.stringValue).toBe("memgate");
    const spans = traces.flatMap((t) =>
      t.resourceSpans.flatMap((r) =>
        r.scopeSpans.flatMap((s) => s.spans.map((span) => ({ ...span, scope: s.scope.name }))),
      ),
    );
    const mine = spans.filter((s) => s.traceId === TRACE_ID);
    const server = mine.find((s) => s.kind === 2); // SPAN_KIND_SERVER
    expect(server?.parentSpanId).toBe(CALLER_SPAN);
    expect(server?.scope).toBe("memgate"); // memgate's own (src/telemetry/http-server.ts)
    // The route in the span name: the matched route's template.
    expect(server?.name).toBe("POST /v1/retrieve");
    const retrieve = mine.find((s) => s.name === "memgate.retrieve");
    expect(retrieve?.parentSpanId).toBe(server?.spanId);
    // One memgate.pipeline span, its stages as span events (MEMGATE_TRACE_STAGES unset), none as spans.
    const pipeline = mine.find((s) => s.name === "memgate.pipeline");
    expect(pipeline?.parentSpanId).toBe(retrieve?.spanId);
    expect((pipeline?.events ?? []).map((e) => e.name)).toEqual(
      expect.arrayContaining(["score_threshold", "deduplication", "token_budget"]),
    );
    expect(mine.filter((s) => s.name.startsWith("memgate.stage.")).length).toBe(0);

    const metrics = (collector.bodies.get("/v1/metrics") ?? []).join("\n");
    expect(metrics).toContain('"name":"retrieval.latency_ms"');
    expect(metrics).toContain('"name":"backend.latency_ms"');
  });

  test("without OTEL_TRACES/METRICS_EXPORTER nothing is exported (even with an endpoint); /metrics works", async () => {
    const collector = await startCollector();
    const { child, url, stdout } = serve({
      OTEL_EXPORTER_OTLP_ENDPOINT: collector.url,
      OTEL_BSP_SCHEDULE_DELAY: "50",
    });
    try {
      const base = await url;
      const retrieval = await fetch(`${base}/v1/retrieve`, {
        method: "POST",
        headers: { "content-type": "application/json", traceparent: `00-${TRACE_ID}-${CALLER_SPAN}-01` },
        body: JSON.stringify({ userId: "ana", sessionId: "s-1", query: "coffee", useMemory: true }),
      });
      expect(retrieval.status).toBe(200);
      const res = await fetch(`${base}/metrics`);
      expect(res.status).toBe(200);
      const families = parsePrometheusText(await res.text());
      expect(families.get("memgate_policy_reloads_total")?.samples.some((s) => s.value > 0)).toBe(true);
      const info = families.get("target_info")?.samples[0];
      expect(info?.labels.service_name).toBe("memgate");
      expect(families.get("memgate_retrieval_latency_milliseconds")?.type).toBe("histogram");
      expect(await stop(child)).toBe(0);
    } finally {
      child.kill("SIGKILL");
      collector.server.close();
    }
    expect([...collector.bodies.keys()]).toEqual([]);
    // Spans are not recorded, but the caller's trace context still reaches the logs.
    const access = stdout()
      .split("\n")
      .filter((l) => l.startsWith("{"))
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .find((l) => l.msg === "request" && l.path === "/v1/retrieve");
    expect(access).toMatchObject({ trace_id: TRACE_ID, span_id: CALLER_SPAN, status: 200 });
  });

  test("a bad OTEL_* value exits 1 with one line naming the variable", () => {
    const r = spawnSync(process.execPath, [BIN, "serve"], {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? "", PORT: "0", OTEL_TRACES_EXPORTER: "jaeger" },
      encoding: "utf8",
      timeout: 10_000,
    });
    expect(r.status).toBe(1);
    expect(r.stderr.trim().split("\n")).toEqual([
      'memgate: OTEL_TRACES_EXPORTER: must be a comma-separated list of otlp, console, zipkin, none (got "jaeger")',
    ]);
  });

  test("a bad MEMGATE_TRACE_STAGES exits 1 with one line naming the variable and its values", () => {
    const r = spawnSync(process.execPath, [BIN, "serve"], {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? "", PORT: "0", MEMGATE_TRACE_STAGES: "span" },
      encoding: "utf8",
      timeout: 10_000,
    });
    expect(r.status).toBe(1);
    expect(r.stderr.trim().split("\n")).toEqual([
      'memgate: MEMGATE_TRACE_STAGES: must be "events" or "spans" (got "span")',
    ]);
  });
});
