import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { connect } from "node:net";
import fc from "fast-check";
import request from "supertest";
import { type Harness, KEYS, makeHarness } from "../helpers/harness";

/**
 * Fuzzing request headers: every form of credentials (well-formed or not), request ids, content types — and,
 * over a raw socket, what an HTTP client library would refuse to send (CR/LF, NUL, obs-fold, conflicting
 * framing). Never a 5xx, never a crash; a request id is only echoed when it is safe.
 */
const BODY = { userId: "u-123", sessionId: "s-9", query: "tea", useMemory: true };
const SAFE_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** Header values Node's client accepts: tab, visible ASCII, space, obs-text. */
const headerValue = fc
  .array(
    fc.oneof(
      { weight: 8, arbitrary: fc.integer({ min: 0x20, max: 0x7e }) },
      { weight: 1, arbitrary: fc.constant(0x09) },
      { weight: 1, arbitrary: fc.integer({ min: 0x80, max: 0xff }) },
    ),
    { maxLength: 80 },
  )
  .map((codes) => String.fromCharCode(...codes).trim());

const key = fc.oneof(
  fc.constantFrom<string>(KEYS.acmeChat, KEYS.acmeOps, KEYS.globex, "mg_unknown_key_000000"),
  headerValue,
  fc.constant("k".repeat(600)),
);
const scheme = fc.constantFrom("Bearer", "bearer", "BEARER", "Api-Key", "api-key", "Basic", "Token", "");
const authorization = fc
  .tuple(scheme, fc.constantFrom(" ", "  ", "\t", ""), key)
  .map(([s, gap, k]) => `${s}${gap}${k}`);

const headerSet = fc.record(
  {
    authorization,
    "x-api-key": key,
    "x-request-id": fc.oneof(headerValue, fc.stringMatching(/^[A-Za-z0-9._:-]{1,40}$/)),
    "content-type": fc.constantFrom(
      "application/json",
      "application/json; charset=utf-8",
      "application/json; charset=latin1",
      "application/merge-patch+json",
      "text/plain",
      "application/x-www-form-urlencoded",
      "multipart/form-data; boundary=x",
    ),
    "content-encoding": fc.constantFrom("identity", "gzip", "br", "x-unknown"),
  },
  { requiredKeys: ["content-type"] },
);

interface RawAnswer {
  statusLine: string;
  text: string;
}

async function raw(port: number, text: string): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, "127.0.0.1");
    let data = "";
    const timer = setTimeout(() => socket.destroy(), 3000);
    socket.on("data", (c: Buffer) => {
      data += c.toString("latin1");
    });
    socket.on("error", reject);
    socket.on("close", () => {
      clearTimeout(timer);
      resolve({ statusLine: data.split("\r\n")[0] ?? "", text: data });
    });
    socket.write(text, "latin1");
  });
}

const json = JSON.stringify(BODY);
const post = (headers: string, body = json) =>
  `POST /v1/retrieve HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n${headers}` +
  `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;

describe("fuzz: request headers", () => {
  let h: Harness;
  let server: Server;
  let port: number;
  beforeAll(async () => {
    h = await makeHarness({ env: { MEMGATE_KEY_RATE_LIMIT: "1000000/60" } });
    server = createServer(h.app).listen(0, "127.0.0.1");
    await new Promise<void>((resolve) => server.once("listening", () => resolve()));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(async () => {
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await h.close();
  });

  test("any credentials / request id / content type: 200, 401, 403 or 415 — never 5xx", async () => {
    const seen = new Set<number>();
    await fc.assert(
      fc.asyncProperty(headerSet, async (headers) => {
        const res = await request(h.app).post("/v1/retrieve").set(headers).send(json);
        seen.add(res.status);
        expect([200, 400, 401, 403, 415]).toContain(res.status);
        if (res.status === 401) expect(res.headers["www-authenticate"]).toBe('Bearer realm="memgate"');
        if (res.status !== 200) expect(res.headers["content-type"]).toMatch(/^application\/problem\+json/);
        expect(res.headers["x-request-id"]).toMatch(SAFE_ID);
        const sent = headers["x-request-id"];
        if (sent !== undefined && !SAFE_ID.test(sent)) expect(res.headers["x-request-id"]).not.toBe(sent);
      }),
      {
        numRuns: 300,
        // A 200 needs a valid key, a JSON content type and no content encoding at once: random draws can miss
        // it (seen in a loaded CI run), so one of each answer the assertion below expects is always tried.
        examples: [
          [{ authorization: `Bearer ${KEYS.acmeChat}`, "content-type": "application/json" }],
          [{ "x-api-key": "mg_unknown_key_000000", "content-type": "application/json" }],
          [{ authorization: `Bearer ${KEYS.acmeChat}`, "content-type": "text/plain" }],
        ],
      },
    );
    expect([...seen]).toEqual(expect.arrayContaining([200, 401, 415]));
    expect(h.logs.join("")).not.toContain("unhandled error");
  });

  test.each([
    ["CR/LF injected into a header value", "X-Request-Id: a\r\nSet-Cookie: pwned=1\r\n"],
    ["a bare CR in a value", "X-Api-Key: mg_a\rb\r\n"],
    ["a bare LF line ending", `X-Api-Key: ${KEYS.acmeChat}\n`],
    ["NUL in a value", "Authorization: Bearer mg_\u0000key\r\n"],
    ["obs-fold (a continuation line)", "Authorization: Bearer\r\n mg_folded_key\r\n"],
    ["a space before the colon", `X-Api-Key : ${KEYS.acmeChat}\r\n`],
    [
      "two Authorization headers",
      `Authorization: Bearer ${KEYS.acmeChat}\r\nAuthorization: Bearer ${KEYS.globex}\r\n`,
    ],
    ["two x-api-key headers", `X-Api-Key: ${KEYS.acmeChat}\r\nX-Api-Key: ${KEYS.globex}\r\n`],
    [
      "Authorization and x-api-key disagreeing",
      `Authorization: Bearer ${KEYS.acmeChat}\r\nX-Api-Key: ${KEYS.globex}\r\n`,
    ],
    ["an 80 KB header", `X-Pad: ${"a".repeat(80_000)}\r\n`],
    ["non-ASCII bytes in the key", "X-Api-Key: mg_\u00e9\u00ff\r\n"],
    ["a header name with a slash", "X/Api-Key: x\r\n"],
  ])("raw: %s → a 4xx (or a refused connection), never a 5xx, no header injected", async (_name, headers) => {
    const answer = await raw(port, post(`Content-Type: application/json\r\n${headers}`));
    if (answer.statusLine !== "") expect(answer.statusLine).toMatch(/^HTTP\/1\.1 4\d\d /);
    expect(answer.text.toLowerCase()).not.toContain("set-cookie: pwned");
  });

  test("raw: conflicting framing (request smuggling shapes) is refused with 400", async () => {
    for (const text of [
      `POST /v1/retrieve HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n{"a":1}`,
      `POST /v1/retrieve HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n`,
      `POST /v1/retrieve HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked, identity\r\n\r\n0\r\n\r\n`,
      `POST /v1/retrieve HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n`,
    ]) {
      const answer = await raw(port, text);
      expect(answer.statusLine).toMatch(/^HTTP\/1\.1 400 /);
    }
  });

  test("the server is still answering afterwards", async () => {
    const answer = await raw(port, post(`Content-Type: application/json\r\nX-Api-Key: ${KEYS.acmeChat}\r\n`));
    expect(answer.statusLine).toBe("HTTP/1.1 200 OK");
  });
});
