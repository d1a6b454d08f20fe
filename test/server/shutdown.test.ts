import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { connect, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { FakeOpenMemoryServer } from "../backends/fakes/openmemory-server";
import { startSlowOpenMemory } from "./slow-openmemory";

/**
 * Graceful shutdown of the real binary (`node bin/memgate.js serve`), proven end to end: a slow OpenMemory is
 * answering requests A and A2 (two keep-alive connections) when SIGTERM arrives; request B, arriving afterwards
 * on A's connection, is refused with 503 problem+json and Retry-After; GET /readyz, arriving on A2's, answers 503
 * `status: "draining"`; A and A2 still finish with their 200; the process exits 0.
 */
const ROOT = join(__dirname, "../..");
const BIN = join(ROOT, "bin/memgate.js");
const SLOW_MS = 800;

function ensureBuilt(): void {
  if (!existsSync(join(ROOT, "dist/cli/main.js"))) {
    const r = spawnSync("npm", ["run", "build"], { cwd: ROOT, encoding: "utf8" });
    if (r.status !== 0) throw new Error(`npm run build failed: ${r.stderr}`);
  }
}

interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** Splits the bytes of one connection into its HTTP/1.1 responses (content-length framed, as memgate sends). */
function parseResponses(raw: string): RawResponse[] {
  const out: RawResponse[] = [];
  let rest = raw;
  while (rest.length > 0) {
    const end = rest.indexOf("\r\n\r\n");
    if (end < 0) break;
    const [statusLine = "", ...lines] = rest.slice(0, end).split("\r\n");
    const headers: Record<string, string> = {};
    for (const line of lines) {
      const colon = line.indexOf(":");
      headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
    }
    const length = Number(headers["content-length"] ?? "0");
    const bodyBytes = Buffer.from(rest.slice(end + 4), "utf8");
    out.push({
      status: Number(statusLine.split(" ")[1]),
      headers,
      body: bodyBytes.subarray(0, length).toString("utf8"),
    });
    rest = bodyBytes.subarray(length).toString("utf8");
  }
  return out;
}

async function openSocket(
  port: number,
): Promise<{ socket: Socket; raw: () => string; closed: Promise<void> }> {
  const socket: Socket = connect(port, "127.0.0.1");
  await new Promise<void>((resolve, reject) => {
    socket.once("connect", resolve);
    socket.once("error", reject);
  });
  let raw = "";
  socket.on("data", (c: Buffer) => {
    raw += c.toString("utf8");
  });
  const closed = new Promise<void>((resolve) => socket.on("close", () => resolve()));
  return { socket, raw: () => raw, closed };
}

function postText(path: string, body: object): string {
  const json = JSON.stringify(body);
  return (
    `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: keep-alive\r\n` +
    `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(json)}\r\n\r\n${json}`
  );
}

async function waitFor(what: string, check: () => boolean, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe("graceful shutdown of `memgate serve` (child process, SIGTERM)", () => {
  let fake: FakeOpenMemoryServer;
  let child: ChildProcess | undefined;
  let dir: string;

  beforeAll(ensureBuilt);
  beforeEach(async () => {
    fake = await startSlowOpenMemory(SLOW_MS);
    dir = mkdtempSync(join(tmpdir(), "memgate-shutdown-"));
  });
  afterEach(async () => {
    if (child?.exitCode === null) child.kill("SIGKILL");
    await fake.close();
    rmSync(dir, { recursive: true, force: true });
  });

  test("in-flight requests finish 200, a new one on a keep-alive connection gets 503 + Retry-After, /readyz 503 draining, exit 0", async () => {
    const data = join(dir, "empty.jsonl");
    writeFileSync(data, "");
    const proc = spawn(process.execPath, [BIN, "serve"], {
      cwd: ROOT,
      env: {
        PATH: process.env.PATH ?? "",
        PORT: "0",
        LOG_LEVEL: "info",
        MEMGATE_BACKEND: "openmemory",
        OPENMEMORY_URL: fake.baseUrl,
        MEMGATE_LOCAL_DATA: data,
        MEMGATE_POLICY_DIR: join(ROOT, "policies"),
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    child = proc;
    let stdout = "";
    proc.stdout?.on("data", (c: Buffer) => {
      stdout += c.toString();
    });
    const exited = new Promise<number | null>((resolve) => proc.on("exit", (code) => resolve(code)));
    await waitFor("the listening line", () => /"url":"http:\/\/[^"]+"/.test(stdout));
    const port = Number(/"url":"http:\/\/127\.0\.0\.1:(\d+)"/.exec(stdout)?.[1]);

    const first = await openSocket(port);
    const second = await openSocket(port);
    const queries = () => fake.requests.filter((r) => r.path === "/memory/query").length;

    // A and A2: the backend will take SLOW_MS to answer each.
    fake.fail("slow", 2);
    first.socket.write(
      postText("/v1/retrieve", { userId: "u-1", sessionId: "s-1", query: "coffee", useMemory: true }),
    );
    second.socket.write(
      postText("/v1/retrieve", { userId: "u-1", sessionId: "s-1", query: "oat milk", useMemory: true }),
    );
    await waitFor("A and A2 at the backend", () => queries() === 2);

    const signalled = Date.now();
    proc.kill("SIGTERM");
    await waitFor("the shutdown log line", () => stdout.includes('"shutting down"'));
    // B and the readiness probe: sent on the same (busy, so not idle-closed) keep-alive connections after SIGTERM.
    first.socket.write(
      postText("/v1/retrieve", { userId: "u-1", sessionId: "s-1", query: "tea", useMemory: true }),
    );
    second.socket.write("GET /readyz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: keep-alive\r\n\r\n");

    await Promise.all([first.closed, second.closed]);
    const [a2, ready, ...moreOnSecond] = parseResponses(second.raw());
    expect(moreOnSecond).toEqual([]);
    expect(a2?.status).toBe(200);
    expect(JSON.parse(a2?.body ?? "{}").metadata.fallback).toBeNull();
    expect(ready?.status).toBe(503);
    expect(ready?.headers.connection).toBe("close");
    expect(JSON.parse(ready?.body ?? "{}")).toMatchObject({ status: "draining" });

    const [a, b, ...more] = parseResponses(first.raw());
    expect(more).toEqual([]);
    expect(a?.status).toBe(200);
    const payload = JSON.parse(a?.body ?? "{}");
    expect(payload.metadata.fallback).toBeNull();
    expect(payload.metadata.backend).toBe("openmemory");
    expect(b?.status).toBe(503);
    expect(b?.headers["retry-after"]).toBe("1");
    expect(b?.headers["content-type"]).toMatch(/^application\/problem\+json/);
    expect(b?.headers.connection).toBe("close");
    expect(JSON.parse(b?.body ?? "{}")).toMatchObject({ status: 503, code: "SHUTTING_DOWN" });
    // Only A and A2 reached the backend.
    expect(queries()).toBe(2);

    expect(await exited).toBe(0);
    expect(Date.now() - signalled).toBeLessThan(10_000);
    expect(stdout).toContain('"memgate stopped"');
    // Nothing listens any more.
    const refused = await new Promise<string>((resolve) => {
      const s = connect(port, "127.0.0.1");
      s.once("connect", () => {
        s.destroy();
        resolve("connected");
      });
      s.once("error", (err: NodeJS.ErrnoException) => resolve(err.code ?? "error"));
    });
    expect(refused).toBe("ECONNREFUSED");
  }, 30_000);
});
