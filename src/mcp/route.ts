/**
 * POST /mcp: the MCP server (Streamable HTTP, stateless: the SDK's own transport, one server and transport per
 * request, as in the SDK's stateless example) behind /v1's guards — a memgate key (`Authorization: Bearer`, or
 * any key in dev mode), the key's limit, scope `retrieve`, a JSON body of at most 64 KiB. GET and DELETE /mcp
 * (a session's event stream and its end) answer 405: there are no sessions.
 */
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import type { RequestHandler } from "express";
import { HttpProblem } from "../http/errors";
import { guardedRoute, type HotRoute } from "../http/hot";
import type { KeyLimits } from "../http/rate-limit";
import type { RetrievalService } from "../retrieval/service";
import type { TenantDirectory } from "../tenants/types";
import { memoryToolServer } from "./tools";

export const MCP_PATH = "/mcp";

export function mcpRoute(deps: {
  tenants: TenantDirectory;
  retrieval: RetrievalService;
  keyLimits?: KeyLimits;
}): HotRoute {
  const route = { path: MCP_PATH, scope: "retrieve", bodyLimit: "64kb" } as const;
  return guardedRoute(deps, route, async function mcp(req, res, { principal, body }) {
    const server = memoryToolServer(deps.retrieval, principal);
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: undefined,
      enableJsonResponse: true,
    });
    res.on("close", () => {
      void transport.close();
      void server.close();
    });
    await server.connect(transport);
    await transport.handleRequest(req, res, body);
  });
}

/** GET / DELETE /mcp: 405 with `Allow: POST` (stateless server: no event stream, no session to end). */
export function mcpMethodNotAllowed(): RequestHandler {
  return function mcpMethodNotAllowed(req, _res, next) {
    if (req.path !== MCP_PATH || req.method === "POST") return next();
    next(
      new HttpProblem("METHOD_NOT_ALLOWED", "/mcp: use POST (stateless Streamable HTTP)", { allow: "POST" }),
    );
  };
}
