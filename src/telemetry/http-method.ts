/**
 * `http.request.method` as the HTTP semantic conventions name it, for memgate's server span (./http-server.ts) and
 * its client spans (./http-client.ts): a method they know as it is, any other as `_OTHER` (the span then carries
 * `http.request.method_original`).
 */
const KNOWN_METHODS: ReadonlySet<string> = new Set([
  "CONNECT",
  "DELETE",
  "GET",
  "HEAD",
  "OPTIONS",
  "PATCH",
  "POST",
  "PUT",
  "TRACE",
  "QUERY",
]);

export function semconvMethod(method: string): string {
  return KNOWN_METHODS.has(method) ? method : "_OTHER";
}
