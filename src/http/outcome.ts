import type { Response } from "express";
import type { UpstreamResponse } from "../backends/types";
import type { Refusal } from "../retrieval/outcome";
import { HttpProblem } from "./errors";

/** A refusal of the retrieval core as the problem+json error the error handler answers (403 / 400). */
export function refusalProblem(refusal: Refusal): HttpProblem {
  return new HttpProblem(refusal.code, refusal.detail);
}

/** An upstream's refusal of the caller's own request, sent as it came: status, content type and body. */
export function sendUpstream(res: Response, answer: UpstreamResponse): void {
  res.status(answer.status);
  if (answer.contentType !== null) res.setHeader("content-type", answer.contentType);
  res.send(Buffer.from(answer.body, "utf8"));
}

/**
 * JSON text already made (a cache hit's answer, `outcome.json`), sent as `res.json` sends its own serialization:
 * the same `content-type: application/json; charset=utf-8` (`res.send` adds the charset), `content-length` and
 * body.
 */
export function sendJsonText(res: Response, json: string): void {
  if (!res.get("Content-Type")) res.set("Content-Type", "application/json");
  res.send(json);
}
