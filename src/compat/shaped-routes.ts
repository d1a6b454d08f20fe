/**
 * The doors' shaped routes, as the transparent proxy must never forward them (docs/adopting.md#the-proxy).
 *
 * The edge makes every path canonical before routing (src/http/canonical-path.ts), so a shaped route's own
 * spellings reach its route. What still reaches the proxy could be read as a shaped route by a more lenient
 * upstream router: one that decodes `%3B` and drops `;params`, decodes `%2F` into a separator, decodes twice,
 * ignores case or trailing slashes. `refuseShapedAlias` reads the path that way and refuses (400) a request the
 * upstream could answer as a shaped route with the same method: shaped data never leaves unshaped, whatever
 * the upstream's router does. Other methods on those paths are forwarded (OpenMemory's `GET /memory/{id}` of an
 * id `query` is not a search).
 */
import { HttpProblem } from "../http/errors";

interface ShapedRoute {
  /** The methods the route shapes (HEAD counts as GET). */
  methods: readonly string[];
  /** The lenient reading of the path (lower case, no trailing slash). */
  pattern: RegExp;
  /** For the message: `POST /api/v2/graph/search`. */
  name: string;
}

const SHAPED: readonly ShapedRoute[] = [
  { methods: ["POST"], pattern: /^\/api\/v2\/graph\/search$/, name: "POST /api/v2/graph/search" },
  {
    methods: ["GET"],
    pattern: /^\/api\/v2\/threads\/[^/]+\/context$/,
    name: "GET /api/v2/threads/{threadId}/context",
  },
  {
    methods: ["POST"],
    pattern: /^\/api\/v2\/threads\/[^/]+\/messages$/,
    name: "POST /api/v2/threads/{threadId}/messages",
  },
  { methods: ["POST"], pattern: /^\/memory\/query$/, name: "POST /memory/query" },
];

/** At most this many rounds of percent-decoding (an upstream that decodes twice, and one more). */
const DECODE_ROUNDS = 3;

function decodeLeniently(text: string): string {
  let s = text;
  for (let i = 0; i < DECODE_ROUNDS; i++) {
    let next: string;
    try {
      next = decodeURIComponent(s);
    } catch {
      return s;
    }
    if (next === s) return s;
    s = next;
  }
  return s;
}

/**
 * The path as the most lenient upstream router would read it: decoded until stable, `\` as `/`, `;…` dropped
 * from every segment, empty and `.` segments dropped, `..` resolved, lower case.
 */
export function lenientPath(pathAndQuery: string): string {
  const end = pathAndQuery.search(/[?#]/);
  const path = end === -1 ? pathAndQuery : pathAndQuery.slice(0, end);
  const out: string[] = [];
  for (const raw of path.split("/")) {
    const decoded = decodeLeniently(raw.split(";")[0] ?? "").replaceAll("\\", "/");
    for (const part of decoded.split("/")) {
      const segment = (part.split(";")[0] ?? "").toLowerCase();
      if (segment === "" || segment === ".") continue;
      if (segment === "..") out.pop();
      else out.push(segment);
    }
  }
  return `/${out.join("/")}`;
}

/** Throws a 400 when `method pathAndQuery` (the gateway's own path, e.g. `/api/v2/…`) could be read as a shaped route. */
export function refuseShapedAlias(method: string, pathAndQuery: string): void {
  const asked = method.toUpperCase() === "HEAD" ? "GET" : method.toUpperCase();
  const path = lenientPath(pathAndQuery);
  const route = SHAPED.find((r) => r.methods.includes(asked) && r.pattern.test(path));
  if (route === undefined) return;
  throw new HttpProblem(
    "VALIDATION_FAILED",
    `path: reads as the shaped route ${route.name}; send it in its canonical form (the proxy does not forward it)`,
  );
}
