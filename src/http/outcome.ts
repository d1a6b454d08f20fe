import type { ServerResponse } from "node:http";
import type { UpstreamResponse } from "../backends/types";
import type { Refusal } from "../retrieval/outcome";
import { HttpProblem } from "./errors";
import { sendBody } from "./plain";

/** A refusal of the retrieval core as the problem+json error the error handler answers (403 / 400). */
export function refusalProblem(refusal: Refusal): HttpProblem {
  return new HttpProblem(refusal.code, refusal.detail);
}

/** An upstream's refusal of the caller's own request, sent as it came: status, content type and body. */
export function sendUpstream(res: ServerResponse, answer: UpstreamResponse): void {
  sendBody(res, answer.status, Buffer.from(answer.body, "utf8"), answer.contentType ?? undefined);
}
