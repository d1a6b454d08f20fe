/**
 * The response head of the hot answers written at once (issue 29): the edge's headers (helmet's secure headers, the
 * request id) and a route's own (the key's limit, the policy that answered) are kept in the request's locals instead
 * of being set one `setHeader` at a time, and the answer writes them with its `Content-Type` and `Content-Length` in
 * one `res.writeHead(status, pairs)` (`sendBody`, ./plain.ts): the same header lines in the same order, without
 * Node's per-header bookkeeping (≈19 `setHeader` calls, then their map read back to write the head).
 *
 * Only a route that says so (`HotRoute.headOnce`) is answered this way: one whose every answer goes through
 * `sendBody` or `answerError` (./middleware.ts). For every other route, and for every error, the pending headers
 * are set on the response (`flushHead`) before anything else is, in the order the edge steps set them before:
 * whatever reads headers back (`getHeader`, Express, the MCP transport) finds them as it did.
 */
import type { ServerResponse } from "node:http";
import { localsOf } from "./plain";

/** Header names and values, flat: name, value, name, value… (what `writeHead` takes). */
export type HeaderPairs = Array<string | number | readonly string[]>;

/** What the edge set aside for an answer: headers to remove, then every header to set, in order. */
export interface PendingHead {
  /** Headers the edge removes (helmet's `X-Powered-By`), none of which an answer written at once has. */
  removed: readonly string[];
  /** The edge's headers (constant for a process but for the request id) and then the route's, in order. */
  pairs: HeaderPairs;
  /** Where the route's own headers start in `pairs` (they replace one another by name, as `setHeader` does). */
  routeStart: number;
}

/** Sets the headers the edge set aside (in their order), once; a response without any is left as it is. */
export function flushHead(res: ServerResponse): void {
  const locals = localsOf(res);
  const head = locals.head;
  if (head === undefined) return;
  locals.head = undefined;
  // Headers set directly meanwhile (an error path's `connection: close`) came after the edge's: they stay after,
  // with the case of their names (Node's `getRawHeaderNames`, which @types/node does not declare here).
  const raw = (res as ServerResponse & { getRawHeaderNames(): string[] }).getRawHeaderNames();
  const later = raw.map((name) => [name, res.getHeader(name)] as const);
  for (const [name] of later) res.removeHeader(name);
  for (const name of head.removed) res.removeHeader(name);
  const { pairs } = head;
  for (let i = 0; i < pairs.length; i += 2)
    res.setHeader(pairs[i] as string, pairs[i + 1] as string | number | readonly string[]);
  for (const [name, value] of later) if (value !== undefined) res.setHeader(name, value);
}

/**
 * A header of the answer: kept with the pending head when there is one (replacing a route header of the same name,
 * as `setHeader` does), else `res.setHeader`.
 */
export function setAnswerHeader(res: ServerResponse, name: string, value: string | number): void {
  const head = localsOf(res).head;
  if (head === undefined) {
    res.setHeader(name, value);
    return;
  }
  const { pairs } = head;
  const lower = name.toLowerCase();
  for (let i = head.routeStart; i < pairs.length; i += 2) {
    if ((pairs[i] as string).toLowerCase() === lower) {
      pairs[i] = name;
      pairs[i + 1] = value;
      return;
    }
  }
  pairs.push(name, value);
}

/**
 * Writes the head at once with `Content-Type` and `Content-Length` when the pending head is the whole head (no
 * header was set on the response directly), and answers true; else sets the pending headers on the response
 * (`flushHead`) and answers false: the caller sets its own and writes as before. Only for a 200: an answer whose
 * status something reads headers back for (the access log, a 429's content type) keeps `setHeader`.
 */
export function writeHeadOnce(
  res: ServerResponse,
  status: number,
  contentType: string,
  contentLength: number,
): boolean {
  const head = localsOf(res).head;
  if (head === undefined) return false;
  if (status !== 200 || res.getHeaderNames().length !== 0) {
    flushHead(res);
    return false;
  }
  localsOf(res).head = undefined;
  const { pairs } = head;
  pairs.push("Content-Type", contentType, "Content-Length", contentLength);
  res.writeHead(status, pairs as unknown as string[]);
  return true;
}
