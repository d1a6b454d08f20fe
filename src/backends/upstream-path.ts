/**
 * The one guard every upstream URL passes (docs/security-findings/10.md): no id and no path may step out of the
 * route it was put in. An id `..` in `/threads/{id}/context` makes `/threads/../context`, which the URL parser
 * (or the upstream) resolves to `/context`; `.`, `%2e`, `%252e` (decoded by an upstream that decodes twice) are
 * the same. Used by
 *   - the request parsers, to refuse such an id with 400 naming its field (`isDotSegmentId`);
 *   - every call that builds an upstream URL (the proxy's `joinUrl`, the Zep and OpenMemory adapters' calls,
 *     the Zep SDK's `user.get`): `upstreamUrl` / `unsafePathReason`, before the URL parser can resolve anything.
 */

/** A percent-encoded dot, slash or backslash left after one decoding: the segment was encoded twice. */
import { RecentCache } from "../pipeline/text/recent";

const ENCODED_AGAIN = /%(2e|2f|5c)/i;

/** Decoded up to three times (an upstream that decodes twice, and once more), stopping when malformed. */
function decodedForms(text: string): string[] {
  const forms = [text];
  let s = text;
  for (let i = 0; i < 3; i++) {
    try {
      const next = decodeURIComponent(s);
      if (next === s) break;
      forms.push(next);
      s = next;
    } catch {
      break;
    }
  }
  return forms;
}

/** Whether `id` is `.` or `..`, raw or percent-encoded (once or more), with or without trailing NULs or spaces. */
export function isDotSegmentId(id: string): boolean {
  return decodedForms(id).some((form) => /^\.{1,2}[\s\0]*$/.test(form));
}

/** What a field holding such an id is told: `user_id: must not be "." or ".." (…)`. */
export const DOT_ID_RULE = 'must not be "." or ".." (also percent-encoded): it would step out of its path';

/** Throws `problem(detail)` when `id` is a dot-segment id; the detail names `field`. */
export function refuseDotSegmentId(
  field: string,
  id: string | undefined,
  problem: (detail: string) => Error,
): void {
  if (id !== undefined && isDotSegmentId(id)) throw problem(`${field}: ${DOT_ID_RULE}`);
}

/**
 * Why `pathAndQuery` could step out of the route it is sent to (undefined: it cannot): not origin-form (`/…`), or
 * a path (before `?`) with a dot segment, a backslash, or a slash inside a segment — raw, percent-encoded
 * (`..%2f`, `%2e%2e`) or encoded twice (`%252e%252e`).
 */
export function unsafePathReason(pathAndQuery: string): string | undefined {
  if (!pathAndQuery.startsWith("/")) return "path: only an origin-form request target (/path) is allowed";
  const path = pathAndQuery.split("?", 1)[0] ?? "";
  for (const segment of path.split("/")) {
    let decoded: string;
    try {
      decoded = decodeURIComponent(segment);
    } catch {
      return "path: malformed percent-encoding";
    }
    if (isDotSegmentId(segment) || decoded.includes("\\"))
      return "path: dot segments and backslashes are not allowed";
    if (decoded.includes("/") || ENCODED_AGAIN.test(decoded))
      return "path: encoded slashes, dots and backslashes are not allowed";
  }
  return undefined;
}

/** Thrown when an upstream URL would leave its route; each caller maps it to its own failure. */
export class UnsafeUpstreamPathError extends Error {
  constructor(reason: string) {
    super(`unsafe upstream path (${reason})`);
    this.name = "UnsafeUpstreamPathError";
  }
}

/**
 * `base` (trailing slashes dropped) + `pathAndQuery`, after the guard; throws `UnsafeUpstreamPathError`. An id put
 * in the path with `encodeURIComponent` stays a dot segment when it is `.` or `..` (and `%2e` becomes `%252e`):
 * the guard sees both.
 */
export function upstreamUrl(base: string, pathAndQuery: string): string {
  const full = `${base}\n${pathAndQuery}`;
  let url = upstreamUrls.get(full);
  if (url === undefined) {
    const reason = unsafePathReason(pathAndQuery);
    if (reason !== undefined) throw new UnsafeUpstreamPathError(reason);
    url = `${base.replace(/\/+$/, "")}${pathAndQuery}`;
    upstreamUrls.set(full, url, url.length);
  }
  return url;
}

/**
 * Recent URLs that passed the guard (base + path → URL): a miss calls the same search URL every time, its path
 * is not split and decoded again each (a pure function of base and path; only safe ones are kept). Bounded.
 */
const upstreamUrls = new RecentCache<string>(1024, 1024 * 512);
