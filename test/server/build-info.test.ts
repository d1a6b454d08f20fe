/**
 * Version and build (issue 28, item 4) on the real binary: `version` in GET /healthz and the
 * `memgate_build_info{version,node} 1` gauge in GET /metrics, from a process started as users start it.
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { METRICS } from "../../src/telemetry/catalogue";

const ROOT = join(__dirname, "../..");
const VERSION = (JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { version: string }).version;

let child: ChildProcess | undefined;
let url = "";
let logs = "";

beforeAll(async () => {
  if (!existsSync(join(ROOT, "dist/cli/main.js"))) {
    const r = spawnSync("npm", ["run", "build"], { cwd: ROOT, encoding: "utf8" });
    if (r.status !== 0) throw new Error(`npm run build failed: ${r.stderr}`);
  }
  child = spawn(process.execPath, [join(ROOT, "bin/memgate.js"), "serve"], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? "", PORT: "0", LOG_LEVEL: "info" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  child.stderr?.on("data", (c: Buffer) => {
    logs += c.toString();
  });
  url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no listening line: ${logs}`)), 20_000);
    child?.stdout?.on("data", (c: Buffer) => {
      logs += c.toString();
      const m = /"url":"(http:\/\/[^"]+)"/.exec(logs);
      if (m?.[1]) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    });
    child?.on("exit", (code) => reject(new Error(`exited early with ${code}: ${logs}`)));
  });
}, 30_000);

afterAll(async () => {
  if (child && child.exitCode === null) {
    const exited = new Promise((r) => child?.on("exit", r));
    child.kill("SIGTERM");
    await exited;
  }
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
