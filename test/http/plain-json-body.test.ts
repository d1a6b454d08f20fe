/**
 * `jsonBodyReader`'s plain case (src/http/middleware.ts `readPlainJson`: `application/json`, a declared length,
 * not encoded) answers every body as body-parser does: the same body, or the same problem. The same bytes sent as
 * `application/vnd.memgate+json` take body-parser's path.
 */
import { createServer, request, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { answerError, jsonBodyReader } from "../../src/http/middleware";
import { sendJson } from "../../src/http/plain";
import { silentLogger } from "../../src/logging/logger";

const read = jsonBodyReader("64kb");
let server: Server;
let port = 0;

beforeAll(async () => {
  const logger = silentLogger();
  server = createServer((req, res) => {
    read(req, res).then(
      (body) =>
        sendJson(
          res,
          200,
          JSON.stringify({ body: body ?? null, reqBody: (req as { body?: unknown }).body ?? null }),
        ),
      (err: unknown) => answerError(err, req, res, logger),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  port = (server.address() as AddressInfo).port;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

function post(bytes: Buffer, type: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        port,
        host: "127.0.0.1",
        method: "POST",
        path: "/",
        headers: { "content-type": type, "content-length": bytes.length },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString() }));
      },
    );
    req.on("error", reject);
    req.end(bytes);
  });
}

const BOM = Buffer.from([0xef, 0xbb, 0xbf]);
const cases: Array<[string, Buffer]> = [
  ["an object", Buffer.from('{"userId":"u-1","query":"what do I order?"}')],
  ["an array", Buffer.from("[1,2,3]")],
  ["leading blanks", Buffer.from(' \t\r\n{"a":1}')],
  ["a BOM", Buffer.concat([BOM, Buffer.from('{"a":"é"}')])],
  ["only a BOM", BOM],
  ["a string", Buffer.from('"text"')],
  ["a number", Buffer.from("12")],
  ["null", Buffer.from("null")],
  ["blanks only", Buffer.from("   ")],
  ["unfinished", Buffer.from('{"a":')],
  ["trailing garbage", Buffer.from('{"a":1}x')],
  [
    "invalid UTF-8",
    Buffer.concat([Buffer.from('{"a":"'), Buffer.from([0xc3, 0x28, 0xff]), Buffer.from('"}')]),
  ],
  ["a __proto__ key", Buffer.from('{"__proto__":{"x":1},"a":2}')],
  ["unicode", Buffer.from('{"q":"日本語 🎉"}')],
];

describe("jsonBodyReader, plain JSON", () => {
  it.each(cases)("answers as body-parser does: %s", async (_name, bytes) => {
    for (const type of ["application/json", "application/json; charset=utf-8", "APPLICATION/JSON"]) {
      const plain = await post(bytes, type);
      const parser = await post(bytes, "application/vnd.memgate+json");
      expect(plain).toEqual(parser);
    }
  });
});
