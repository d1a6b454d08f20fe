/**
 * The HTTP server's own limits (src/server/serve.ts), tried as a hostile client would over a raw socket: a
 * client that sends its headers slowly, one that sends its body slowly, and more connections than allowed.
 * Each is cut off at its configured limit; the server keeps answering everyone else.
 */
import { connect, type Socket } from "node:net";
import { join } from "node:path";
import { parseEnv } from "../../src/config/env";
import { silentLogger } from "../../src/logging/logger";
import { type Running, startServer } from "../../src/server/serve";

const ROOT = join(__dirname, "../..");

/** What a raw client saw: the bytes the server sent, and after how long the connection closed. */
interface Seen {
  text: string;
  closedAfterMs: number;
}

function open(port: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, "127.0.0.1", () => resolve(socket));
    socket.on("error", reject);
  });
}

/** Writes `parts` on a fresh connection (then stalls) and waits until the server closes it (at most `maxMs`). */
async function stall(port: number, parts: string[], maxMs: number): Promise<Seen> {
  const socket = await open(port);
  const started = Date.now();
  let text = "";
  socket.on("data", (chunk: Buffer) => {
    text += chunk.toString();
  });
  for (const part of parts) socket.write(part);
  return new Promise((resolve) => {
    const giveUp = setTimeout(() => {
      socket.destroy();
      resolve({ text, closedAfterMs: Number.POSITIVE_INFINITY });
    }, maxMs);
    socket.on("close", () => {
      clearTimeout(giveUp);
      resolve({ text, closedAfterMs: Date.now() - started });
    });
  });
}

async function healthz(port: number): Promise<string> {
  const seen = await stall(port, ["GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"], 5000);
  return seen.text.split("\r\n")[0] ?? "";
}

describe("the HTTP server's own limits", () => {
  let running: Running;
  let port: number;
  beforeAll(async () => {
    running = await startServer(
      {
        PORT: "0",
        MEMGATE_POLICY_DIR: join(ROOT, "policies"),
        MEMGATE_LOCAL_DATA: join(ROOT, "config/demo-memories.jsonl"),
        MEMGATE_HEADERS_TIMEOUT_MS: "1000",
        MEMGATE_REQUEST_TIMEOUT_MS: "1500",
        MEMGATE_MAX_CONNECTIONS: "4",
      },
      { logger: silentLogger() },
    );
    port = Number(new URL(running.url).port);
  });
  afterAll(() => running.stop());

  test("a client that sends its headers slowly gets 408 and is cut off at the headers timeout", async () => {
    const seen = await stall(port, ["GET /healthz HTTP/1.1\r\n", "Host: x\r\n"], 10_000);
    expect(seen.text).toMatch(/^HTTP\/1\.1 408 /);
    // The limit is 1 s, checked every second: cut off within about two (Node's default would be 60–90 s).
    expect(seen.closedAfterMs).toBeGreaterThanOrEqual(900);
    expect(seen.closedAfterMs).toBeLessThan(5000);
    expect(await healthz(port)).toBe("HTTP/1.1 200 OK");
  });

  test("a client that sends its body slowly gets 408 and is cut off at the request timeout", async () => {
    const head =
      "POST /v1/retrieve HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 200\r\n\r\n";
    const seen = await stall(port, [head, '{"userId": "u-'], 10_000);
    expect(seen.text).toMatch(/^HTTP\/1\.1 408 /);
    expect(seen.closedAfterMs).toBeGreaterThanOrEqual(1400);
    expect(seen.closedAfterMs).toBeLessThan(6000);
    expect(await healthz(port)).toBe("HTTP/1.1 200 OK");
  });

  test("connections over the cap are closed at once; a freed slot serves again", async () => {
    const held = await Promise.all([open(port), open(port), open(port), open(port)]);
    await new Promise((r) => setTimeout(r, 100)); // let the server accept all four
    const refused = await stall(port, ["GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"], 5000);
    expect(refused.text).toBe("");
    expect(refused.closedAfterMs).toBeLessThan(1000);
    for (const socket of held) socket.destroy();
    await new Promise((r) => setTimeout(r, 100));
    expect(await healthz(port)).toBe("HTTP/1.1 200 OK");
  });

  test("the limits are validated at boot with a line naming the variable", () => {
    expect(() => parseEnv({ MEMGATE_HEADERS_TIMEOUT_MS: "10" })).toThrow(/^MEMGATE_HEADERS_TIMEOUT_MS: /);
    expect(() => parseEnv({ MEMGATE_MAX_CONNECTIONS: "-1" })).toThrow(/^MEMGATE_MAX_CONNECTIONS: /);
    expect(() => parseEnv({ MEMGATE_REQUEST_TIMEOUT_MS: "soon" })).toThrow(/^MEMGATE_REQUEST_TIMEOUT_MS: /);
    const env = parseEnv({});
    expect([env.MEMGATE_HEADERS_TIMEOUT_MS, env.MEMGATE_REQUEST_TIMEOUT_MS]).toEqual([10_000, 30_000]);
    expect([env.MEMGATE_KEEPALIVE_TIMEOUT_MS, env.MEMGATE_MAX_CONNECTIONS]).toEqual([5_000, 10_000]);
  });
});
