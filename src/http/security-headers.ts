import type { IncomingMessage, ServerResponse } from "node:http";
import helmet, { type HelmetOptions } from "helmet";
import type { Middleware } from "./plain";

type Helmet = ReturnType<typeof helmet>;

/** What a helmet middleware does to a response: the headers it removes, then the headers it sets, in order. */
export interface RecordedHeaders {
  removed: readonly string[];
  set: ReadonlyArray<readonly [string, string | number | readonly string[]]>;
}

/**
 * What a helmet middleware does to a response, learnt once by running it on a recording response: the headers it
 * sets and removes. Its options here have no per-request part (no nonce, no function directive), so every answer
 * gets the same list; applying the list is one short loop instead of helmet's chain of a dozen middlewares
 * (≈ 2 % of a cache hit's CPU), or, on a hot answer, part of one `writeHead` (./head.ts).
 */
function record(middleware: Helmet): RecordedHeaders {
  const set: [string, string | number | readonly string[]][] = [];
  const removed: string[] = [];
  const recorder = {
    setHeader(name: string, value: string | number | readonly string[]) {
      set.push([name, value]);
      return recorder;
    },
    removeHeader(name: string) {
      removed.push(name);
    },
  };
  let synchronous = false;
  middleware({} as IncomingMessage, recorder as unknown as ServerResponse, (err?: unknown) => {
    if (err !== undefined) throw err;
    synchronous = true;
  });
  if (!synchronous) throw new Error("helmet did not finish synchronously: its headers cannot be recorded");
  return { removed, set };
}

function recorded(middleware: Helmet): Middleware {
  const { removed, set } = record(middleware);
  return function securityHeaders(_req, res, next) {
    for (const name of removed) res.removeHeader(name);
    for (const [name, value] of set) res.setHeader(name, value);
    next();
  };
}

/**
 * Secure response headers (helmet) on every answer, errors included. memgate serves JSON only, so the content
 * security policy is the strictest one — nothing may load, nothing may frame it — instead of helmet's HTML default.
 * The rest are helmet's defaults: `X-Content-Type-Options: nosniff`, `Referrer-Policy: no-referrer`,
 * `Cross-Origin-Resource-Policy: same-origin`, `Strict-Transport-Security` (honoured by browsers only over TLS,
 * i.e. behind a TLS-terminating proxy), `X-Frame-Options: DENY`, …
 */
export const API_HELMET: HelmetOptions = {
  contentSecurityPolicy: {
    useDefaults: false,
    directives: { defaultSrc: ["'none'"], frameAncestors: ["'none'"] },
  },
  frameguard: { action: "deny" },
};

export function securityHeaders(): Middleware {
  return recorded(helmet(API_HELMET));
}

/** The API's secure headers as `securityHeaders()` sets them (the edge sets them aside for one `writeHead`: ./head.ts). */
export function apiSecurityHeaderList(): RecordedHeaders {
  return record(helmet(API_HELMET));
}

/**
 * The playground page (/ui, src/http/routes/playground.ts) loads its own script and style sheet and calls the API
 * of the same origin — nothing else: no inline script or style, no eval, no other origin (it works offline), no
 * plugins, no forms posted anywhere, never framed. Mounted on /ui only; every other route keeps the policy above.
 */
export const UI_HELMET: HelmetOptions = {
  contentSecurityPolicy: {
    useDefaults: false,
    directives: {
      defaultSrc: ["'none'"],
      scriptSrc: ["'self'"],
      styleSrc: ["'self'"],
      // data: for the eval's chart, an SVG the page shows as an <img> (an image runs no script, loads nothing).
      imgSrc: ["'self'", "data:"],
      connectSrc: ["'self'"],
      baseUri: ["'none'"],
      formAction: ["'none'"],
      frameAncestors: ["'none'"],
    },
  },
  frameguard: { action: "deny" },
};

export function uiSecurityHeaders(): Middleware {
  return recorded(helmet(UI_HELMET));
}
