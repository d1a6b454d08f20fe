/**
 * API-key authentication (docs/api.md#authentication-and-scopes). The key is read from `Authorization: Bearer <key>`, `x-api-key: <key>` or
 * `Authorization: Api-Key <key>` (the Zep SDK's form); scheme names are case-insensitive. An ambiguous or malformed
 * presentation is refused rather than guessed at. The key never appears in an error detail or a log line.
 * This is the HTTP side: the key's shape and hash are src/tenants/keys.ts, its lookup the TenantDirectory's
 * `authenticate` (src/tenants/directory.ts).
 */
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from "node:http";
import { isWellFormedKey } from "../tenants/keys";
import type { Principal, Scope, TenantDirectory } from "../tenants/types";
import { HttpProblem } from "./errors";
import { localsOf, type Middleware } from "./plain";

const SCHEMES: ReadonlySet<string> = new Set(["bearer", "api-key"]);
const EXPECTED = `send "Authorization: Bearer <key>", "x-api-key: <key>" or "Authorization: Api-Key <key>"`;
/** RFC 9110 §11.6.1: a 401 says how to authenticate. */
const CHALLENGE = { "WWW-Authenticate": 'Bearer realm="memgate"' };

type Presented = { ok: true; key: string | undefined } | { ok: false; detail: string };

function unauthorized(detail: string): HttpProblem {
  return new HttpProblem("UNAUTHORIZED", detail, CHALLENGE);
}

/** Every value of a header (Node keeps only the first `Authorization` in `req.headers`). */
function valuesOf(req: IncomingMessage, name: keyof IncomingHttpHeaders & string): string[] {
  const distinct = req.headersDistinct?.[name];
  if (distinct !== undefined) return distinct;
  const value = req.headers[name];
  if (value === undefined) return [];
  return Array.isArray(value) ? value : [String(value)];
}

function fromAuthorization(value: string): Presented {
  const trimmed = value.trim();
  const space = trimmed.search(/[ \t]/);
  if (space < 0) return { ok: false, detail: `malformed Authorization header: ${EXPECTED}` };
  const scheme = trimmed.slice(0, space).toLowerCase();
  const key = trimmed.slice(space).trim();
  if (!SCHEMES.has(scheme)) return { ok: false, detail: `unsupported Authorization scheme: ${EXPECTED}` };
  if (!isWellFormedKey(key))
    return { ok: false, detail: `malformed key in the Authorization header: ${EXPECTED}` };
  return { ok: true, key };
}

/** The key the request presents (undefined: none), or why the presentation is refused. */
export function presentedKey(req: IncomingMessage): Presented {
  const authorization = valuesOf(req, "authorization");
  const xApiKey = valuesOf(req, "x-api-key");
  if (authorization.length > 1) return { ok: false, detail: "more than one Authorization header" };
  if (xApiKey.length > 1) return { ok: false, detail: "more than one x-api-key header" };

  let fromHeader: string | undefined;
  const [auth] = authorization;
  if (auth !== undefined) {
    const parsed = fromAuthorization(auth);
    if (!parsed.ok) return parsed;
    fromHeader = parsed.key;
  }
  const [x] = xApiKey;
  if (x !== undefined) {
    const key = x.trim();
    if (!isWellFormedKey(key)) return { ok: false, detail: `malformed x-api-key header: ${EXPECTED}` };
    if (fromHeader !== undefined && fromHeader !== key) {
      return { ok: false, detail: "the Authorization and x-api-key headers carry different keys: send one" };
    }
    fromHeader = key;
  }
  return { ok: true, key: fromHeader };
}

/**
 * The caller of a request, from the directory: 401 (thrown) for a missing (with a tenants file), unknown or
 * malformed key. In dev mode any well-formed key, or none, yields the `dev` principal.
 */
export function authenticateRequest(directory: TenantDirectory, req: IncomingMessage): Principal {
  const presented = presentedKey(req);
  if (!presented.ok) throw unauthorized(presented.detail);
  const principal = directory.authenticate(presented.key);
  if (principal === null)
    throw unauthorized(presented.key === undefined ? `missing API key: ${EXPECTED}` : "unknown API key");
  return principal;
}

/** 403 (thrown) unless the principal has `scope`. */
export function checkScope(principal: Principal, scope: Scope): void {
  if (!principal.scopes.has(scope)) throw new HttpProblem("FORBIDDEN", `this key lacks the '${scope}' scope`);
}

/** `authenticateRequest` as a step: sets the request's `principal` (`res.locals.principal`). */
export function authenticate(directory: TenantDirectory): Middleware {
  return function authenticate(req, res, next) {
    localsOf(res).principal = authenticateRequest(directory, req);
    next();
  };
}

/** 403 unless the authenticated key has `scope`. Mount after `authenticate()`. */
export function requireScope(scope: Scope): Middleware {
  return function requireScope(_req, res, next) {
    checkScope(principalOf(res), scope);
    next();
  };
}

/** The caller of an authenticated request (throws when `authenticate()` did not run: a wiring bug). */
export function principalOf(res: ServerResponse): Principal {
  const principal = localsOf(res).principal;
  if (principal === undefined) throw new HttpProblem("INTERNAL", "the request was not authenticated");
  return principal;
}
