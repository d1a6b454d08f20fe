import { randomUUID } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import express, { type ErrorRequestHandler, type RequestHandler } from "express";
import typeis from "type-is";
import type { Logger } from "../logging/logger";
import { ensureRequestContext, runWithRequestId } from "../telemetry/log-context";
import { type ErrorCode, HttpProblem, PROBLEM_CONTENT_TYPE, toProblem } from "./errors";
import { headerOf, localsOf, type Middleware, sendText } from "./plain";

const SAFE_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * Takes the caller's `x-request-id` when it is safe to echo, else makes one; sets it on the response, and runs the
 * rest of the request in its context so every log line written meanwhile carries it (src/telemetry/log-context.ts).
 */
export function requestId(): Middleware {
  ensureRequestContext();
  return function requestId(req, res, next) {
    const incoming = headerOf(req, "x-request-id");
    const id = incoming !== undefined && SAFE_REQUEST_ID.test(incoming) ? incoming : randomUUID();
    localsOf(res).requestId = id;
    res.setHeader("x-request-id", id);
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
