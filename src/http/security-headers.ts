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
