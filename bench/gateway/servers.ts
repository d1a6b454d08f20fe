/**
 * The gateway bench's helper servers, one role per process (started by bench/gateway.bench.ts through
 * `Helper.start`; never in the process that makes the load):
 *
 *   backend  a fake OpenMemory: `POST /memory/query` answers, after a fixed delay (0 ms by default, changed over
 *            IPC), one precomputed body of 16 matches × ~500 chars (the corpus of bench/lib/corpus.ts), the
 *            size a default policy asks for (topK 8 × overfetch 2); `GET /health` answers `{ok: true}`.
 *   zep      a fake Zep Cloud (`/api/v2`): `POST /graph/search` answers at once (or after the same delay; with
 *            `every`, every answer after it, the thread reads' 404 too) one
 *            precomputed body per scope — 16 edges or 16 episodes × ~500 chars, cross-encoder scores, every field
 *            Zep sends (snake_case) —, the size the default policy asks each scope for; `GET /users/{id}` a user,
 *            `GET /projects/info` a project.
 *   floor    a bare Express 5 app with one route, `POST /floor`, that answers `{"ok":true}` and does nothing else:
 *            the floor under any Express gateway on this machine. A second route, `POST /floor-answer`, answers
 *            the JSON bytes set over IPC (`answer`: bench/zep.bench.ts gives it a memgate cache hit's answer), so
 *            the cost of sending a gateway's answer itself can be told from the gateway's work.
 *   sink     an OTLP/HTTP receiver that reads and discards every export (200, empty protobuf answer), so the
 *            gateway's span export does its real work (batching, protobuf, HTTP) without a collector.
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import express from "express";
import { makeCandidates } from "../lib/corpus";

export type ServerRole = "backend" | "zep" | "floor" | "sink";
/** `delay` with `every`: the fake Zep delays every answer (its thread reads' 404 too), not only its searches. */
export type ServerRequest =
  | { op: "delay"; ms: number; every?: boolean }
  | { op: "stats" }
  | { op: "answer"; body: string };
export interface ServerReply {
  port?: number;
  /** Requests being answered now (backend: waiting out the delay). */
  pending?: number;
  requests?: number;
  bytes?: number;
}

const SECTORS = { message: "episodic", fact: "semantic", summary: "reflective" } as const;

/** The fake backend's one answer: 16 matches with z-scores spread like a real answer's (mean 0, sd 1). */
export function queryAnswer(): string {
  const candidates = makeCandidates({ count: 16, chars: 500, seed: 7 });
  const matches = candidates.map((c, i) => ({
    id: c.id,
    content: c.content,
    score: Math.round((1.6 - (3.2 * i) / (candidates.length - 1)) * 1000) / 1000,
    primary_sector: SECTORS[c.type],
    sectors: [SECTORS[c.type]],
    salience: 0.5,
    last_seen_at: Date.parse(c.timestamp),
    path: [c.id],
  }));
  return JSON.stringify({ query: "bench", matches });
}

/** The fake Zep's `graph.search` answers, by scope: 16 results with cross-encoder scores (also as `relevance`). */
export function zepSearchAnswers(): { edges: string; episodes: string } {
  const candidates = makeCandidates({ count: 16, chars: 500, seed: 11 });
  const score = (i: number) => Math.round((0.95 - (0.8 * i) / (candidates.length - 1)) * 1000) / 1000;
  const edges = candidates.map((c, i) => ({
    uuid: `edge-${c.id}`,
    fact: c.content,
    name: "MENTIONS",
    created_at: c.timestamp,
    valid_at: c.timestamp,
    source_node_uuid: "node-user",
    target_node_uuid: `node-${i}`,
    episodes: [`episode-${c.id}`],
    score: score(i),
    relevance: score(i),
  }));
  const episodes = candidates.map((c, i) => ({
    uuid: `episode-${c.id}`,
    content: c.content,
    created_at: c.timestamp,
    role: i % 2 === 0 ? "Ana" : "assistant",
    role_type: i % 2 === 0 ? "user" : "assistant",
    thread_id: c.sessionId,
    processed: true,
    score: score(i),
    relevance: score(i),
  }));
  return { edges: JSON.stringify({ edges }), episodes: JSON.stringify({ episodes }) };
}

function drain(req: IncomingMessage, done: (bytes: number) => void): void {
  let bytes = 0;
  req.on("data", (c: Buffer) => {
    bytes += c.length;
  });
  req.on("end", () => done(bytes));
}

function fakeBackend(stats: { pending: number; requests: number; delayMs: number }) {
  const answer = Buffer.from(queryAnswer());
  const health = Buffer.from('{"ok":true}');
  return (req: IncomingMessage, res: ServerResponse) => {
    stats.requests++;
    drain(req, () => {
      const body = req.url === "/health" ? health : answer;
      const send = () => {
        stats.pending--;
        res.writeHead(200, { "content-type": "application/json", "content-length": body.length }).end(body);
      };
      stats.pending++;
      if (stats.delayMs > 0) setTimeout(send, stats.delayMs);
      else send();
    });
  };
}

function fakeZep(stats: { pending: number; requests: number; delayMs: number; delayEvery: boolean }) {
  const answers = zepSearchAnswers();
  const edges = Buffer.from(answers.edges);
  const episodes = Buffer.from(answers.episodes);
  const user = Buffer.from(
    JSON.stringify({ user_id: "bench-user", uuid: "u-1", created_at: "2026-01-01T00:00:00Z", metadata: {} }),
  );
  const project = Buffer.from(
    JSON.stringify({ project: { uuid: "p-1", name: "bench", created_at: "2026-01-01T00:00:00Z" } }),
  );
  const missing = Buffer.from('{"message":"not found"}');
  return (req: IncomingMessage, res: ServerResponse) => {
    stats.requests++;
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const url = req.url ?? "";
      let status = 200;
      let body: Buffer;
      if (req.method === "POST" && url === "/api/v2/graph/search") {
        // The scope is all the fake reads of the request (a string search: the fake's own cost stays small).
        body = Buffer.concat(chunks).includes('"scope":"episodes"') ? episodes : edges;
      } else if (req.method === "GET" && url.startsWith("/api/v2/users/")) body = user;
      else if (req.method === "GET" && url === "/api/v2/projects/info") body = project;
      else {
        status = 404;
        body = missing;
      }
      const send = () => {
        stats.pending--;
        res
          .writeHead(status, { "content-type": "application/json", "content-length": body.length })
          .end(body);
      };
      stats.pending++;
      if (stats.delayMs > 0 && (stats.delayEvery || (status === 200 && req.method === "POST")))
        setTimeout(send, stats.delayMs);
      else send();
    });
  };
}

function otlpSink(stats: { requests: number; bytes: number }) {
  return (req: IncomingMessage, res: ServerResponse) => {
    drain(req, (bytes) => {
      stats.requests++;
      stats.bytes += bytes;
      res.writeHead(200, { "content-type": "application/x-protobuf", "content-length": 0 }).end();
    });
  };
}

async function main(role: ServerRole): Promise<void> {
  const stats = { pending: 0, requests: 0, bytes: 0, delayMs: 0, delayEvery: false };
  let answer = Buffer.from("{}");
  let listen: (port: number, host: string, cb: () => void) => { address(): AddressInfo | string | null };
  if (role === "floor") {
    const app = express();
    app.post("/floor", (_req, res) => {
      res.json({ ok: true });
    });
    app.post("/floor-answer", (_req, res) => {
      res.type("application/json").send(answer);
    });
    listen = (port, host, cb) => app.listen(port, host, cb);
  } else {
    const server = createServer(
      role === "backend" ? fakeBackend(stats) : role === "zep" ? fakeZep(stats) : otlpSink(stats),
    );
    server.keepAliveTimeout = 30_000;
    listen = (port, host, cb) => server.listen(port, host, cb);
  }
  const server = await new Promise<{ address(): AddressInfo | string | null }>((resolve) => {
    const s = listen(0, "127.0.0.1", () => resolve(s));
  });
  const address = server.address();
  process.on("message", (m: ServerRequest) => {
    if (m.op === "delay") {
      stats.delayMs = m.ms;
      stats.delayEvery = m.every === true;
    }
    if (m.op === "answer") answer = Buffer.from(m.body);
    process.send?.({
      pending: stats.pending,
      requests: stats.requests,
      bytes: stats.bytes,
    } satisfies ServerReply);
  });
  process.on("SIGTERM", () => process.exit(0));
  process.send?.({ port: typeof address === "object" && address !== null ? address.port : 0 });
}

const role = process.argv[2];
if (role !== "backend" && role !== "zep" && role !== "floor" && role !== "sink") {
  console.error(`usage: servers.ts backend|zep|floor|sink (got ${role})`);
  process.exit(2);
}
void main(role);
