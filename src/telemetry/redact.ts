/**
 * What telemetry may say about a request without leaking it (docs/api.md#privacy): user ids only as hashes, URL paths
 * only as templates, query strings only as parameter names.
 */
import { createHmac, randomBytes } from "node:crypto";
import { RecentCache } from "../pipeline/text/recent";

/**
 * Path segments known to be fixed words of the gateway's, Zep's or OpenMemory's routes. Any other segment may be
 * an id (Zep's `GET /users/{userId}`, OpenMemory's `/users/{uid}/memories`, a proxied thread id) and is shown as
 * `{id}`: an allow-list, so a new route can lose detail but never leak an id.
 */
const FIXED_SEGMENTS = new Set([
  "api",
  "v1",
  "v2",
  "retrieve",
  "policies",
  "healthz",
  "readyz",
  "metrics",
  "graph",
  "search",
  "users",
  "threads",
  "sessions",
  "messages",
  "context",
  "warm",
  "episodes",
  "nodes",
  "edges",
  "facts",
  "memory",
  "memories",
  "query",
  "add",
  "all",
  "reinforce",
  "health",
]);

/** The gateway's own routes and the backends' hot ones: returned as they are, without splitting (every request). */
const FIXED_PATHS = new Set([
  "/v1/retrieve",
  "/v1/policies",
  "/healthz",
  "/readyz",
  "/metrics",
  "/memory/query",
  // The policy playground (its API and its page's files): readable in the access log, never `/v1/{id}/{id}`.
  "/v1/playground",
  "/v1/playground/validate",
  "/v1/playground/compare",
  "/v1/playground/eval",
  "/ui",
  "/ui/",
  "/ui/app.js",
  "/ui/wire.js",
  "/ui/style.css",
  "/ui/favicon.svg",
  "/ui/mode",
]);

/** `/api/v2/users/u-123/warm` → `/api/v2/users/{id}/warm`. */
export function safePath(path: string): string {
  if (FIXED_PATHS.has(path)) return path;
  const end = path.search(/[?#]/);
  const bare = end === -1 ? path : path.slice(0, end);
  return bare
    .split("/")
    .map((segment) => (segment === "" || FIXED_SEGMENTS.has(segment) ? segment : "{id}"))
    .join("/");
}

/** A request target split at its `?`: `/users/u-1?x=1` → `{ path: "/users/u-1", search: "?x=1" }`. */
export function splitUrl(url: string): { path: string; search: string } {
  const q = url.indexOf("?");
  return q === -1 ? { path: url, search: "" } : { path: url.slice(0, q), search: url.slice(q) };
}

/** `?l=10&user_id=u-1` → `l=REDACTED&user_id=REDACTED` (names kept, values never shown); "" without a query. */
export function safeQuery(search: string): string {
  const raw = search.startsWith("?") ? search.slice(1) : search;
  if (raw === "") return "";
  const names = [...new URLSearchParams(raw).keys()];
  return names.map((name) => `${encodeURIComponent(name)}=REDACTED`).join("&");
}

/** `http://h:1/users/u-1?x=1` → `http://h:1/users/{id}?x=REDACTED`; unparseable input → "". */
export function safeUrl(url: string): string {
  try {
    const u = new URL(url);
    const query = safeQuery(u.search);
    return `${u.origin}${safePath(u.pathname)}${query === "" ? "" : `?${query}`}`;
  } catch {
    return "";
  }
}

/** A random key per process: the hash when no `MEMGATE_USER_HASH_KEY` is configured. */
const PROCESS_KEY = randomBytes(32);
let userHashKey: Buffer | string = PROCESS_KEY;

/**
 * Sets the key of `hashUser`: the configured `MEMGATE_USER_HASH_KEY` (the same on every replica, so a user's
 * requests group fleet-wide), or, unset, this process's random key. Called at boot (src/server/services.ts).
 */
export function configureUserHash(key: string | undefined): void {
  userHashKey = key ?? PROCESS_KEY;
  userHashes.clear();
}

/** Recent users' hashes (`tenant:userId` → hash), so a user's every turn is not one more HMAC; bounded (RecentCache). */
const userHashes = new RecentCache<string>(4096, 4096 * 256);

/**
 * The user as telemetry shows it: the first 16 hex of HMAC-SHA256 over `tenant:userId` under a key
 * (`configureUserHash`). Stable per tenant and key (so one user's requests can be grouped); without the key it
 * cannot be found back by hashing a dictionary of likely ids (e-mail addresses, phone numbers), which an
 * unkeyed hash could (issue 26, finding 13).
 */
export function hashUser(tenantId: string, userId: string): string {
  const subject = `${tenantId}:${userId}`;
  let hash = userHashes.get(subject);
  if (hash === undefined) {
    hash = createHmac("sha256", userHashKey).update(subject).digest("hex").slice(0, 16);
    userHashes.set(subject, hash, hash.length);
  }
  return hash;
}
