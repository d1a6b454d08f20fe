/**
 * The HTTP layer on Node's own request and response, without Express: what the edge steps every request takes
 * (src/http/app.ts) and the hot routes served before Express (`POST /v1/retrieve`) are written against, so that
 * the Express routes and the hot ones share one implementation of each step (authentication, limits, body,
 * errors, answers). An Express request and response are Node's with more methods, so everything here is also an
 * Express middleware.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import parseurl from "parseurl";
import type { Principal } from "../tenants/types";
import { flushHead, type PendingHead, writeHeadOnce } from "./head";

/** What a request carries from one step to the next (Express's `res.locals`, made here when Express is not used). */
export interface RequestLocals {
  /** The request id (`edgeHead()`, src/http/middleware.ts). */
  requestId?: string;
  /** The caller, set by authentication (src/http/auth.ts). */
  principal?: Principal;
  /**
   * The route template, set by a handler Express did not route by path (the drop-in proxies' mount path, the hot
   * routes served before Express): src/telemetry/http-server.ts.
   */
  httpRoute?: string;
  /** The edge's headers and the route's, set aside until the answer writes its head (./head.ts). */
  head?: PendingHead | undefined;
}

declare global {
  namespace Express {
    /** Express's `res.locals` is the same object (`localsOf`). */
    interface Locals extends RequestLocals {}
  }
}

export type Next = (err?: unknown) => void;
/** A connect-style step: Node's request and response; Express takes it as a middleware as it is. */
export type Middleware = (req: IncomingMessage, res: ServerResponse, next: Next) => void;

/** The request's locals: Express's `res.locals` (Express keeps an object set before it runs). */
export function localsOf(res: ServerResponse): RequestLocals {
  const holder = res as ServerResponse & { locals?: RequestLocals };
  holder.locals ??= Object.create(null) as RequestLocals;
  return holder.locals;
}

/** One value of a request header (Node joins repeated headers with ", "; `set-cookie` is never asked for here). */
export function headerOf(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value.join(", ") : value;
}

/** The request's path without its query, as Express's `req.path` reads it (parseurl, memoized on the request). */
export function requestPath(req: IncomingMessage): string {
  return parseurl(req)?.pathname ?? "/";
}

/**
 * Runs `steps` in order, each calling `next()` to go on or `next(err)` to stop; then `done`, or `failed` with the
 * error (also one a step throws). The edge of every request (src/http/app.ts) runs on it.
 */
export function runSteps(
  req: IncomingMessage,
  res: ServerResponse,
  steps: readonly Middleware[],
  done: () => void,
  failed: (err: unknown) => void,
): void {
  let i = 0;
  const next: Next = (err) => {
    if (err !== undefined && err !== null) return failed(err);
    const step = steps[i++];
    if (step === undefined) return done();
    try {
      step(req, res, next);
    } catch (e) {
      failed(e);
    }
  };
  next();
}

/**
 * Sends a body as Express's `res.send` does: `Content-Type` (a text gets `charset=utf-8` added when its type has
 * none; a Buffer without a type is `application/octet-stream`), `Content-Length`, no body for HEAD, and neither
 * body nor those headers for 204 and 304. Unlike `res.send`, a long text is not copied into a Buffer first: Node
 * encodes it as it writes. The headers set aside for the answer (./head.ts) are written first: with its own
 * `Content-Type` and `Content-Length` in one `writeHead` when it may, else set on the response.
 */
export function sendBody(
  res: ServerResponse,
  status: number,
  body: string | Buffer,
  contentType?: string,
): void {
  res.statusCode = status;
  if (status === 204 || status === 304) {
    flushHead(res);
    res.removeHeader("Content-Type");
    res.removeHeader("Content-Length");
    res.removeHeader("Transfer-Encoding");
    res.end();
    return;
  }
  if (typeof body === "string") {
    const type = contentType ?? "text/plain";
    const value = /;\s*charset=/i.test(type) ? type : `${type}; charset=utf-8`;
    const length = Buffer.byteLength(body, "utf8");
    if (!writeHeadOnce(res, status, value, length)) {
      res.setHeader("Content-Type", value);
      res.setHeader("Content-Length", length);
    }
  } else if (contentType === undefined || !writeHeadOnce(res, status, contentType, body.length)) {
    flushHead(res);
    if (contentType !== undefined) res.setHeader("Content-Type", contentType);
    else if (!res.hasHeader("Content-Type")) res.setHeader("Content-Type", "application/octet-stream");
    res.setHeader("Content-Length", body.length);
  }
  if (res.req?.method === "HEAD") res.end();
  else res.end(body);
}

/** A text answer (`res.send(text)` with its content type set). */
export function sendText(res: ServerResponse, status: number, contentType: string, text: string): void {
  sendBody(res, status, text, contentType);
}

/** JSON text as Express's `res.json` sends it: `application/json; charset=utf-8`. */
export function sendJson(res: ServerResponse, status: number, json: string | Buffer): void {
  // A string gets its charset from sendBody; bytes (a Redis hit's UTF-8 answer) are sent as they are.
  sendBody(
    res,
    status,
    json,
    typeof json === "string" ? "application/json" : "application/json; charset=utf-8",
  );
}

/** A signal aborted when the client goes away before its answer is written (the listener goes with `close`). */
export function abortOnClose(res: ServerResponse): AbortSignal {
  return closeSignal(res)();
}

/**
 * `abortOnClose`'s mechanism, with the signal made only when first asked for (a cache hit never asks: an AbortSignal is not
 * free). The client going away is watched from now on: a signal asked for after that is made aborted.
 */
export function closeSignal(res: ServerResponse): () => AbortSignal {
  let controller: AbortController | undefined;
  let gone = false;
  res.on("close", () => {
    // (`on`: a response closes once; see src/telemetry/http-server.ts)
    if (res.writableFinished) return;
    gone = true;
    controller?.abort();
  });
  return () => {
    if (controller === undefined) {
      controller = new AbortController();
      if (gone) controller.abort();
    }
    return controller.signal;
  };
}
