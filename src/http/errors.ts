/**
 * One error-code enum, one code→status map, one problem+json shape (docs/api.md#errors). Only the caller's own faults
 * produce non-200 answers; a failing backend, Redis or policy stage produces a fallback instead.
 */

export const ERROR_CODES = [
  "MALFORMED_JSON",
  "VALIDATION_FAILED",
  "UNAUTHORIZED",
  "FORBIDDEN",
  "NOT_FOUND",
  "METHOD_NOT_ALLOWED",
  "PAYLOAD_TOO_LARGE",
  "UNSUPPORTED_MEDIA_TYPE",
  "RATE_LIMITED",
  "SHUTTING_DOWN",
  "INTERNAL",
  // Transparent proxy routes only (src/compat/proxy.ts): the upstream could not be reached / did not answer.
  "UPSTREAM_UNREACHABLE",
  "UPSTREAM_TIMEOUT",
] as const;
export type ErrorCode = (typeof ERROR_CODES)[number];

export const STATUS_OF: Record<ErrorCode, number> = {
  MALFORMED_JSON: 400,
  VALIDATION_FAILED: 400,
  UNAUTHORIZED: 401,
  FORBIDDEN: 403,
  NOT_FOUND: 404,
  METHOD_NOT_ALLOWED: 405,
  PAYLOAD_TOO_LARGE: 413,
  UNSUPPORTED_MEDIA_TYPE: 415,
  RATE_LIMITED: 429,
  SHUTTING_DOWN: 503,
  INTERNAL: 500,
  UPSTREAM_UNREACHABLE: 502,
  UPSTREAM_TIMEOUT: 504,
};

const TITLE_OF: Record<ErrorCode, string> = {
  MALFORMED_JSON: "Malformed JSON",
  VALIDATION_FAILED: "Invalid request",
  UNAUTHORIZED: "Unauthorized",
  FORBIDDEN: "Forbidden",
  NOT_FOUND: "Not found",
  METHOD_NOT_ALLOWED: "Method not allowed",
  PAYLOAD_TOO_LARGE: "Payload too large",
  UNSUPPORTED_MEDIA_TYPE: "Unsupported media type",
  RATE_LIMITED: "Too many requests",
  SHUTTING_DOWN: "Shutting down",
  INTERNAL: "Internal error",
  UPSTREAM_UNREACHABLE: "Bad gateway",
  UPSTREAM_TIMEOUT: "Gateway timeout",
};

/** RFC 9457 problem details, plus memgate's `code` and `requestId`. */
export interface Problem {
  type: string;
  title: string;
  status: number;
  detail: string;
  code: ErrorCode;
  requestId: string;
}

/** Thrown (or passed to `next`) by middleware and routes; the error handler answers it. */
export class HttpProblem extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  /** Extra response headers (e.g. Retry-After). */
  readonly headers: Record<string, string>;

  constructor(code: ErrorCode, detail: string, headers: Record<string, string> = {}) {
    super(detail);
    this.name = "HttpProblem";
    this.code = code;
    this.status = STATUS_OF[code];
    this.headers = headers;
  }
}

export function toProblem(code: ErrorCode, detail: string, requestId: string): Problem {
  return {
    type: `https://memgate.dev/problems/${code.toLowerCase().replaceAll("_", "-")}`,
    title: TITLE_OF[code],
    status: STATUS_OF[code],
    detail,
    code,
    requestId,
  };
}

export const PROBLEM_CONTENT_TYPE = "application/problem+json; charset=utf-8";
