/**
 * Version and build (issue 28, item 4) on the real binary: `version` in GET /healthz and the
 * `memgate_build_info{version,node} 1` gauge in GET /metrics, from a process started as users start it.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { METRICS } from "../../src/telemetry/catalogue";
import { ensureBuilt, type Gateway, ROOT, startGateway, stopGateway } from "../redis/gateway-process";

const VERSION = (JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { version: string }).version;

let gateway: Gateway | undefined;
let url = "";

beforeAll(async () => {
  ensureBuilt();
  gateway = await startGateway({ PORT: "0", LOG_LEVEL: "info" }, "dist");
  url = gateway.url;
}, 40_000);

afterAll(async () => {
  if (gateway) await stopGateway(gateway);
});

test("GET /healthz says which version runs", async () => {
  const res = await fetch(`${url}/healthz`);
  expect(res.status).toBe(200);
  expect(await res.json()).toEqual({ status: "ok", version: VERSION });
});

test("GET /metrics has memgate_build_info{version,node} 1", async () => {
  const text = await (await fetch(`${url}/metrics`)).text();
  const lines = text.split("\n").filter((l) => l.startsWith(`${METRICS.buildInfo.prometheus}{`));
  expect(lines).toHaveLength(1);
  const line = lines[0] ?? "";
  expect(line).toMatch(/ 1$/);
  expect(line).toContain(`version="${VERSION}"`);
  expect(line).toContain(`node="${process.versions.node}"`);
  expect(text).toContain(`# TYPE ${METRICS.buildInfo.prometheus} gauge`);
});
