/**
 * The physical floors under a memgate cache hit (issue 29), one per process (started by bench/floors.bench.ts
 * through `Helper.start`; never in the process that makes the load). Both are bare `node:http` servers that drain
 * the request body and answer, with `content-type: application/json` and a `content-length`, the bytes set over
 * IPC — memgate's own cache-hit answer, captured from a real hit:
 *
 *   memory  answers the bytes from memory: what any Node server pays to send that answer.
 *   redis   does one Redis `GET` of those bytes (ioredis, auto-pipelining on as memgate's default, the reply as a
 *           Buffer), then answers them: the least a Node gateway whose cache lives in Redis pays.
 *
 * IPC: `{op: "answer", body, redisUrl?}` sets the bytes (redis: `SET`s them under its key first); every message is
 * answered with `{port, requests}`.
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import Redis from "ioredis";

export type FloorRole = "memory" | "redis";
export type FloorRequest = { op: "answer"; body: string; redisUrl?: string } | { op: "stats" };
export interface FloorReply {
  port?: number;
  requests?: number;
}

const KEY = "floorbench:answer";

async function main(role: FloorRole): Promise<void> {
  let answer = Buffer.from("{}");
  let redis: Redis | undefined;
  let requests = 0;
  const send = (res: ServerResponse, body: Buffer) => {
    res.writeHead(200, { "content-type": "application/json", "content-length": body.length }).end(body);
  };
  const handler = (req: IncomingMessage, res: ServerResponse) => {
    requests++;
    req.on("data", () => undefined);
    req.on("end", () => {
      if (role === "memory" || redis === undefined) return send(res, answer);
      redis.getBuffer(KEY).then(
        (body) => send(res, body ?? answer),
        () => {
          res.writeHead(500).end();
        },
      );
    });
  };
  const server = createServer(handler);
  server.keepAliveTimeout = 30_000;
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address() as AddressInfo;
  process.on("message", (m: FloorRequest) => {
    void (async () => {
      if (m.op === "answer") {
        answer = Buffer.from(m.body);
        if (role === "redis") {
          if (m.redisUrl === undefined) throw new Error("the redis floor needs redisUrl");
          redis ??= new Redis(m.redisUrl, { enableAutoPipelining: true, maxRetriesPerRequest: 1 });
          await redis.set(KEY, answer);
        }
      }
      process.send?.({ port: address.port, requests } satisfies FloorReply);
    })().catch((err: unknown) => {
      console.error(err);
      process.exit(1);
    });
  });
  process.on("SIGTERM", () => {
    redis?.disconnect();
    process.exit(0);
  });
  process.send?.({ port: address.port } satisfies FloorReply);
}

const role = process.argv[2];
if (role !== "memory" && role !== "redis") {
  console.error(`usage: floors.ts memory|redis (got ${role})`);
  process.exit(2);
}
void main(role);
