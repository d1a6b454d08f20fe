/**
 * One canonical form of every request path, made once at the edge (src/http/app.ts) before anything routes it,
 * as Envoy's `normalize_path` and `merge_slashes` do (docs/request-lifecycle.md#at-the-edge-srchttp-srccompat):
 * the hot routes, Express's routes, the access log and the transparent proxy all see the same path, so no
 * spelling of a shaped route (`/api/v2/graph//search`, `/memory/quer%79`) slips past it to the proxy, whose
 * upstream would normalize it and answer raw.
 *
 *   - percent-escapes of unreserved characters (RFC 3986 §2.3: `A–Z a–z 0–9 - . _ ~`) are decoded, the others
 *     kept with upper-case hex (§6.2.2.1): `/memory/quer%79` → `/memory/query`, `%2f` → `%2F`;
 *   - runs of slashes are merged: `/api/v2//graph/search` → `/api/v2/graph/search`;
 *   - refused (400, `path: …`): a `;` (path parameters, which many upstream routers strip), a dot segment
 *     (`.`, `..`, also spelled `%2e`), a backslash, a malformed escape (`%zz`), a fragment (`#`).
 *
 * The query string is left as it came. An absolute-form target (`http://host/path`) keeps its scheme and
 * authority (the proxy refuses it; the routes match its path); `*` (OPTIONS) is left alone.
 */
import { HttpProblem } from "./errors";
import type { Middleware } from "./plain";

export type Canonical = { ok: true; target: string } | { ok: false; reason: string };

/** Anything that may make a path non-canonical; a path without any of these is returned as it is. */
const SUSPECT = /[%;\\#]|\/\/|\/\.(?:$|\/|\.(?:$|\/))/;
const ESCAPE = /%([0-9A-Fa-f]{2})/g;
const UNRESERVED = /^[A-Za-z0-9\-._~]$/;
const ABSOLUTE = /^[A-Za-z][A-Za-z0-9+.-]*:\/\/[^/?#]*/;

/** The canonical form of a path (no query), or why it is refused. */
export function canonicalPath(path: string): Canonical {
  if (!SUSPECT.test(path)) return { ok: true, target: path };
  if (path.includes("#"))
    return { ok: false, reason: "path: a fragment (#) is not part of a request target" };
  if (path.includes(";")) return { ok: false, reason: "path: ';' parameters are not allowed" };
  if (path.includes("\\")) return { ok: false, reason: "path: backslashes are not allowed" };
  if (/%(?![0-9A-Fa-f]{2})/.test(path)) return { ok: false, reason: "path: malformed percent-encoding" };
  const decoded = path.replace(ESCAPE, (_escape, hex: string) => {
    const char = String.fromCharCode(Number.parseInt(hex, 16));
    return UNRESERVED.test(char) ? char : `%${hex.toUpperCase()}`;
  });
  const merged = decoded.replace(/\/{2,}/g, "/");
  for (const segment of merged.split("/")) {
    if (segment === "." || segment === "..")
      return { ok: false, reason: "path: dot segments (. and ..) are not allowed" };
  }
  return { ok: true, target: merged };
}

/** The canonical form of a request target: its path canonical, its query as it came (see the top of this file). */
export function canonicalTarget(target: string): Canonical {
  if (target === "*") return { ok: true, target };
  const prefix = target.startsWith("/") ? "" : (ABSOLUTE.exec(target)?.[0] ?? "");
  const rest = target.slice(prefix.length);
  const q = rest.indexOf("?");
  const path = q === -1 ? rest : rest.slice(0, q);
  const query = q === -1 ? "" : rest.slice(q);
  if (query.includes("#"))
    return { ok: false, reason: "path: a fragment (#) is not part of a request target" };
  const canonical = canonicalPath(path);
  if (!canonical.ok || canonical.target === path) return canonical.ok ? { ok: true, target } : canonical;
  return { ok: true, target: `${prefix}${canonical.target}${query}` };
}

/** The edge step: `req.url` rewritten to its canonical form, or 400 naming the path. */
export function canonicalizePath(): Middleware {
  return function canonicalizePath(req, _res, next) {
    const target = req.url ?? "/";
    const canonical = canonicalTarget(target);
    if (!canonical.ok) return next(new HttpProblem("VALIDATION_FAILED", canonical.reason));
    if (canonical.target !== target) req.url = canonical.target;
    next();
  };
}
