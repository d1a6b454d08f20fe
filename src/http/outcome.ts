import type { ServerResponse } from "node:http";
import type { UpstreamResponse } from "../backends/types";
import type { Refusal } from "../retrieval/outcome";
import { HttpProblem } from "./errors";
import { sendJson } from "./plain";

/** A refusal of the retrieval core as the problem+json error the error handler answers (403 / 400). */
export function refusalProblem(refusal: Refusal): HttpProblem {
  return new HttpProblem(refusal.code, refusal.detail);
}

/** An upstream's refusal of the caller's own request, sent as it came: status, content type and body. */
export function sendUpstream(res: ServerResponse, answer: UpstreamResponse): void {
  res.statusCode = answer.status;
  if (answer.contentType !== null) res.setHeader("content-type", answer.contentType);
  const body = Buffer.from(answer.body, "utf8");
  if (!res.hasHeader("content-type")) res.setHeader("content-type", "application/octet-stream");
  res.setHeader("content-length", body.length);
  if (res.req?.method === "HEAD" || answer.status === 204 || answer.status === 304) res.end();
  else res.end(body);
}

/**
 * JSON text already made (a cache hit's answer, `outcome.json`, or `JSON.stringify` of a payload), sent as
 * `res.json` sends its own serialization: `content-type: application/json; charset=utf-8`, `content-length`, the
 * text.
 */
export function sendJsonText(res: ServerResponse, json: string): void {
  sendJson(res, 200, json);
}
