import { randomUUID } from "node:crypto";
import express, { type ErrorRequestHandler, type RequestHandler } from "express";
import type { Logger } from "../logging/logger";
import { runWithRequestId } from "../telemetry/log-context";
import { type ErrorCode, HttpProblem, PROBLEM_CONTENT_TYPE, toProblem } from "./errors";

declare global {
  namespace Express {
    interface Locals {
      requestId: string;
    }
  }
}

const SAFE_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * Takes the caller's `x-request-id` when it is safe to echo, else makes one; sets it on the response, and runs the
 * rest of the request in its context so every log line written meanwhile carries it (src/telemetry/log-context.ts).
 */
export function requestId(): RequestHandler {
  return function requestId(req, res, next) {
    const incoming = req.get("x-request-id");
    const id = incoming !== undefined && SAFE_REQUEST_ID.test(incoming) ? incoming : randomUUID();
    res.locals.requestId = id;
    res.setHeader("x-request-id", id);
    runWithRequestId(id, next);
  };
}

/** JSON bodies only (415 otherwise), at most `limit` (413), parsed strictly (400 on malformed JSON). */
export function jsonBody(limit = "64kb"): RequestHandler[] {
  const parse = express.json({ limit, strict: true, type: () => true });
  return [
    function requireJson(req, _res, next) {
      const hasBody =
        req.get("content-length") !== "0" &&
        (req.get("content-length") !== undefined || req.get("transfer-encoding") !== undefined);
      if (hasBody && !req.is(["application/json", "application/*+json"])) {
        next(new HttpProblem("UNSUPPORTED_MEDIA_TYPE", "the body must be application/json"));
        return;
      }
      next();
    },
    parse,
  ];
}

/** body-parser errors carry a `type`; map them onto our codes. */
function bodyParserCode(err: unknown): { code: ErrorCode; detail: string } | undefined {
  if (typeof err !== "object" || err === null || !("type" in err)) return undefined;
  switch ((err as { type: unknown }).type) {
    case "entity.too.large":
      return { code: "PAYLOAD_TOO_LARGE", detail: "the body is larger than 64 KiB" };
    case "entity.parse.failed":
      return { code: "MALFORMED_JSON", detail: "the body is not valid JSON" };
    case "charset.unsupported":
    case "encoding.unsupported":
      return { code: "UNSUPPORTED_MEDIA_TYPE", detail: "unsupported charset or content encoding" };
    case "request.aborted":
    case "request.size.invalid":
      return { code: "MALFORMED_JSON", detail: "the body was incomplete" };
    default:
      return undefined;
  }
}

export function sendProblem(
  res: Parameters<RequestHandler>[1],
  code: ErrorCode,
  detail: string,
  headers: Record<string, string> = {},
): void {
  const problem = toProblem(code, detail, res.locals.requestId ?? "unknown");
  for (const [k, v] of Object.entries(headers)) res.setHeader(k, v);
  res.status(problem.status).type(PROBLEM_CONTENT_TYPE).send(JSON.stringify(problem));
}

/** 404 for everything no route answered. */
export function notFound(): RequestHandler {
  return function notFound(req, res) {
    sendProblem(res, "NOT_FOUND", `no route for ${req.method} ${req.path}`);
  };
}

/** The one error handler: problem+json with a requestId. Unknown errors are logged and answered 500. */
export function errorHandler(logger: Logger): ErrorRequestHandler {
  return function errorHandler(err: unknown, _req, res, next) {
    if (res.headersSent) {
      next(err);
      return;
    }
    if (err instanceof HttpProblem) {
      sendProblem(res, err.code, err.message, err.headers);
      return;
    }
    const mapped = bodyParserCode(err);
    if (mapped) {
      sendProblem(res, mapped.code, mapped.detail);
      return;
    }
    logger.error({ err, requestId: res.locals.requestId }, "unhandled error");
    sendProblem(res, "INTERNAL", "internal error");
  };
}
