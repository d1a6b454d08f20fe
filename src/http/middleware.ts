import { randomUUID } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import express, { type ErrorRequestHandler, type RequestHandler } from "express";
import typeis from "type-is";
import type { Logger } from "../logging/logger";
import { ensureRequestContext, runWithRequestId } from "../telemetry/log-context";
import { type ErrorCode, HttpProblem, PROBLEM_CONTENT_TYPE, toProblem } from "./errors";
import { flushHead, type HeaderPairs } from "./head";
import { headerOf, localsOf, type Middleware, sendText } from "./plain";
import { apiSecurityHeaderList } from "./security-headers";

const SAFE_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** The caller's `x-request-id` when it is safe to echo, else a new one. */
function requestIdOf(req: IncomingMessage): string {
  const incoming = headerOf(req, "x-request-id");
  return incoming !== undefined && SAFE_REQUEST_ID.test(incoming) ? incoming : randomUUID();
}

/**
 * The edge's secure headers (helmet's, as `securityHeaders()` sets them: ./security-headers.ts) and request id (the
 * caller's `x-request-id` when it is safe to echo, else a new one), with the rest of the request run in the id's
 * context so every log line written meanwhile carries it (src/telemetry/log-context.ts). The headers are set aside
 * for the answer (./head.ts) instead of set on the response: a route that writes its head at once writes them with
 * its own (`HotRoute.headOnce`); every other answer, and every error, gets them set first (`flushHead`).
 */
export function edgeHead(): Middleware {
  ensureRequestContext();
  const { removed, set } = apiSecurityHeaderList();
  const secure: HeaderPairs = set.flat();
  return function edgeHead(req, res, next) {
    const id = requestIdOf(req);
    const locals = localsOf(res);
    locals.requestId = id;
    const pairs = secure.slice();
    pairs.push("x-request-id", id);
    locals.head = { removed, pairs, routeStart: pairs.length };
    runWithRequestId(id, next);
  };
}

/**
 * Reads a JSON body: JSON only (415 otherwise), at most `limit` (413), parsed strictly (400 on malformed JSON);
 * `undefined` when the request has none. Rejects with an `HttpProblem` or body-parser's error, which
 * `answerError` maps onto the same codes.
 */
export type JsonBodyReader = (req: IncomingMessage, res: ServerResponse) => Promise<unknown>;

export function jsonBodyReader(limit = "64kb"): JsonBodyReader {
  const parse = express.json({ limit, strict: true, type: () => true });
  const maxBytes = limitBytes(limit);
  return function readJsonBody(req, res) {
    const length = headerOf(req, "content-length");
    if (maxBytes !== undefined && length !== undefined && plainJson(req, length, maxBytes))
      return readPlainJson(req, Number(length));
    const hasBody =
      length !== "0" && (length !== undefined || headerOf(req, "transfer-encoding") !== undefined);
    if (hasBody && !typeis(req, ["application/json", "application/*+json"])) {
      return Promise.reject(new HttpProblem("UNSUPPORTED_MEDIA_TYPE", "the body must be application/json"));
    }
    // Refused at the edge: body-parser would first read (and discard) the whole announced body. The connection is
    // closed after the answer, so the rest of the upload is never read.
    const declared = Number(length ?? Number.NaN);
    if (maxBytes !== undefined && declared > maxBytes && headerOf(req, "content-encoding") === undefined) {
      res.setHeader("connection", "close");
      return Promise.reject(
        new HttpProblem("PAYLOAD_TOO_LARGE", `the body is larger than ${describeBytes(maxBytes)}`),
      );
    }
    return new Promise((resolve, reject) => {
      parse(req as express.Request, res as express.Response, (err?: unknown) => {
        if (err !== undefined && err !== null) reject(err);
        else resolve((req as { body?: unknown }).body);
      });
    });
  };
}

/** The content types a plain body may have (any other goes through type-is and body-parser). */
const PLAIN_JSON_TYPES = new Set(["application/json", "application/json; charset=utf-8"]);

/**
 * Whether a request's body is the plain case: `application/json` (UTF-8), not encoded, not chunked, its length
 * declared in canonical digits and within the limit. type-is and body-parser would take it as JSON, read exactly
 * that many bytes as UTF-8 and parse them: `readPlainJson` does the same without their per-request machinery.
 */
function plainJson(req: IncomingMessage, length: string, maxBytes: number): boolean {
  const { headers } = req;
  const type = headers["content-type"];
  if (type === undefined || !PLAIN_JSON_TYPES.has(type.toLowerCase())) return false;
  if (headers["content-encoding"] !== undefined || headers["transfer-encoding"] !== undefined) return false;
  // A request body-parser would see as finished (on-finished: upgraded, no socket, or nothing left to read) is its.
  const { socket } = req;
  if (
    (req as { upgrade?: boolean }).upgrade === true ||
    req.destroyed ||
    !socket?.readable ||
    (req.complete && !req.readable)
  )
    return false;
  const declared = Number(length);
  return (
    Number.isSafeInteger(declared) && declared > 0 && declared <= maxBytes && String(declared) === length
  );
}

/** The index of the first character that is not JSON whitespace (space, tab, LF, CR). */
function firstNonBlank(text: string): number {
  let i = 0;
  for (; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c !== 0x20 && c !== 0x09 && c !== 0x0a && c !== 0x0d) break;
  }
  return i;
}

/** An error as body-parser reports it (`type`, a 4xx `status`): `answerError` answers it the same way. */
function bodyError(message: string, type: string): Error {
  return Object.assign(new Error(message), { type, status: 400, statusCode: 400, expose: true });
}

/**
 * A plain JSON body (`plainJson`) read and parsed as body-parser's strict JSON parser does: UTF-8 with a leading
 * BOM dropped (iconv-lite's decoding), a first non-blank character `{` or `[`, `JSON.parse`; the body is also
 * `req.body`. Failures carry body-parser's error types: `entity.parse.failed`, `request.aborted`,
 * `request.size.invalid`, or the stream's own error.
 */
function readPlainJson(req: IncomingMessage, expected: number): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let received = 0;
    const cleanup = () => {
      req.off("data", onData);
      req.off("end", onEnd);
      req.off("aborted", onAborted);
      req.off("error", onError);
      req.off("close", onAborted);
    };
    const onData = (chunk: Buffer) => {
      received += chunk.length;
      chunks.push(chunk);
    };
    const onAborted = () => {
      cleanup();
      reject(bodyError("request aborted", "request.aborted"));
    };
    const onError = (err: unknown) => {
      cleanup();
      reject(err);
    };
    const onEnd = () => {
      cleanup();
      if (received !== expected) {
        reject(bodyError("request size did not match content length", "request.size.invalid"));
        return;
      }
      const bytes = chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, received);
      let text = bytes.toString("utf8");
      if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
      // body-parser's special case: an empty body (here, only a BOM) is `{}`.
      if (text.length === 0) {
        (req as { body?: unknown }).body = {};
        resolve({});
        return;
      }
      const first = text.charCodeAt(firstNonBlank(text));
      if (first !== 0x7b && first !== 0x5b) {
        reject(bodyError("the body is not a JSON object or array", "entity.parse.failed"));
        return;
      }
      let body: unknown;
      try {
        body = JSON.parse(text);
      } catch (err) {
        reject(bodyError(err instanceof Error ? err.message : "invalid JSON", "entity.parse.failed"));
        return;
      }
      (req as { body?: unknown }).body = body;
      resolve(body);
    };
    req.on("data", onData);
    req.on("end", onEnd);
    req.on("aborted", onAborted);
    req.on("error", onError);
    req.on("close", onAborted); // gone before its end (after the end, `cleanup` took this listener off)
  });
}

/** `jsonBodyReader` as a step: the body in `req.body`. */
export function jsonBody(limit = "64kb"): Middleware {
  const read = jsonBodyReader(limit);
  return function jsonBody(req, res, next) {
    read(req, res).then(() => next(), next);
  };
}

/** "64kb" → 65536, "1mb" → 1048576, "500" → 500 (the forms this code base passes to jsonBody). */
function limitBytes(limit: string): number | undefined {
  const m = /^(\d+)\s*(b|kb|mb)?$/i.exec(limit.trim());
  if (!m) return undefined;
  const unit = (m[2] ?? "b").toLowerCase();
  return Number(m[1]) * (unit === "mb" ? 1024 * 1024 : unit === "kb" ? 1024 : 1);
}

function describeBytes(n: number): string {
  if (n % (1024 * 1024) === 0) return `${n / (1024 * 1024)} MiB`;
  if (n % 1024 === 0) return `${n / 1024} KiB`;
  return `${n} bytes`;
}

/** The limit body-parser reports on its 413 (bytes), as text. */
function tooLarge(err: object): string {
  const limit = (err as { limit?: unknown }).limit;
  return `the body is larger than ${typeof limit === "number" ? describeBytes(limit) : "the limit"}`;
}

/** body-parser errors carry a `type`; map them onto our codes. */
function bodyParserCode(err: unknown): { code: ErrorCode; detail: string } | undefined {
  if (typeof err !== "object" || err === null) return undefined;
  switch ((err as { type?: unknown }).type) {
    case "entity.too.large":
      return { code: "PAYLOAD_TOO_LARGE", detail: tooLarge(err) };
    case "entity.parse.failed":
      return { code: "MALFORMED_JSON", detail: "the body is not valid JSON" };
    case "charset.unsupported":
    case "encoding.unsupported":
      return { code: "UNSUPPORTED_MEDIA_TYPE", detail: "unsupported charset or content encoding" };
    case "request.aborted":
    case "request.size.invalid":
      return { code: "MALFORMED_JSON", detail: "the body was incomplete" };
    default:
      return clientStatusCode(err);
  }
}

/**
 * Other 4xx errors body-parser or express raise (http-errors with `expose`), e.g. a gzip/br body that does not
 * decompress (found by test/fuzz/headers.fuzz.test.ts): the caller's fault, never a 500.
 */
function clientStatusCode(err: object): { code: ErrorCode; detail: string } | undefined {
  const { status, expose } = err as { status?: unknown; expose?: unknown };
  if (expose !== true || typeof status !== "number" || status < 400 || status > 499) return undefined;
  if (status === 413) return { code: "PAYLOAD_TOO_LARGE", detail: tooLarge(err) };
  if (status === 415)
    return { code: "UNSUPPORTED_MEDIA_TYPE", detail: "unsupported charset or content encoding" };
  return {
    code: "MALFORMED_JSON",
    detail: "the request could not be read (e.g. a body that does not decode)",
  };
}

/** A problem+json answer (docs/api.md#errors) with the request's id and any extra headers (e.g. Retry-After). */
export function sendProblem(
  res: ServerResponse,
  code: ErrorCode,
  detail: string,
  headers: Record<string, string> = {},
): void {
  const problem = toProblem(code, detail, localsOf(res).requestId ?? "unknown");
  for (const [k, v] of Object.entries(headers)) res.setHeader(k, v);
  sendText(res, problem.status, PROBLEM_CONTENT_TYPE, JSON.stringify(problem));
}

/** 404 for everything no route answered. */
export function notFound(): RequestHandler {
  return function notFound(req, res) {
    sendProblem(res, "NOT_FOUND", `no route for ${req.method} ${req.path}`);
  };
}

/**
 * The answer to an error that ended a request: an `HttpProblem` as itself, body-parser's and express's 4xx errors
 * as their codes, anything else (a bug) logged and answered 500 — problem+json with the request id in every case.
 * An answer already started and not finished is cut off instead (the connection is destroyed: the client sees it
 * fail).
 */
export function answerError(err: unknown, req: IncomingMessage, res: ServerResponse, logger: Logger): void {
  if (res.headersSent) {
    logger.error({ err, requestId: localsOf(res).requestId }, "error after the answer started");
    if (!res.writableEnded) res.destroy(err instanceof Error ? err : undefined);
    return;
  }
  flushHead(res); // the edge's headers first, as every answer has them
  // Refused before its body was read (401, 403, 413, …): close the connection rather than let Node read and
  // discard whatever the client is still uploading.
  const announced =
    headerOf(req, "transfer-encoding") !== undefined || Number(headerOf(req, "content-length") ?? 0) > 0;
  if (announced && !req.complete) res.setHeader("connection", "close");
  if (err instanceof HttpProblem) {
    sendProblem(res, err.code, err.message, err.headers);
    return;
  }
  const mapped = bodyParserCode(err);
  if (mapped) {
    sendProblem(res, mapped.code, mapped.detail);
    return;
  }
  logger.error({ err, requestId: localsOf(res).requestId }, "unhandled error");
  sendProblem(res, "INTERNAL", "internal error");
}

/** The one error handler of the Express routes: `answerError`, as for the hot routes. */
export function errorHandler(logger: Logger): ErrorRequestHandler {
  return function errorHandler(err: unknown, req, res, _next) {
    answerError(err, req, res, logger);
  };
}
