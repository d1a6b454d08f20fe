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
