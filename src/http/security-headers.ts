import type { RequestHandler } from "express";
import helmet from "helmet";

/**
 * Secure response headers (helmet) on every answer, errors included. memgate serves JSON only, so the content
 * security policy is the strictest one — nothing may load, nothing may frame it — instead of helmet's HTML default.
 * The rest are helmet's defaults: `X-Content-Type-Options: nosniff`, `Referrer-Policy: no-referrer`,
 * `Cross-Origin-Resource-Policy: same-origin`, `Strict-Transport-Security` (honoured by browsers only over TLS,
 * i.e. behind a TLS-terminating proxy), `X-Frame-Options: DENY`, …
 */
export function securityHeaders(): RequestHandler {
  return helmet({
    contentSecurityPolicy: {
      useDefaults: false,
      directives: { defaultSrc: ["'none'"], frameAncestors: ["'none'"] },
    },
    frameguard: { action: "deny" },
  });
}

/**
 * The playground page (/ui, src/http/routes/playground.ts) loads its own script and style sheet and calls the API
 * of the same origin — nothing else: no inline script or style, no eval, no other origin (it works offline), no
 * plugins, no forms posted anywhere, never framed. Mounted on /ui only; every other route keeps the policy above.
 */
export function uiSecurityHeaders(): RequestHandler {
  return helmet({
    contentSecurityPolicy: {
      useDefaults: false,
      directives: {
        defaultSrc: ["'none'"],
        scriptSrc: ["'self'"],
        styleSrc: ["'self'"],
        imgSrc: ["'self'"],
        connectSrc: ["'self'"],
        baseUri: ["'none'"],
        formAction: ["'none'"],
        frameAncestors: ["'none'"],
      },
    },
    frameguard: { action: "deny" },
  });
}
