/**
 * One buffered JSON exchange with a tenant's upstream, for the shaped compat routes (the transparent routes
 * stream through ./proxy.ts instead). The caller's credentials never come here: the route passes the tenant's.
 *
 * How an answer is judged on a shaped route (a failing backend never yields a 5xx there, CONTRACT §2–3):
 *
 * | upstream answer                                   | verdict                                              |
 * |---------------------------------------------------|------------------------------------------------------|
 * | 2xx with a JSON body                              | `ok`: shape it                                        |
 * | 400, 413, 414, 422 (the caller's request refused) | `pass`: status, content type and body passed through |
 * | 404 (Zep: unknown user/thread; OpenMemory: JSON)  | fallback `COLLECTION_NOT_FOUND`                      |
 * | 429, OpenMemory's "N active queries" 500          | fallback `RATE_LIMITED`                              |
 * | anything else: 401/403 (the operator's key), 5xx, | fallback `ZEP_UNAVAILABLE` / `OPENMEMORY_UNAVAILABLE` |
 * |   a 2xx that is not JSON, timeout, network error  |                                                      |
 */
import type { Response } from "express";
import { BodyTooLargeError, readResponseText } from "../backends/body";
import { errorFromResponse } from "../backends/openmemory/errors";
import type { BackendErrorKind } from "../backends/types";
import type { FallbackCode } from "../policy/schema";

export type UpstreamName = "zep" | "openmemory";

export interface UpstreamCall {
  url: string;
  method: "GET" | "POST";
  headers: Record<string, string>;
  body?: string;
  signal: AbortSignal;
}

export type UpstreamAnswer =
  | { kind: "response"; status: number; contentType: string | null; text: string }
  | { kind: "failed"; reason: "timeout" | "network error" | "answer too large" };

export type Verdict =
  | { kind: "ok"; json: unknown }
  | { kind: "pass" }
  | { kind: "fallback"; code: FallbackCode; detail: string };

const UNAVAILABLE: Record<UpstreamName, FallbackCode> = {
  zep: "ZEP_UNAVAILABLE",
  openmemory: "OPENMEMORY_UNAVAILABLE",
};

/** Never throws. Redirects are refused: following one would hand the tenant's key to wherever it points. */
export async function callUpstream(call: UpstreamCall): Promise<UpstreamAnswer> {
  try {
    const res = await fetch(call.url, {
      method: call.method,
      headers: call.headers,
      body: call.body,
      signal: call.signal,
      redirect: "error",
    });
    const text = await readResponseText(res);
    return { kind: "response", status: res.status, contentType: res.headers.get("content-type"), text };
  } catch (err) {
    if (err instanceof BodyTooLargeError) return { kind: "failed", reason: "answer too large" };
    return { kind: "failed", reason: call.signal.aborted ? "timeout" : "network error" };
  }
}

function zepKind(status: number): BackendErrorKind {
  if (status === 404) return "not_found";
  if (status === 429) return "rate_limited";
  if (status === 400 || status === 413 || status === 414 || status === 422) return "invalid_query";
  return "unavailable";
}

function parseJson(text: string): { ok: true; value: unknown } | { ok: false } {
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch {
    return { ok: false };
  }
}

/** The verdict on an answer (see the table at the top of this file). */
export function judge(answer: UpstreamAnswer, upstream: UpstreamName): Verdict {
  const unavailable = (detail: string): Verdict => ({
    kind: "fallback",
    code: UNAVAILABLE[upstream],
    detail,
  });
  if (answer.kind === "failed") return unavailable(answer.reason);
  const { status, text } = answer;
  if (status >= 200 && status < 300) {
    const parsed = parseJson(text);
    return parsed.ok
      ? { kind: "ok", json: parsed.value }
      : unavailable(`HTTP ${status} with a non-JSON body`);
  }
  const kind =
    upstream === "zep" ? zepKind(status) : errorFromResponse("query", status, text, new Headers()).kind;
  switch (kind) {
    case "invalid_query":
      return { kind: "pass" };
    case "not_found":
      return { kind: "fallback", code: "COLLECTION_NOT_FOUND", detail: `HTTP ${status}` };
    case "rate_limited":
      return { kind: "fallback", code: "RATE_LIMITED", detail: `HTTP ${status}` };
    case "unavailable":
      return unavailable(`HTTP ${status}`);
  }
}

/** Sends an upstream answer as it came: status, content type and body. */
export function passThrough(res: Response, answer: UpstreamAnswer): void {
  if (answer.kind !== "response") return;
  res.status(answer.status);
  if (answer.contentType !== null) res.setHeader("content-type", answer.contentType);
  res.send(Buffer.from(answer.text, "utf8"));
}

export function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}
